//! Same-client permit hand-off: a release that finds a waiter of its own client
//! queued for exactly the permits it returns gives them straight to it inside the
//! release script (one call, no message, no acquire of the waiter's own), instead
//! of making them free and waking waiters to race for them. On the server the
//! count never moves: nobody else, Redisson's waiters included, can see the
//! permits free in between.
//!
//! The waiter gets the permits only with the script's reply (permits are not
//! owned, so there is nothing to confirm later). A reply that never comes leaves
//! the waiter to go on by itself, and the release is settled in the background
//! (unanswered.rs): the permits go back free, whether the script ran or not.
//!
//! Waiters of other clients only wake by messages, so after [`STREAK`] hand-offs
//! in a row on a name the next release frees its permits for everyone (the client
//! counts them per channel: permits carry no holder to count them).

use std::sync::Arc;
use std::time::Instant;

use super::unanswered::settle;
use super::{Semaphore, Taken};
use crate::error::{ErrorKind, Result};
use crate::hold::pending::Pending;
use crate::request::{latch_ttl, latch_ttl_ms, until_answered};
use crate::scripts;
use crate::waiting::claim::Claim;
use crate::waiting::Successor;

/// Hand-offs in a row on one name in one client before a release frees its permits.
pub(crate) const STREAK: u32 = 8;

/// A queued acquire a release of the same client may hand its permits to.
pub(super) struct Waiting {
    permits: u64,
    pub claim: Claim<Pending<Taken>>,
}

impl Waiting {
    pub fn new(permits: u64) -> Arc<Waiting> {
        Arc::new(Waiting { permits, claim: Claim::default() })
    }
}

impl Successor for Waiting {
    /// Only a release of exactly the permits it waits for: what is handed over is
    /// then all or nothing, and so is what a settle gives back.
    fn try_claim(&self, offer: u64) -> bool {
        offer == self.permits && self.claim.claim()
    }

    fn as_any(self: Arc<Self>) -> Arc<dyn std::any::Any + Send + Sync> {
        self
    }
}

/// Gives `permits` back: to a waiter of this client when one is queued for them,
/// else to everyone. Returns the free permits right after.
pub(super) async fn release(semaphore: Semaphore, permits: u64) -> Result<u64> {
    let inner = &semaphore.inner;
    let ctx = &inner.ctx;
    // Not while shutting down: the waiter's acquire ends with `Cancelled` instead.
    let claimed = if ctx.is_shut_down() { None } else { ctx.hub.claim_in_turn(&inner.names.channel, permits, STREAK) };
    let successor = claimed.and_then(|c| Some((c.successor.as_any().downcast::<Waiting>().ok()?, c.wake)));
    let latch = inner.names.request_reply(ctx.next_request());
    let mut call = scripts::SEMAPHORE_RELEASE.prepare_invoke();
    call.key(&inner.names.name)
        .key(&inner.names.channel)
        .key(&latch)
        .arg(permits)
        .arg(ctx.transport.publish_command())
        .arg(latch_ttl_ms(ctx));
    if successor.is_some() {
        call.arg("handoff");
    }
    let sent_at = Instant::now();
    let answered: Result<i64> = until_answered(ctx, &call, &semaphore.context("releasing permits of"), sent_at + ctx.config.retry_window).await;
    match &answered {
        Ok(_) => ctx.remove_latch_later(latch),
        Err(e) if e.kind() == ErrorKind::Connection && successor.is_some() => {
            let settling = settle(semaphore.clone(), permits, latch, sent_at + latch_ttl(ctx) / 2, true);
            ctx.runtime.spawn(settling);
        }
        Err(_) => {}
    }
    if let Some((waiting, wake)) = successor {
        if answered.is_ok() {
            waiting.claim.hand(Pending::new(Taken { semaphore: semaphore.clone(), permits }));
        } else {
            // Not known to be handed: the acquire goes on by itself and tries at once.
            waiting.claim.unclaim();
        }
        wake();
    }
    Ok(answered?.max(0) as u64)
}
