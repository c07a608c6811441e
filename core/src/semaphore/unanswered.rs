//! Settling a semaphore request whose reply never came (give_back.lua), so that it
//! acts exactly once: an acquire's permits go back if it took any; a release that
//! handed its permits to a waiter (handoff.rs), which never got them, releases them.

use std::time::Instant;

use super::Semaphore;
use crate::request::{latch_ttl_ms, until_answered};
use crate::scripts;

/// Tries until Redis answers or the request's latch is about to expire (`until`).
/// `handoff`: the request was a hand-off release, else an acquire.
pub(super) async fn settle(semaphore: Semaphore, permits: u64, latch: Vec<u8>, until: Instant, handoff: bool) {
    let ctx = &semaphore.inner.ctx;
    let mut call = scripts::SEMAPHORE_GIVE_BACK.prepare_invoke();
    call.key(&semaphore.inner.names.name)
        .key(&semaphore.inner.names.channel)
        .key(&latch)
        .arg(permits)
        .arg(ctx.transport.publish_command())
        .arg(latch_ttl_ms(ctx));
    if handoff {
        call.arg("handoff");
    }
    let what = if handoff { "a release whose reply was lost" } else { "an acquire whose reply was lost" };
    match until_answered::<i64>(ctx, &call, &semaphore.context("settling an unanswered request of"), until).await {
        Ok(gave_back) => {
            if gave_back == 1 {
                tracing::info!(semaphore = %semaphore.name(), "{what}: {permits} permit(s) given back");
            }
            ctx.remove_latch_later(latch);
        }
        Err(e) => {
            tracing::warn!(semaphore = %semaphore.name(), "{e}; settling {what}: if it took (or handed) permits they stay taken")
        }
    }
}
