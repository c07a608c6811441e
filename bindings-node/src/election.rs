//! Elections: a core election candidate (`NativeElection`) and an observer of its
//! leadership changes (`NativeObserver`). The candidate's fenced lock is also a
//! lock handle (lock.rs), so that lib/election.js leads through a `Lock` object:
//! its holds' numbering, 'lost' events and AbortSignals are the lock's. Only the
//! campaign (which announces the new leader) and the reads are the election's.

use std::sync::Arc;

use napi::bindgen_prelude::{BigInt, PromiseRaw};
use napi::Env;
use napi_derive::napi;

use crate::cancel::{unless_aborted, Abort};
use crate::errors::{millis, IntoJs};
use crate::executor::promise;
use crate::lock::{handle, HoldInfo, HolderStatus};

/// Who leads an election (core's `Leader`).
#[napi(object)]
pub struct LeaderInfo {
    /// The leadership's term: the fencing token its campaign took.
    pub term: BigInt,
    /// Who it is: owner field and note (`heldForMs` absent when told by the new leader's announcement).
    pub holder: HolderStatus,
    /// Ms left on its lease when read or announced; absent for a lock without expiry.
    pub lease_left_ms: Option<f64>,
}

impl From<ferrolock::Leader> for LeaderInfo {
    fn from(leader: ferrolock::Leader) -> LeaderInfo {
        LeaderInfo {
            term: BigInt::from(leader.term),
            holder: HolderStatus::from(leader.holder),
            lease_left_ms: leader.lease_left.map(|d| d.as_millis() as f64),
        }
    }
}

/// One change an observer tells, or none before its timeout.
#[napi(object)]
pub struct ObservedChange {
    /// False when the timeout passed without a change.
    pub changed: bool,
    /// Who leads from now on; absent when nobody does (or nothing changed).
    pub leader: Option<LeaderInfo>,
}

/// One candidate of one election; its lock is the lock handle `lockId`.
#[napi]
pub struct NativeElection {
    election: ferrolock::Election,
    lock_id: u32,
}

impl NativeElection {
    pub(crate) fn new(election: ferrolock::Election, lock_id: u32) -> Self {
        NativeElection { election, lock_id }
    }
}

#[napi]
impl NativeElection {
    /// The lock handle of this candidate's fenced lock (lock.rs): its holds are the leaderships.
    #[napi(getter)]
    pub fn lock_id(&self) -> u32 {
        self.lock_id
    }

    #[napi(getter)]
    pub fn name(&self) -> String {
        self.election.name().to_string()
    }

    /// Campaigns until this candidate leads, at most `waitMs` (unbounded when absent):
    /// the leadership as its lock's hold (its token is the term), or null. `cancelId`
    /// (from `newCancel`) ends the campaign, leading nothing.
    #[napi]
    pub fn campaign<'env>(&self, env: &'env Env, wait_ms: Option<f64>, cancel_id: Option<u32>) -> napi::Result<PromiseRaw<'env, Option<HoldInfo>>> {
        let abort = Abort::take(cancel_id);
        let (election, handle) = (self.election.clone(), handle(self.lock_id));
        promise(env, async move {
            let handle = handle?;
            let wait = millis(wait_ms, "waitMs")?;
            let led = unless_aborted(abort, async { election.campaign_hold(wait).await.js() }).await?;
            Ok(led.map(|hold| HoldInfo { count: hold.hold_count(), token: hold.token().map(BigInt::from), seq: handle.track(&hold) }))
        })
    }

    /// Who leads now (one read), or null.
    #[napi]
    pub fn leader<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, Option<LeaderInfo>>> {
        let election = self.election.clone();
        promise(env, async move { Ok(election.leader().await.js()?.map(LeaderInfo::from)) })
    }

    /// An observer of this election's leadership changes, subscribed from now on.
    #[napi]
    pub fn observe<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, NativeObserver>> {
        let election = self.election.clone();
        promise(env, async move {
            let observer = election.observe().await.js()?;
            Ok(NativeObserver { inner: Arc::new(tokio::sync::Mutex::new(observer)) })
        })
    }
}

/// The leadership changes of one election, in order.
#[napi]
pub struct NativeObserver {
    inner: Arc<tokio::sync::Mutex<ferrolock::Observer>>,
}

#[napi]
impl NativeObserver {
    /// The next change (the first call: who leads now), waiting at most `timeoutMs`
    /// (unbounded when absent). `cancelId` ends the wait; no change is lost either way.
    #[napi]
    pub fn next<'env>(&self, env: &'env Env, timeout_ms: Option<f64>, cancel_id: Option<u32>) -> napi::Result<PromiseRaw<'env, ObservedChange>> {
        let abort = Abort::take(cancel_id);
        let inner = self.inner.clone();
        promise(env, async move {
            let timeout = millis(timeout_ms, "timeoutMs")?;
            unless_aborted(abort, async {
                let mut observer = inner.lock().await;
                let change = match timeout {
                    Some(limit) => match tokio::time::timeout(limit, observer.next()).await {
                        Ok(change) => change.js()?,
                        Err(_) => return Ok(ObservedChange { changed: false, leader: None }),
                    },
                    None => observer.next().await.js()?,
                };
                Ok(ObservedChange { changed: true, leader: change.map(LeaderInfo::from) })
            })
            .await
        })
    }
}
