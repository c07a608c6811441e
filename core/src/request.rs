//! Calls whose script carries a reply latch of ferrolock's own (semaphores and
//! count-down latches: Redisson's scripts for them have none). A failure that
//! leaves the outcome unknown (a lost reply, a stalled or broken connection) is
//! answered by sending the same request again on a fresh connection: its latch
//! makes it act once and gives a retry the first answer. Latches are swept once
//! answered (reply_latch.rs) and expire by themselves.

use std::time::{Duration, Instant};

use redis::{FromRedisValue, ScriptInvocation};

use crate::ctx::Ctx;
use crate::error::{Error, ErrorKind, Result};

/// How long a request's latch lives: every retry of the request and a late
/// resolver must still find it.
pub(crate) fn latch_ttl(ctx: &Ctx) -> Duration {
    ctx.config.retry_window * 3
}

pub(crate) fn latch_ttl_ms(ctx: &Ctx) -> u64 {
    latch_ttl(ctx).as_millis() as u64
}

/// Sends `call` until Redis answers it, retrying after failures that leave its
/// outcome unknown, and after refusals for now (nothing ran), until `limit`.
/// `Connection` if it was never answered (the request may or may not have acted; its
/// latch knows).
pub(crate) async fn until_answered<T: FromRedisValue>(
    ctx: &Ctx,
    call: &ScriptInvocation<'_>,
    context: &str,
    limit: Instant,
) -> Result<T> {
    let mut delay = Duration::from_millis(10);
    loop {
        let mut conn = ctx.conn()?;
        match call.invoke_async::<T>(&mut conn).await {
            Ok(value) => return Ok(value),
            // A refusal for now (a Cluster failover's CLUSTERDOWN or MOVED) did not run it.
            Err(e) if Error::is_ambiguous(&e) || Error::is_refused_for_now(&e) => {
                if Instant::now() + delay >= limit {
                    if !Error::is_ambiguous(&e) {
                        return Err(Error::from_redis(&e, context));
                    }
                    return Err(Error::new(
                        ErrorKind::Connection,
                        format!("{context}: Redis did not answer ({e}); check that it is running and reachable"),
                    ));
                }
                tracing::debug!(error = %e, "{context}: no answer; sending the same request again");
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_millis(200));
            }
            Err(e) => return Err(Error::from_redis(&e, context)),
        }
    }
}
