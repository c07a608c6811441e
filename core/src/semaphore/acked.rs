//! Semaphore and permit takes behind Sentinel or on a Cluster with a replica-ack
//! policy (DESIGN §3, "Topologies"): the take and its acknowledgement in one pipeline
//! to the semaphore's master (transport/conn/acked.rs). A take carries its own reply
//! latch (or permit id), so sending it again after a lost reply acts once; its scripts
//! answer 2 when an earlier try had taken what it asks, whose acknowledgement nobody
//! saw: such a take, and one the policy did not confirm, is given back by the caller's
//! resolver (permits back, the permit released) and fails.

use std::time::{Duration, Instant};

use redis::{Cmd, Script, Value};

use crate::ctx::Ctx;
use crate::error::{Error, ErrorKind, Result};
use crate::transport::{Acked, Unconfirmed};

/// What an acknowledged take came to.
pub(super) enum Take {
    /// Taken now (the script's reply) and confirmed by the replicas.
    Confirmed(Value),
    /// Not taken (the script's reply: not enough free).
    Busy(Value),
    /// Taken, or taken by an earlier try, and not confirmed: give it back, then fail with this.
    Undo(Error),
}

/// `EVALSHA <script> <keys> <keys...> <args...>` as a command (for the acknowledgement's pipeline).
pub(super) fn evalsha(script: &Script, keys: &[&[u8]], args: &[&[u8]]) -> Cmd {
    let mut cmd = redis::cmd("EVALSHA");
    cmd.arg(script.get_hash()).arg(keys.len());
    for part in keys.iter().chain(args) {
        cmd.arg(*part);
    }
    cmd
}

/// Sends `take` with the acknowledgement until Redis answers or `limit` passes
/// (Connection then: the take may or may not have acted, its latch knows); `taken`
/// tells from the script's reply whether it took now (1), earlier (2) or nothing.
pub(super) async fn take(
    ctx: &Ctx,
    take: Cmd,
    script: &Script,
    key: &[u8],
    context: &str,
    limit: Instant,
    taken: impl Fn(&Value) -> u8,
) -> Result<Take> {
    let config = &ctx.config;
    let mut delay = Duration::from_millis(10);
    loop {
        let conn = ctx.conn()?;
        let (value, outcome) = match conn.request_acked(take.clone(), Some(script), key, config).await {
            Ok(Acked::Sent(value, outcome)) => (value.extract_error().map_err(|e| Error::from_redis(&e, context))?, outcome),
            Ok(Acked::Refused(shortfall)) => return Err(Error::unreplicated(context, shortfall, false, config.replica_ack_timeout)),
            Ok(Acked::NoWaitAof { version, address }) => return Err(Error::no_waitaof(context, &version, &address)),
            Err(e) if Error::is_ambiguous(&e) && Instant::now() + delay < limit => {
                tracing::debug!(error = %e, "{context}: no answer; sending the same request again");
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_millis(200));
                continue;
            }
            Err(e) if Error::is_ambiguous(&e) => {
                return Err(Error::new(
                    ErrorKind::Connection,
                    format!("{context}: Redis did not answer ({e}); check that it is running and reachable"),
                ))
            }
            Err(e) => return Err(Error::from_redis(&e, context)),
        };
        return Ok(match (taken(&value), outcome) {
            (0, _) => Take::Busy(value),
            (1, Ok(())) => Take::Confirmed(value),
            (1, Err(Unconfirmed::Short(shortfall))) => {
                Take::Undo(Error::unreplicated(context, shortfall, true, config.replica_ack_timeout))
            }
            (_, Err(Unconfirmed::Failed(e))) => Take::Undo(Error::from_redis(&e, &format!("{context} (waiting for its replicas)"))),
            _ => Take::Undo(Error::new(
                ErrorKind::NotReplicated,
                format!(
                    "{context}: an earlier try whose reply was lost had taken it, and whether the replicas have it \
                     is unknown, so it was given back. Retrying is safe"
                ),
            )),
        });
    }
}

/// A semaphore's acknowledged take of `permits` under `latch` (mod.rs's `take`):
/// the script's answer (1 taken, 0 not), or the error after giving back what the
/// policy did not confirm.
pub(super) async fn take_permits(semaphore: &super::Semaphore, permits: u64, latch: &[u8], context: &str, limit: Instant) -> Result<i64> {
    let (inner, script) = (&semaphore.inner, &*crate::scripts::SEMAPHORE_ACQUIRE);
    let ctx = &inner.ctx;
    let (permits_arg, ttl) = (permits.to_string(), crate::request::latch_ttl_ms(ctx).to_string());
    let cmd = evalsha(script, &[&inner.names.name, latch], &[permits_arg.as_bytes(), ttl.as_bytes()]);
    let flag = |v: &Value| match v {
        Value::Int(n) => *n as u8,
        _ => 0,
    };
    match take(ctx, cmd, script, &inner.names.name, context, limit, flag).await? {
        Take::Confirmed(_) => Ok(1),
        Take::Busy(_) => Ok(0),
        Take::Undo(err) => {
            let until = Instant::now() + crate::request::latch_ttl(ctx) / 2;
            ctx.runtime.spawn(super::settle(semaphore.clone(), permits, latch.to_vec(), until));
            Err(err)
        }
    }
}
