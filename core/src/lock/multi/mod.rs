//! Multi-locks: one lock over several single locks (its members), usually one
//! name on N independent Redis masters, each member an ordinary RLock on its own
//! client (Redisson's wire protocol, so Redisson's `RedissonMultiLock` and
//! `RedissonRedLock` over the same names exclude ours). Not a topology.
//!
//! Acquiring (acquire.rs) sends one try to every member at once, so an uncontended
//! acquire costs one round-trip whatever N; members that are busy are waited on in
//! order (taken.rs gives back what a round must not keep). A hold is valid for
//! `lease - elapsed - drift`; none left means not acquired. Every member is renewed
//! by its own client's watchdog; the multi-hold is lost once fewer than the quorum
//! of its members are held (watcher.rs). Releases go to every member at once, and
//! hand them all to the next holder of the same multi-lock in this client, if one
//! waits (follow.rs).

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::stream::{FuturesUnordered, StreamExt as _};
use tokio::sync::{watch, Notify};

use super::lease::LeaseChange;
use super::Lock;
use crate::error::{Error, ErrorKind, Result};
use crate::hold::{Hold, LostCallback, LostEvent, Released};

mod acquire;
mod follow;
mod taken;
mod watcher;

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
    /// Members the quorum needs.
    needed: usize,
    pub display: String,
    /// Serialises this handle's acquires and releases (one holder, like a single lock's).
    op: tokio::sync::Mutex<()>,
    state: Mutex<State>,
    pub on_lost: Mutex<Option<LostCallback>>,
    /// True once a task watches the members' clients for shutdowns (watcher.rs).
    closes_watched: AtomicBool,
    /// Tells that task the lock is gone.
    gone: Arc<Notify>,
}

impl Drop for Multi {
    fn drop(&mut self) {
        self.gone.notify_one();
    }
}

#[derive(Default)]
struct State {
    /// The members each held level took.
    levels: Vec<Vec<usize>>,
    /// The current hold's loss signal (a new one for each first level).
    lost: Option<watch::Sender<Option<Error>>>,
    /// Counts holds, so that a late loss notice of an old hold changes nothing.
    generation: u64,
    /// The current hold's members, as taken (their loss signals).
    members: Vec<(usize, Hold)>,
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
        Ok(Arc::new(Multi { members, quorum, needed, display, op: Default::default(), state: Default::default(), on_lost: Default::default(), closes_watched: Default::default(), gone: Default::default() }))
    }

    /// True if this client already has acquires waiting on `member` (a new one queues behind them).
    fn has_local_waiters(&self, member: usize) -> bool {
        self.members[member].one().is_ok_and(|h| h.ctx.hub.has_waiters(&h.wait_channel()))
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
        (!st.levels.is_empty()).then(|| Hold { token: None, count: st.levels.len() as u32, lost: lost.into() })
    }

    pub fn lost_error(&self) -> Option<Error> {
        self.state.lock().unwrap().lost.as_ref().and_then(|tx| tx.borrow().clone())
    }

    /// See [`Lock::is_settling`]: members settling keep others out only while the
    /// members left cannot make the quorum.
    pub fn is_settling(&self) -> bool {
        let settling = self.members.iter().filter(|m| m.is_settling()).count();
        settling > self.members.len() - self.needed
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

    /// Records a new level; the first starts a new hold, whose members tell it of their losses.
    fn hold_level(self: &Arc<Self>, taken: Vec<(usize, Hold)>) -> Hold {
        let mut st = self.state.lock().unwrap();
        st.levels.push(taken.iter().map(|(i, _)| *i).collect());
        let first = st.levels.len() == 1;
        if first {
            st.generation += 1;
            st.lost = Some(watch::channel(None).0);
            st.members = taken;
        }
        let lost = st.lost.as_ref().expect("set above").subscribe();
        let hold = Hold { token: None, count: st.levels.len() as u32, lost: lost.into() };
        if first {
            let (generation, members) = (st.generation, st.members.clone());
            drop(st);
            // Outside the state lock: a member lost already runs its hook at once.
            self.watch_members(generation, &members);
        }
        hold
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
        let (mut members, left, lost, one_level) = {
            let mut st = self.state.lock().unwrap();
            if st.levels.is_empty() {
                return Err(Error::new(ErrorKind::NotOwner, format!("releasing {}: this holder does not hold it", self.what())));
            }
            let levels: Vec<Vec<usize>> = if all { std::mem::take(&mut st.levels) } else { vec![st.levels.pop().expect("not empty")] };
            if st.levels.is_empty() {
                st.members.clear();
            }
            let lost = st.lost.as_ref().and_then(|tx| tx.borrow().clone());
            let mut members = levels.concat();
            // Last members first: a release of the first may wake a waiter of this client
            // at once (a hand-off), whose tries of the later ones then queue behind
            // their releases on the same connections instead of finding them busy.
            members.sort_unstable_by(|a, b| b.cmp(a));
            (members, st.levels.len() as u32, lost, levels.len() == 1)
        };
        // Ending a hold (each member released once): to the next holder of the same
        // multi-lock here, if one waits.
        let mut successors = if left == 0 && lost.is_none() && one_level { self.successors(&members) } else { Vec::new() };
        if successors.iter().filter(|d| d.is_some()).count() > 1 {
            // Every member goes to one follower, woken by the first member's hand-off: that one first.
            members.reverse();
            successors.reverse();
        }
        let mut successors = successors.into_iter();
        let mut calls: FuturesUnordered<_> = members
            .iter()
            .map(|&i| {
                let directed = successors.next().flatten();
                let holder = self.members[i].one().cloned();
                async move { (i, async move { holder?.release_to(false, directed).await }.await) }
            })
            .collect();
        // A member counts as released once every level it had is; `left[i]`: its
        // releases still to come.
        let mut left_of = vec![0usize; self.members.len()];
        for &i in &members {
            left_of[i] += 1;
        }
        let mut released = 0;
        let mut failures: Vec<(usize, Error)> = Vec::new();
        // A Redlock released on its quorum is free for everyone else: the caller is
        // answered once the members still answering are either connected and answer
        // within their response timeout, or not (a server down: a member then retries
        // for its retry window and settles in the background, as a release whose caller
        // went away does). Awaiting connected members keeps an uncontended cycle off the
        // runtime's threads (a task for the rest would wake one every cycle); the bound
        // covers a member whose server went away unnoticed yet when the quorum answered.
        let quorum_released = |released: usize| self.quorum == Quorum::Majority && released >= self.needed;
        let bound = self.members.iter().filter_map(|m| m.one().ok()).map(|h| h.ctx.config.response_timeout).max().unwrap_or_default();
        loop {
            let next = if quorum_released(released) && !calls.is_empty() {
                match tokio::time::timeout(bound, calls.next()).await {
                    Ok(next) => next,
                    Err(_) => {
                        self.settle_in_background(calls);
                        break;
                    }
                }
            } else {
                calls.next().await
            };
            let Some((i, result)) = next else { break };
            left_of[i] -= 1;
            match result {
                Ok(_) if left_of[i] == 0 && !failures.iter().any(|(f, _)| *f == i) => released += 1,
                Ok(_) => {}
                Err(e) => failures.push((i, e)),
            }
            let struggling = || (0..self.members.len()).any(|j| left_of[j] > 0 && !self.members[j].is_connected());
            if quorum_released(released) && !calls.is_empty() && struggling() {
                self.settle_in_background(calls);
                break;
            }
        }
        if let Some(lost) = lost {
            return Err(lost);
        }
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

    /// The member releases still answering after the quorum released finish on their
    /// own; their failures are only logged (the caller was answered).
    fn settle_in_background<F>(&self, mut calls: FuturesUnordered<F>)
    where
        F: std::future::Future<Output = (usize, Result<Released>)> + Send + 'static,
    {
        let Some(holder) = self.members.iter().find_map(|m| m.one().ok()) else { return };
        let name = self.display.clone();
        holder.ctx.runtime.spawn(async move {
            while let Some((i, result)) = calls.next().await {
                if let Err(e) = result {
                    tracing::debug!(lock = %name, member = i + 1, error = %e, "a member's release failed after the quorum released");
                }
            }
        });
    }
}

