//! Same-client permit hand-off: a release that finds a waiter of its own client
//! queued for exactly the permits it returns gives them straight to it, without
//! a call: permits are nobody's, so permits taken on the server may change hands
//! inside the client, and the count on the server never moves. Nobody else,
//! Redisson's waiters included, can see them free in between, and nothing can fail
//! half-way. The release then only reads the count it answers with, after letting
//! the waiter run.
//!
//! Waiters of other clients only wake by messages, so after [`STREAK`] hand-offs
//! in a row on a name the next release frees its permits for everyone (the client
//! counts them per channel: permits carry no holder to count them).

use std::sync::Arc;
use std::time::Instant;

use super::{Semaphore, Taken};
use crate::error::Result;
use crate::hold::pending::Pending;
use crate::request::{latch_ttl_ms, until_answered};
use crate::scripts;
use crate::waiting::claim::Claim;
use crate::waiting::Successor;

/// Hand-offs in a row on one name in one client before a release frees its permits.
/// A free leaves them idle for about two round-trips (the release, then a woken
/// waiter's try) where a hand-off takes microseconds; the streak bounds how long
/// other clients' waiters, which only wake by messages, wait behind it. Why 12 and
/// not 8: the figures are in the commit that set it.
pub(crate) const STREAK: u32 = 12;

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
    /// Only a release of exactly the permits it waits for: a hand-off is then all
    /// or nothing, with nothing left over to free.
    fn try_claim(&self, offer: u64) -> bool {
        offer == self.permits && self.claim.claim()
    }

    fn as_any(self: Arc<Self>) -> Arc<dyn std::any::Any + Send + Sync> {
        self
    }
}

/// Gives `permits` back: to a waiter of this client when one is queued for them,
/// else to everyone (release.lua). Returns the free permits right after.
pub(super) async fn release(semaphore: Semaphore, permits: u64) -> Result<u64> {
    let inner = &semaphore.inner;
    let ctx = &inner.ctx;
    // Not while shutting down: the waiter's acquire ends with `Cancelled` instead.
    if !ctx.is_shut_down() {
        if let Some(claimed) = ctx.hub.claim_in_turn(&inner.names.channel, permits, STREAK) {
            // Only semaphore acquires offer a successor on a semaphore's channel.
            if let Ok(waiting) = claimed.successor.as_any().downcast::<Waiting>() {
                waiting.claim.hand(Pending::new(Taken { semaphore: semaphore.clone(), permits }));
                (claimed.wake)();
                // The waiter now sits in this thread's next-to-run slot; sending the
                // read first would wake the connection's task into that slot and queue
                // the waiter behind it and whatever else is queued: let it run first.
                tokio::task::yield_now().await;
                return inner.read(&semaphore.context("reading, after handing permits over,"), "a number of permits").await;
            }
        }
    }
    let latch = inner.names.request_reply(ctx.next_request());
    let mut call = scripts::SEMAPHORE_RELEASE.prepare_invoke();
    call.key(&inner.names.name)
        .key(&inner.names.channel)
        .key(&latch)
        .arg(permits)
        .arg(ctx.transport.publish_command())
        .arg(latch_ttl_ms(ctx));
    let free: i64 = until_answered(ctx, &call, &semaphore.context("releasing permits of"), Instant::now() + ctx.config.retry_window).await?;
    ctx.remove_latch_later(latch);
    Ok(free.max(0) as u64)
}
