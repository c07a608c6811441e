//! Multi-locks: one lock over several single locks (its members), usually one
//! name on N independent Redis masters, each member an ordinary RLock on its own
//! client (Redisson's wire protocol, so Redisson's `RedissonMultiLock` and
//! `RedissonRedLock` over the same names exclude ours). Not a topology.
//!
//! Acquire: members in order, each with the remaining wait (all) or the remaining
//! wait / N (majority, as Redisson), at least 1 ms; a member that is busy waits on
//! its own channel, so the waiter listens to the first busy member. A round that
//! falls short releases what it took and, while time remains, tries again after a
//! random pause. A hold is valid for `lease - elapsed - drift`; none left means
//! not acquired. A member that answers later than that would allow counts as busy,
//! and once the quorum is held the remaining members may use half the validity
//! left (an unreachable member never eats a hold's whole validity). Every member is renewed by its own client's watchdog; the
//! multi-hold is lost once fewer than the quorum of its members are held.

use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use futures_util::future::{select_all, FutureExt};
use tokio::sync::watch;

use super::lease::LeaseChange;
use super::{AcquireOptions, Lock};
use crate::error::{Error, ErrorKind, Result};
use crate::hold::{Hold, LostCallback, LostEvent, Released};

/// How many members a multi-lock needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Quorum {
    /// Every member (Redisson's `RedissonMultiLock`).
    All,
    /// More than half: N/2 + 1 (the Redlock algorithm, Redisson's `RedissonRedLock`).
    Majority,
}

impl Quorum {
    /// Members needed out of `n`.
    pub fn of(self, n: usize) -> usize {
        match self {
            Quorum::All => n,
            Quorum::Majority => n / 2 + 1,
        }
    }
}

pub(crate) struct Multi {
    pub members: Vec<Lock>,
    pub quorum: Quorum,
    needed: usize,
    pub display: String,
    /// Serialises this handle's acquires and releases (one holder, like a single lock's).
    op: tokio::sync::Mutex<()>,
    state: Mutex<State>,
    pub on_lost: Mutex<Option<LostCallback>>,
}

#[derive(Default)]
struct State {
    /// The members each held level took.
    levels: Vec<Vec<usize>>,
    /// The current hold's loss signal (a new one for each first level).
    lost: Option<watch::Sender<Option<Error>>>,
    /// Counts holds, so that a late loss notice of an old hold changes nothing.
    generation: u64,
}

impl Multi {
    pub fn new(members: Vec<Lock>, quorum: Quorum) -> Result<Arc<Multi>> {
        if members.is_empty() {
            return Err(Error::invalid("a multi-lock needs at least one member lock"));
        }
        for (i, member) in members.iter().enumerate() {
            let holder = member.one().map_err(|_| Error::invalid("a multi-lock's members must be single locks"))?;
            for other in &members[..i] {
                let other = other.one()?;
                if Arc::ptr_eq(&holder.ctx, &other.ctx) && holder.names.name == other.names.name {
                    return Err(Error::invalid(format!(
                        "lock \"{}\" is a member twice on the same client: each member must be another key or server",
                        member.name()
                    )));
                }
            }
        }
        let display = members.iter().map(Lock::name).collect::<Vec<_>>().join(",");
        let needed = quorum.of(members.len());
        Ok(Arc::new(Multi { members, quorum, needed, display, op: Default::default(), state: Default::default(), on_lost: Default::default() }))
    }

    fn what(&self) -> String {
        let kind = match self.quorum {
            Quorum::All => "multi-lock",
            Quorum::Majority => "redlock",
        };
        format!("{kind} \"{}\" ({} of {} members needed)", self.display, self.needed, self.members.len())
    }

    pub fn count(&self) -> u32 {
        self.state.lock().unwrap().levels.len() as u32
    }

    pub fn current_hold(&self) -> Option<Hold> {
        let st = self.state.lock().unwrap();
        let lost = st.lost.as_ref()?.subscribe();
        (!st.levels.is_empty()).then(|| Hold { token: None, count: st.levels.len() as u32, lost })
    }

    pub fn lost_error(&self) -> Option<Error> {
        self.state.lock().unwrap().lost.as_ref().and_then(|tx| tx.borrow().clone())
    }

    /// Rounds until `quorum` members are held with validity left, or `deadline`.
    /// Cancel-safe: members taken by a dropped round are released in the background.
    pub async fn acquire(self: &Arc<Self>, lease_ms: Option<u64>, deadline: Option<Instant>) -> Result<Option<Hold>> {
        let _op = self.op.lock().await;
        let config = &self.members[0].one()?.ctx.config;
        let lease = lease_ms.map(Duration::from_millis).unwrap_or(config.watchdog_timeout);
        let drift = config.safety_margin(lease);
        let n = self.members.len();
        loop {
            let started = Instant::now();
            // No deadline: rounds as long as Redisson's (1.5 s per member), then again.
            let budget = deadline.map_or(Duration::from_millis(1500) * n as u32, |d| d.saturating_duration_since(started));
            let mut taken = Taken::new(self);
            let mut failures: Vec<(usize, Error)> = Vec::new();
            let mut busy = 0;
            // Past the quorum, the other members may use half the validity left, no more.
            let mut extra_until: Option<Instant> = None;
            for (i, member) in self.members.iter().enumerate() {
                let now = Instant::now();
                let remaining = budget.saturating_sub(now - started);
                let wait = match self.quorum {
                    Quorum::All => remaining,
                    Quorum::Majority => remaining / n as u32,
                };
                // A member answering later than the lease allows cannot make a valid hold.
                let valid_for = (started + lease).checked_duration_since(now + drift).unwrap_or_default();
                let bound = extra_until.map_or(valid_for, |until| until.saturating_duration_since(now));
                let options = AcquireOptions { wait: Some(wait.min(bound).max(Duration::from_millis(1))), lease: lease_ms.map(Duration::from_millis) };
                match tokio::time::timeout(bound, member.acquire_hold(options)).await {
                    Ok(Ok(Some(hold))) => taken.push(i, hold),
                    // Too slow counts as busy: a dropped acquire undoes itself.
                    Ok(Ok(None)) | Err(_) => busy += 1,
                    Ok(Err(e)) => failures.push((i, e)),
                }
                if n - busy - failures.len() < self.needed {
                    break;
                }
                if taken.len() == self.needed && extra_until.is_none() {
                    let now = Instant::now();
                    let left = (started + lease).checked_duration_since(now + drift).unwrap_or_default();
                    extra_until = Some(now + left / 2);
                }
            }
            let elapsed = started.elapsed();
            if taken.len() >= self.needed && lease > elapsed + drift {
                return Ok(Some(self.hold_level(taken.keep())));
            }
            if taken.len() >= self.needed {
                tracing::debug!(what = %self.what(), ?elapsed, "acquired too slowly: no validity left; releasing");
            }
            taken.release().await;
            if failures.len() > n - self.needed {
                // Quorum out of reach whoever holds the lock: say why at once.
                return Err(self.failed(&failures));
            }
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                return Ok(None);
            }
            let pause = Duration::from_micros(rand_below(50_000));
            let pause = deadline.map_or(pause, |d| pause.min(d.saturating_duration_since(now)));
            tokio::time::sleep(pause).await;
        }
    }

    /// The error of a round that could not reach the quorum because members failed.
    fn failed(&self, failures: &[(usize, Error)]) -> Error {
        let kind = failures.iter().map(|(_, e)| e.kind()).find(|k| *k != ErrorKind::Connection).unwrap_or(ErrorKind::Connection);
        let details: Vec<String> = failures.iter().map(|(i, e)| format!("member {} ({}): {}", i + 1, self.members[*i].name(), e.message())).collect();
        Error::new(
            kind,
            format!("acquiring {}: {} member(s) failed, so the quorum cannot be reached: {}", self.what(), failures.len(), details.join("; ")),
        )
    }

    /// Records a new level; the first starts a new hold and its loss watch.
    fn hold_level(self: &Arc<Self>, taken: Vec<(usize, Hold)>) -> Hold {
        let mut st = self.state.lock().unwrap();
        st.levels.push(taken.iter().map(|(i, _)| *i).collect());
        if st.levels.len() == 1 {
            st.generation += 1;
            st.lost = Some(watch::channel(None).0);
            let watches = taken
                .iter()
                .map(|(i, hold)| {
                    let closed = self.members[*i].one().expect("members are single locks").ctx.shutdown.subscribe();
                    Member { index: *i, lost: hold.lost_watch(), closed }
                })
                .collect();
            let runtime = self.members[0].runtime().clone();
            runtime.spawn(watch_members(Arc::downgrade(self), st.generation, watches));
        }
        let lost = st.lost.as_ref().expect("set above").subscribe();
        Hold { token: None, count: st.levels.len() as u32, lost }
    }

    /// Marks hold `generation` lost (once) and tells the callback.
    fn mark_lost(&self, generation: u64, reason: String) {
        let error = Error::new(ErrorKind::LockLost, format!("{} was lost: {reason}", self.what()));
        {
            let st = self.state.lock().unwrap();
            let Some(tx) = st.lost.as_ref().filter(|_| st.generation == generation && !st.levels.is_empty()) else { return };
            if tx.borrow().is_some() {
                return;
            }
            tx.send_replace(Some(error.clone()));
        }
        tracing::warn!(lock = %self.display, "{}", error.message());
        let callback = self.on_lost.lock().unwrap().clone();
        if let Some(callback) = callback {
            let owner = self.members[0].owner().to_string();
            let event = LostEvent { name: self.display.clone(), owner, reason, error, at: Instant::now() };
            callback(&event);
        }
    }

    /// Changes the lease on every member this holder holds; the quorum must follow.
    /// Returns the shortest lease left among those that did.
    pub async fn change_lease(&self, change: LeaseChange) -> Result<Duration> {
        let _op = self.op.lock().await;
        let held: Vec<usize> = {
            let st = self.state.lock().unwrap();
            if let Some(lost) = st.lost.as_ref().and_then(|tx| tx.borrow().clone()) {
                return Err(lost);
            }
            let mut held: Vec<usize> = st.levels.concat();
            held.sort_unstable();
            held.dedup();
            held
        };
        if held.is_empty() {
            return Err(Error::new(ErrorKind::NotOwner, format!("changing the lease of {}: this holder does not hold it", self.what())));
        }
        let results = futures_util::future::join_all(held.iter().map(|i| self.members[*i].change_lease(change))).await;
        let mut left = Vec::new();
        let mut failures = Vec::new();
        for (i, result) in held.iter().zip(results) {
            match result {
                Ok(d) => left.push(d),
                Err(e) => failures.push((e.kind(), format!("member {} ({}): {}", i + 1, self.members[*i].name(), e.message()))),
            }
        }
        if let Some(shortest) = left.iter().min().filter(|_| left.len() >= self.needed) {
            return Ok(*shortest);
        }
        // One cause for all (say, a hold the watchdog renews) is that cause; mixed ones mean the hold is gone.
        let kind = match failures.first() {
            Some((first, _)) if failures.iter().all(|(k, _)| k == first) => *first,
            _ => ErrorKind::LockLost,
        };
        let details: Vec<String> = failures.into_iter().map(|(_, m)| m).collect();
        Err(Error::new(kind, format!("changing the lease of {}: too few members followed: {}", self.what(), details.join("; "))))
    }

    /// Releases one level (or all) on its members. All: every member must have
    /// been held (else NotOwner); majority: the quorum must have been released.
    pub async fn release(&self, all: bool) -> Result<Released> {
        let _op = self.op.lock().await;
        let (members, left, lost) = {
            let mut st = self.state.lock().unwrap();
            if st.levels.is_empty() {
                return Err(Error::new(ErrorKind::NotOwner, format!("releasing {}: this holder does not hold it", self.what())));
            }
            let levels: Vec<Vec<usize>> = if all { std::mem::take(&mut st.levels) } else { vec![st.levels.pop().expect("not empty")] };
            let lost = st.lost.as_ref().and_then(|tx| tx.borrow().clone());
            (levels.concat(), st.levels.len() as u32, lost)
        };
        let results = futures_util::future::join_all(members.iter().map(|i| self.members[*i].release())).await;
        let failures: Vec<(usize, Error)> = members.iter().zip(results).filter_map(|(i, r)| r.err().map(|e| (*i, e))).collect();
        if let Some(lost) = lost {
            return Err(lost);
        }
        let released = members.len() - failures.len();
        let enough = match self.quorum {
            Quorum::All => failures.is_empty(),
            Quorum::Majority => released >= self.needed,
        };
        if enough {
            if !failures.is_empty() {
                tracing::debug!(lock = %self.display, failed = failures.len(), "released the quorum; some members failed");
            }
            return Ok(if left == 0 { Released::Unlocked } else { Released::StillHeld(left) });
        }
        let kind = if failures.iter().any(|(_, e)| e.kind() == ErrorKind::NotOwner) { ErrorKind::NotOwner } else { failures[0].1.kind() };
        let details: Vec<String> = failures.iter().map(|(i, e)| format!("member {} ({}): {}", i + 1, self.members[*i].name(), e.message())).collect();
        Err(Error::new(kind, format!("releasing {}: {}", self.what(), details.join("; "))))
    }
}

/// Members taken in one round: released in the background if the round is
/// dropped or falls short, kept on success.
struct Taken<'a> {
    multi: &'a Multi,
    holds: Vec<(usize, Hold)>,
}

impl<'a> Taken<'a> {
    fn new(multi: &'a Multi) -> Self {
        Taken { multi, holds: Vec::new() }
    }

    fn push(&mut self, member: usize, hold: Hold) {
        self.holds.push((member, hold));
    }

    fn len(&self) -> usize {
        self.holds.len()
    }

    fn keep(mut self) -> Vec<(usize, Hold)> {
        std::mem::take(&mut self.holds)
    }

    async fn release(mut self) {
        let holds = std::mem::take(&mut self.holds);
        let members = &self.multi.members;
        futures_util::future::join_all(holds.iter().map(|(i, _)| members[*i].release())).await;
    }
}

impl Drop for Taken<'_> {
    fn drop(&mut self) {
        for (i, _) in self.holds.drain(..) {
            let member = self.multi.members[i].clone();
            member.runtime().clone().spawn(async move {
                let _ = member.release().await;
            });
        }
    }
}

/// One member of a hold, as its watcher sees it: its loss signal, and its client's
/// shutdown (which releases the member behind the multi-lock's back).
struct Member {
    index: usize,
    lost: watch::Receiver<Option<Error>>,
    closed: watch::Receiver<bool>,
}

impl Member {
    /// Why this member is no longer held, if it is not.
    fn gone(&self) -> Option<String> {
        if let Some(e) = self.lost.borrow().as_ref() {
            return Some(e.message().to_string());
        }
        (*self.closed.borrow()).then(|| "its client shut down".to_string())
    }
}

/// Watches the members of hold `generation`: once fewer than the quorum are still
/// held, the multi-hold is lost, with the members that went named.
async fn watch_members(multi: Weak<Multi>, generation: u64, mut members: Vec<Member>) {
    loop {
        let Some(this) = multi.upgrade() else { return };
        {
            let st = this.state.lock().unwrap();
            if st.generation != generation || st.levels.is_empty() {
                return;
            }
        }
        let lost: Vec<String> = members
            .iter()
            .filter_map(|m| m.gone().map(|why| format!("member {} ({}): {why}", m.index + 1, this.members[m.index].name())))
            .collect();
        if members.len() - lost.len() < this.needed {
            let reason = format!("{} of its members are no longer held: {}", lost.len(), lost.join("; "));
            this.mark_lost(generation, reason);
            return;
        }
        drop(this);
        // Members already gone need no watching (and their channels may be closed).
        let changes = members.iter_mut().filter(|m| m.gone().is_none()).flat_map(|m| {
            [async { m.lost.changed().await.is_err() }.boxed(), async { m.closed.changed().await.is_err() }.boxed()]
        });
        let (closed, _, _) = select_all(changes).await;
        if closed {
            // A signal's sender went away with its client: that client is gone.
            return;
        }
    }
}

/// A random number below `n` (jitter; not for anything secret).
fn rand_below(n: u64) -> u64 {
    let seed = uuid::Uuid::new_v4().as_u128() as u64;
    seed % n.max(1)
}
