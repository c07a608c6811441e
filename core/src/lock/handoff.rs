//! Local hand-off: a release that finds a waiter of the same client queued on the
//! lock gives the hold straight to that waiter inside the release script (one
//! round-trip, no message, no second acquire) instead of freeing the lock and
//! waking the waiter to race for it.
//!
//! An unfenced successor is let go at once, before the script runs. From the
//! server's side the hash exists throughout (the releaser's field, then the
//! successor's), so nobody else can get in between, and the successor's hold is
//! exactly as good as the releaser's was: if the script finds the releaser's field
//! gone (force-unlocked, expired), the successor's hold is marked lost, like any
//! lost hold. This is only done while the releaser's own lease has longer to run
//! than a reply can take. A fenced successor needs the token the script INCRs, so
//! it is let go with the reply.
//!
//! Waiters of other clients (and Redisson's) are woken only by messages, so after
//! [`STREAK`] hand-offs in a row a release frees the lock and publishes as usual
//! (the count travels with the hold, so it survives the waiters' comings and goings).
//!
//! A release may also be told whom to hand to ([`Directed`]): a multi-lock hands
//! every member to the next holder of the same multi-lock (lock/multi/follow.rs).

use std::any::Any;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::OwnedMutexGuard;

use super::holder::{Holder, Level, PendingHold};
use super::release::{release_revived, ReleaseReply};
use crate::error::Result;
use crate::hold::state::Acquired;
use crate::waiting::hub::Claimed;
use crate::waiting::claim::Claim;
use crate::waiting::Successor;

/// Local hand-offs in a row on one lock before a release frees it for everyone.
pub(crate) const STREAK: u32 = 8;

/// A queued acquire that a release of the same client may hand the lock to.
pub(crate) struct Candidate {
    pub holder: Arc<Holder>,
    /// The acquire's explicit lease (`None`: watchdog).
    pub lease_ms: Option<u64>,
    /// Its tries and a release's claim, and the hold handed over until the acquire
    /// takes it (dropped untaken, it releases the level again).
    claim: Claim<PendingHold>,
    /// The successor's operation lock while claimed: no other call may change its
    /// hold until the hand-off is settled.
    claim_guard: Mutex<Option<OwnedMutexGuard<()>>>,
    /// What else the acquire waits for, for a release that hands over more than this
    /// lock (a multi-lock's acquire waiting on one of its members).
    follower: Option<Arc<dyn Any + Send + Sync>>,
}

impl Candidate {
    pub fn new(holder: Arc<Holder>, lease_ms: Option<u64>) -> Arc<Candidate> {
        Candidate::following(holder, lease_ms, None)
    }

    pub fn following(holder: Arc<Holder>, lease_ms: Option<u64>, follower: Option<Arc<dyn Any + Send + Sync>>) -> Arc<Candidate> {
        Arc::new(Candidate { holder, lease_ms, claim: Claim::default(), claim_guard: Mutex::new(None), follower })
    }

    pub fn follower(&self) -> Option<&Arc<dyn Any + Send + Sync>> {
        self.follower.as_ref()
    }

    // The acquire's side (lock/mod.rs), as the claim has it.
    pub fn begin_attempt(&self) -> bool {
        self.claim.begin_attempt()
    }

    pub fn end_attempt(&self) {
        self.claim.end_attempt()
    }

    pub fn close(&self) -> bool {
        self.claim.close()
    }

    pub fn is_claimed(&self) -> bool {
        self.claim.is_claimed()
    }

    pub fn take_handed(&self) -> Option<PendingHold> {
        self.claim.take_handed()
    }

    pub(crate) fn unclaim(&self) {
        self.claim_guard.lock().unwrap().take();
        self.claim.unclaim();
    }
}

impl Successor for Candidate {
    fn try_claim(&self, releaser: u64) -> bool {
        if self.holder.uid == releaser || !self.claim.claim() {
            return false;
        }
        // A successor busy with a call of its own is skipped, never waited for.
        match self.holder.op.clone().try_lock_owned() {
            Ok(guard) => {
                *self.claim_guard.lock().unwrap() = Some(guard);
                true
            }
            Err(_) => {
                self.claim.unclaim();
                false
            }
        }
    }

    fn as_any(self: Arc<Self>) -> Arc<dyn std::any::Any + Send + Sync> {
        self
    }
}

/// A successor chosen by whoever asks for the release, instead of the first in the
/// hub's queue. Dropped unused (the release did not hand over), it is let go and
/// woken to go on by itself.
pub(crate) struct Directed(Option<Claimed>);

impl Directed {
    pub fn new(claimed: Claimed) -> Directed {
        Directed(Some(claimed))
    }

    pub fn take(mut self) -> Option<Claimed> {
        self.0.take()
    }
}

impl Drop for Directed {
    fn drop(&mut self) {
        let Some(claimed) = self.0.take() else { return };
        if let Ok(candidate) = claimed.successor.as_any().downcast::<Candidate>() {
            candidate.unclaim();
        }
        (claimed.wake)();
    }
}

/// A hand-off under way, from the claim until the release script's outcome.
pub(crate) struct Handoff {
    candidate: Arc<Candidate>,
    wake: Box<dyn Fn() + Send + Sync>,
    /// The lease the successor's hold gets (its own, or the watchdog's).
    pub lease_ms: u64,
    sent_at: Instant,
    /// The generation of the hold already given to an unfenced successor.
    early: Option<u64>,
    /// Hand-offs in a row, this one included.
    streak: u32,
}

impl Handoff {
    /// Prepares handing the lock to `claim`'s candidate; `early` lets an unfenced
    /// successor go now. `None` (the claim is undone) if the successor holds already.
    pub fn start(claimed: Claimed, early: bool, streak: u32) -> Option<Handoff> {
        let Ok(candidate) = claimed.successor.as_any().downcast::<Candidate>() else {
            return None;
        };
        let successor = candidate.holder.clone();
        if successor.cell.state.lock().unwrap().count != 0 {
            candidate.unclaim();
            // Whoever waits for the claim to settle (a multi-lock's acquire) must see it.
            (claimed.wake)();
            return None;
        }
        let lease = candidate.lease_ms;
        let lease_ms = lease.unwrap_or_else(|| successor.ctx.config.watchdog_ms());
        let sent_at = Instant::now();
        let mut handoff = Handoff { candidate, wake: claimed.wake, lease_ms, sent_at, early: None, streak };
        if early && !successor.is_fenced() {
            let hold = successor.apply(Acquired { count: 1, token: None, lease_ms: lease, sent_at, streak, unconfirmed: true });
            handoff.early = Some(successor.cell.state.lock().unwrap().generation);
            handoff.candidate.claim.hand(PendingHold::new(Level { holder: successor, hold }));
            (handoff.wake)();
        }
        Some(handoff)
    }

    pub fn successor(&self) -> &Arc<Holder> {
        &self.candidate.holder
    }

    /// Who the release script hands the lock to, and with which lease (release.rs).
    pub fn target(&self) -> (&Holder, u64) {
        (&self.candidate.holder, self.lease_ms)
    }

    /// Applies the release script's outcome to the successor: its reply, or the
    /// error of a script that did not run (or whose outcome could not be learned
    /// before the successor's hold would have ended).
    pub async fn settle(self, outcome: &Result<ReleaseReply>) {
        let successor = self.candidate.holder.clone();
        let handed = match outcome {
            Ok(ReleaseReply::Handed(token)) => Ok(Some(*token)),
            Ok(_) => Ok(None),
            Err(e) => Err(e.clone()),
        };
        match (self.early, handed) {
            (Some(generation), Ok(Some(_))) => {
                successor.cell.confirm_handed(generation);
                if successor.cell.deadline_of(generation).is_none() {
                    // Settled late (unanswered.rs): the hold was reported lost meanwhile,
                    // so the field it was handed is nobody's. (Its operation lock is ours.)
                    if let Err(e) = release_revived(&successor, generation).await {
                        tracing::debug!(lock = %successor.names.display(), error = %e, "could not delete a lost successor's field; it expires with its lease");
                    }
                }
            }
            (Some(generation), Ok(None)) => {
                successor.cell.mark_lost(
                    generation,
                    "it was handed over by a holder whose own hold was already gone on the server (expired or force-unlocked)",
                );
            }
            (Some(generation), Err(e)) => {
                successor.cell.mark_lost(generation, &format!("the hand-over to it could not be confirmed: {}", e.message()));
            }
            (None, Ok(Some(token))) => {
                let token = successor.is_fenced().then_some(token);
                let hold = successor.apply(Acquired { count: 1, token, lease_ms: self.candidate.lease_ms, sent_at: self.sent_at, streak: self.streak, unconfirmed: false });
                self.candidate.claim.hand(PendingHold::new(Level { holder: successor, hold }));
                (self.wake)();
            }
            (None, _) => {
                // Not handed: the acquire goes on by itself and tries at once.
                self.candidate.unclaim();
                (self.wake)();
            }
        }
        self.candidate.claim_guard.lock().unwrap().take();
    }
}
