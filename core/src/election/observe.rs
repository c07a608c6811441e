//! Observing an election ([`Observer`]): every change of leader, in order, woken
//! only by what can change it. A new leader announces itself on the leader channel
//! (announce.rs): its announcement is the change, no read needed. A release
//! publishes on the lock's channel and an expiry publishes nothing, so a message
//! there, a gap in the subscription, or the current leader's lease end (a timer)
//! makes the observer read the lock (leader.rs). While a leader renews its hold the
//! observer reads once per lease; while nobody leads it sends nothing at all.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::mpsc;

use super::leader::{self, announced, Leader};
use crate::ctx::Alive;
use crate::error::{Error, Result};
use crate::names::LockNames;
use crate::waiting::{Heard, Listener};

/// The leadership changes of one election, from [`crate::Election::observe`]:
/// [`Observer::next`] tells who leads now, then each change (a new leader, or
/// nobody), in the order they happened. Terms told only grow. A leadership that
/// begins and ends within one read of the lock by the observer is still told (its
/// announcement is), unless its candidate's announcement failed.
///
/// Subscribed from the start: changes that happen while nobody calls
/// [`Observer::next`] wait for it. Dropping the observer leaves the channels. It
/// keeps the client up, as a lock handle does.
pub struct Observer {
    alive: Arc<Alive>,
    names: LockNames,
    leader_channel: Vec<u8>,
    heard: mpsc::UnboundedReceiver<Heard>,
    _listener: Listener,
    /// The leader last told, as (term, owner), `None` for nobody; unset before the first.
    told: Option<Option<(u64, String)>>,
    /// The highest term told.
    term: u64,
    /// The lock must be read before the next change can be told.
    stale: bool,
    /// When the current leader's lease ends unless it renews it: read again then.
    lease_end: Option<Instant>,
    changes: VecDeque<Option<Leader>>,
}

impl std::fmt::Debug for Observer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Observer").field("election", &self.names.display()).field("term", &self.term).finish_non_exhaustive()
    }
}

impl Observer {
    pub(super) async fn start(alive: Arc<Alive>, name: &[u8]) -> Result<Observer> {
        let ctx = &alive.0;
        ctx.conn()?;
        let names = LockNames::new(name);
        let leader_channel = names.leader_channel();
        // Subscribed before the first read: nothing that follows it goes unheard.
        let (listener, heard) = ctx.hub.listen(&[names.channel(), leader_channel.clone()]).await;
        Ok(Observer {
            alive: alive.clone(),
            names,
            leader_channel,
            heard,
            _listener: listener,
            told: None,
            term: 0,
            stale: true,
            lease_end: None,
            changes: VecDeque::new(),
        })
    }

    /// The next change: who leads from now on, `None` when nobody does (the first
    /// call: who leads now). Waits as long as it takes; `ClientClosed` once the
    /// client is closed. Cancel-safe: a dropped call loses no change.
    pub async fn next(&mut self) -> Result<Option<Leader>> {
        let ctx = self.alive.0.clone();
        let mut shutdown = ctx.shutdown.subscribe();
        loop {
            if let Some(change) = self.changes.pop_front() {
                return Ok(change);
            }
            if *shutdown.borrow() {
                return Err(Error::shut_down());
            }
            while let Ok(heard) = self.heard.try_recv() {
                self.hear(heard);
            }
            if !self.changes.is_empty() {
                continue;
            }
            if self.stale {
                let (now, latest) = leader::read_state(&ctx, &self.names.name).await?;
                self.apply_read(now, latest);
                continue;
            }
            let lease_end = self.lease_end;
            let expiry = async move {
                match lease_end {
                    // Redis expires the key by its own clock: a millisecond after, it is gone.
                    Some(at) => tokio::time::sleep_until((at + std::time::Duration::from_millis(1)).into()).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                heard = self.heard.recv() => match heard {
                    Some(heard) => self.hear(heard),
                    None => return Err(Error::shut_down()),
                },
                _ = expiry => self.stale = true,
                _ = shutdown.wait_for(|down| *down) => return Err(Error::shut_down()),
            }
        }
    }

    /// The highest term told so far (0 before any leader was).
    pub fn term(&self) -> u64 {
        self.term
    }

    /// An announcement is a change; anything else (a release, a gap) needs a read.
    fn hear(&mut self, heard: Heard) {
        match self.announcement(heard) {
            Some(Some(leader)) => self.announced(leader),
            Some(None) => {}
            None => self.stale = true,
        }
    }

    /// A new leader's announcement: told unless a later term was (every campaign
    /// that wins takes a new term, so an older or equal one is past).
    fn announced(&mut self, leader: Leader) {
        if leader.term > self.term {
            self.seen(Some(leader));
        }
    }

    /// `Some(leader)` for a message on the leader channel (`Some(None)`: not an
    /// announcement); `None` for anything else.
    fn announcement(&self, heard: Heard) -> Option<Option<Leader>> {
        match heard {
            Heard::Message(channel, payload) if channel == self.leader_channel => Some(announced(&payload)),
            _ => None,
        }
    }

    /// A read of the lock found `now` leading (the latest term `latest`). What was
    /// heard while it was under way goes in order around it: an announcement of a
    /// term up to `latest` was made before the read, a later one after it; a release
    /// or gap may have come after it, so it takes another read.
    fn apply_read(&mut self, now: Option<Leader>, latest: u64) {
        self.stale = false;
        let mut after = Vec::new();
        while let Ok(heard) = self.heard.try_recv() {
            match self.announcement(heard) {
                Some(Some(leader)) if leader.term <= latest => self.announced(leader),
                Some(Some(leader)) => after.push(leader),
                Some(None) => {}
                None => self.stale = true,
            }
        }
        self.seen(now);
        for leader in after {
            self.announced(leader);
        }
    }

    /// Tells `leader` unless it was told already (or is older than what was): a
    /// read's leader may keep the term told (a Redisson `RLock` takes no token).
    fn seen(&mut self, leader: Option<Leader>) {
        let Some(leader) = leader else {
            self.lease_end = None;
            if self.told != Some(None) {
                self.told = Some(None);
                self.changes.push_back(None);
            }
            return;
        };
        if leader.term < self.term {
            return;
        }
        self.lease_end = leader.lease_left.map(|left| Instant::now() + left);
        let who = Some((leader.term, leader.holder.owner.clone()));
        if self.told.as_ref() == Some(&who) {
            return;
        }
        self.term = leader.term;
        self.told = Some(who);
        self.changes.push_back(Some(leader));
    }
}
