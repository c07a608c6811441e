//! Acquiring a multi-lock, in rounds. A round sends one try to every member at
//! once (an uncontended acquire costs one round-trip, as with one server). When the
//! tries fall short of the quorum, the round waits on the first busy member, in the
//! members' order, having given back what it took after that member, then tries the
//! members after it at once again, and so on: whoever waits for a member holds only
//! members before it, so contenders never hold parts of the lock while waiting for
//! each other's (no livelock of several clients each taking some members), and the
//! waiters of one lock all queue on the same member, where a release of the same
//! client hands it over (handoff.rs), all of them at once when the release is of
//! the same multi-lock (follow.rs). A new acquire queues behind its client's
//! waiters on a member rather than racing them for the members after it.
//!
//! Waits per member are Redisson's: the remaining wait (all members needed) or the
//! remaining wait / N (majority), at least 1 ms. Every member call is also bounded
//! by the validity left (`lease - elapsed - drift`), and once the quorum is held the
//! other members' answers are awaited for half of what is left, no longer: a member
//! past its bound counts as busy (its dropped call undoes itself). A round that falls
//! short gives back what it took, all at once; more failed members than the quorum
//! allows fail the acquire at once (a try a member cannot answer within twice its
//! response timeout counts as failed).

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::stream::{FuturesUnordered, StreamExt};

use super::follow::Follower;
use super::taken::Taken;
use super::{Multi, Quorum};
use crate::error::{Error, ErrorKind, Result};
use crate::hold::Hold;
use crate::lock::AcquireOptions;

impl Multi {
    /// Rounds until the quorum is held with validity left, or `deadline`.
    /// Cancel-safe: members taken by a dropped round are released in the background.
    pub async fn acquire(self: &Arc<Self>, lease_ms: Option<u64>, deadline: Option<Instant>) -> Result<Option<Hold>> {
        let _op = self.op.lock().await;
        let config = &self.members[0].one()?.ctx.config;
        let lease = lease_ms.map(Duration::from_millis).unwrap_or(config.watchdog_timeout);
        let drift = config.safety_margin(lease);
        loop {
            let mut round = Round::new(self, lease_ms, lease, drift, deadline);
            round.run().await;
            let elapsed = round.valid_from.elapsed();
            if round.taken.len() >= self.needed && lease > elapsed + drift {
                return Ok(Some(self.hold_level(round.taken.keep())));
            }
            if round.taken.len() >= self.needed {
                tracing::debug!(what = %self.what(), ?elapsed, "acquired too slowly: no validity left; releasing");
            }
            let Round { taken, failures, waited, .. } = round;
            taken.release().await;
            if failures.len() > self.members.len() - self.needed {
                // Quorum out of reach whoever holds the lock: say why at once.
                return Err(self.failed(&failures));
            }
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                return Ok(None);
            }
            if !waited {
                // Fell short without waiting on anyone (members too slow for the
                // validity): not at once again.
                let pause = Duration::from_micros(rand_below(50_000));
                tokio::time::sleep(deadline.map_or(pause, |d| pause.min(d.saturating_duration_since(now)))).await;
            }
        }
    }
}

/// One round: what it took, and what it learned of the others.
struct Round<'a> {
    multi: &'a Multi,
    lease_ms: Option<u64>,
    deadline: Option<Instant>,
    started: Instant,
    /// Its validity's clock: no member it holds was taken before this.
    valid_from: Instant,
    lease: Duration,
    drift: Duration,
    /// The round's wait: the caller's, or (no deadline) Redisson's 1.5 s per member.
    budget: Duration,
    /// When a hold taken now would have no validity left.
    valid_until: Instant,
    /// Once the quorum is held: how long the other members may still answer.
    extra_until: Option<Instant>,
    taken: Taken<'a>,
    failures: Vec<(usize, Error)>,
    /// Members given up on this round (busy past their wait, or too slow).
    given_up: usize,
    /// Members failed or given up on: not tried again this round.
    out: Vec<bool>,
    /// True once it waited on a busy member.
    waited: bool,
}

impl<'a> Round<'a> {
    fn new(multi: &'a Multi, lease_ms: Option<u64>, lease: Duration, drift: Duration, deadline: Option<Instant>) -> Self {
        let started = Instant::now();
        let n = multi.members.len();
        let budget = deadline.map_or(Duration::from_millis(1500) * n as u32, |d| d.saturating_duration_since(started));
        let valid_until = (started + lease).checked_sub(drift).unwrap_or(started);
        Round { multi, lease_ms, deadline, started, valid_from: started, lease, drift, budget, valid_until, extra_until: None, taken: Taken::new(multi), failures: Vec::new(), given_up: 0, out: vec![false; n], waited: false }
    }

    fn won(&self) -> bool {
        self.taken.len() >= self.multi.needed
    }

    /// False once too many members failed or were given up on.
    fn reachable(&self) -> bool {
        self.multi.members.len() - self.failures.len() - self.given_up >= self.multi.needed
    }

    /// Until when a member call may run.
    fn bound(&self) -> Instant {
        self.extra_until.map_or(self.valid_until, |until| until.min(self.valid_until))
    }

    fn lease(&self) -> Option<Duration> {
        self.lease_ms.map(Duration::from_millis)
    }

    async fn run(&mut self) {
        let n = self.multi.members.len();
        let mut next: Vec<usize> = (0..n).collect();
        loop {
            let busy = self.try_all(&next).await;
            if self.won() || !self.reachable() || self.deadline.is_some_and(|d| Instant::now() >= d) {
                return;
            }
            let Some(&first) = busy.first() else { return };
            // Hold nothing after the member waited on.
            self.taken.release_after(first).await;
            self.wait_on(first).await;
            if self.won() || !self.reachable() {
                return;
            }
            // What it gave back, what was busy and what it did not try yet: all at once again.
            next = (first + 1..n).filter(|i| !self.out[*i] && !self.taken.has(*i)).collect();
        }
    }

    /// One try on each of `members`, all at once, up to the first one this client
    /// already has waiters on (the acquire queues behind them there). Answers the
    /// members found busy (that one included), in order.
    async fn try_all(&mut self, members: &[usize]) -> Vec<usize> {
        let multi = self.multi;
        let queued_at = members.iter().position(|i| multi.has_local_waiters(*i)).unwrap_or(members.len());
        let mut busy: Vec<usize> = members.get(queued_at).copied().into_iter().collect();
        let options = AcquireOptions { wait: Some(Duration::ZERO), lease: self.lease() };
        let mut unanswered: Vec<usize> = members[..queued_at].to_vec();
        let mut tries: FuturesUnordered<_> = unanswered.iter().map(move |&i| async move { (i, multi.try_member(i, options).await) }).collect();
        while !tries.is_empty() {
            let Ok(Some((i, tried))) = tokio::time::timeout_at(self.bound().into(), tries.next()).await else {
                // Too slow to make a valid hold: dropped, the tries undo themselves.
                for i in unanswered {
                    self.give_up(i);
                }
                break;
            };
            unanswered.retain(|u| *u != i);
            match tried {
                Ok(Some(hold)) => self.taken.push(i, hold),
                Ok(None) => busy.push(i),
                Err(e) => self.fail(i, e),
            }
            if self.won() && self.extra_until.is_none() {
                let now = Instant::now();
                self.extra_until = Some(now + self.valid_until.saturating_duration_since(now) / 2);
            }
            // Out of reach now or not, the tries in flight are answered (within the
            // bounds): what they took is given back before the acquire returns.
        }
        busy.sort_unstable();
        busy
    }

    /// Waits on busy `member` for its share of the round's wait.
    async fn wait_on(&mut self, member: usize) {
        self.waited = true;
        let now = Instant::now();
        let remaining = self.budget.saturating_sub(now - self.started);
        let wait = match self.multi.quorum {
            Quorum::All => remaining,
            Quorum::Majority => remaining / self.multi.members.len() as u32,
        };
        let bound = self.bound().saturating_duration_since(now);
        let options = AcquireOptions { wait: Some(wait.min(bound).max(Duration::from_millis(1))), lease: self.lease() };
        // Holding nothing, it may be handed every member at once (follow.rs).
        let follower = (self.taken.len() == 0).then(|| Follower::new(self.multi, self.lease_ms));
        let candidate = follower.as_ref().map(|f| f.candidate(member));
        match tokio::time::timeout(bound, self.multi.members[member].acquire_offering(options, candidate)).await {
            Ok(Ok(Some(hold))) => {
                self.taken.push(member, hold);
                if let Some(follower) = follower {
                    self.follow(&follower).await;
                }
            }
            Ok(Ok(None)) | Err(_) => self.give_up(member),
            Ok(Err(e)) => self.fail(member, e),
        }
    }

    /// Takes the members a release handed it along with the one it waited on.
    async fn follow(&mut self, follower: &Follower) {
        let Ok((chosen_at, holds)) = tokio::time::timeout_at(self.bound().into(), follower.collect()).await else { return };
        if let Some(at) = chosen_at.filter(|at| *at > self.valid_from) {
            // Everything it holds was taken since: a hold that old is as valid as one taken then.
            self.valid_from = at;
            self.valid_until = (at + self.lease).checked_sub(self.drift).unwrap_or(at);
        }
        for (i, hold) in holds {
            self.taken.push(i, hold);
        }
    }

    fn give_up(&mut self, member: usize) {
        self.given_up += 1;
        self.out[member] = true;
    }

    fn fail(&mut self, member: usize, e: Error) {
        self.failures.push((member, e));
        self.out[member] = true;
    }
}

impl Multi {
    /// One try on `member`. A member that cannot answer within twice its response
    /// timeout (its holder busy settling a call Redis never answered, say) counts as
    /// failed: a try must not wait for it as long as its lease.
    async fn try_member(&self, member: usize, options: AcquireOptions) -> Result<Option<Hold>> {
        let lock = &self.members[member];
        let limit = lock.one()?.ctx.config.response_timeout * 2;
        match tokio::time::timeout(limit, lock.acquire_hold(options)).await {
            Ok(tried) => tried,
            Err(_) => Err(Error::new(ErrorKind::Connection, format!("lock \"{}\" did not answer a try within {limit:?}", lock.name()))),
        }
    }
}

/// A random number below `n` (jitter; not for anything secret).
fn rand_below(n: u64) -> u64 {
    let seed = uuid::Uuid::new_v4().as_u128() as u64;
    seed % n.max(1)
}
