//! What an acquire script answered and what the holder makes of it (shared by the
//! plain acquire, reentrant.rs, and the acknowledged one, acked.rs).

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::holder::{Holder, Level, PendingHold};
use super::release::{release_script, Levels, ReleaseReply};
use super::unanswered::Unanswered;
use super::wire;
use crate::error::{Error, ErrorKind, Result};
use crate::hold::state::Acquired;
use crate::hold::Hold;
use crate::waiting::Attempt;

/// After two connections failed in one attempt.
pub(super) fn twice_failed(h: &Holder) -> Error {
    Error::new(
        ErrorKind::Connection,
        format!("{}: the connection failed twice; check that Redis is reachable", h.context("acquiring")),
    )
}

/// What an acquire script answered: a bare hold count (acquired, no token: the
/// cheapest reply for the server), `{1, count, token}` (a fair take that left
/// waiters: `{1, 1, 0, head}`, see [`shift_queue`]) or `{0, pttl}`.
#[derive(Debug)]
pub(crate) enum AcquireReply {
    Acquired { count: i64, token: i64, head: Option<Vec<u8>> },
    Busy { pttl: i64 },
}

impl AcquireReply {
    pub(super) fn is_acquired(&self) -> bool {
        matches!(self, AcquireReply::Acquired { .. })
    }
}

impl redis::FromRedisValue for AcquireReply {
    fn from_redis_value(value: redis::Value) -> std::result::Result<Self, redis::ParsingError> {
        use redis::Value::{Array, Int};
        match &value {
            Int(count) if *count > 0 => return Ok(AcquireReply::Acquired { count: *count, token: 0, head: None }),
            Array(parts) => match parts.as_slice() {
                [Int(1), Int(count), Int(token)] => return Ok(AcquireReply::Acquired { count: *count, token: *token, head: None }),
                [Int(1), Int(count), Int(token), redis::Value::BulkString(head)] => {
                    return Ok(AcquireReply::Acquired { count: *count, token: *token, head: Some(head.clone()) })
                }
                [Int(0), Int(pttl)] => return Ok(AcquireReply::Busy { pttl: *pttl }),
                _ => {}
            },
            _ => {}
        }
        Err(format!("unexpected acquire reply {value:?}").into())
    }
}

pub(super) async fn decode_acquire(h: &Arc<Holder>, reply: AcquireReply, lease_ms: Option<u64>, sent_at: Instant) -> Result<Attempt<PendingHold>> {
    match reply {
        AcquireReply::Acquired { count, token, head } => {
            if let Some(head) = head {
                shift_queue(h, head);
            }
            let token = h.is_fenced().then_some(token as u64);
            let hold = apply_acquired(h, count.max(1) as u32, token, lease_ms, sent_at).await;
            Ok(Attempt::Acquired(PendingHold::new(Level { holder: h.clone(), hold })))
        }
        AcquireReply::Busy { pttl } if pttl >= 0 => Ok(Attempt::Busy(Some(Duration::from_millis((pttl as u64).max(1))))),
        AcquireReply::Busy { .. } => Ok(Attempt::Busy(None)),
    }
}

/// Applies an acquire that left this holder's field at `count` levels (under the
/// holder's operation lock). Levels beyond the ones the holder accounts for plus this
/// one are left over from a call that had no effect as far as this client knows: a
/// release answered by a master whose write a failover then lost, say. Adopted, they
/// outlive the caller's last release: the holder keeps the lock, renewed, while its
/// caller believes it released, and each further lost release adds one (the failover
/// harness saw a holder end with 137). On a field of this client's own nobody else
/// can account for them, so they are released at once; a field of another client's
/// (an explicit owner: a hand-over) may carry levels that client took, and stays
/// adopted as it is.
pub(super) async fn apply_acquired(h: &Arc<Holder>, count: u32, token: Option<u64>, lease_ms: Option<u64>, sent_at: Instant) -> Hold {
    let expected = h.cell.state.lock().unwrap().count + 1;
    if count <= expected || !h.owner_is_ours() {
        return h.apply(Acquired::by_attempt(count, token, lease_ms, sent_at));
    }
    let hold = h.apply(Acquired::by_attempt(expected, token, lease_ms, sent_at));
    let surplus = count - expected;
    let lease = lease_ms.unwrap_or_else(|| h.ctx.config.watchdog_ms());
    let outcome = match h.ctx.conn() {
        Ok(conn) => release_script(h, conn, h.names.latch(h.ctx.next_request()), lease, Levels::Some(surplus), None).await,
        Err(e) => Err(e),
    };
    match outcome {
        Ok(Some(ReleaseReply::StillHeld)) => tracing::warn!(
            lock = %h.names.display(),
            owner = %h.owner,
            levels = surplus,
            "the acquire found {surplus} level(s) of this holder on the server that it had released (a release a \
             failover lost after it was answered); released them again"
        ),
        outcome => {
            // The field went with them (gone meanwhile, or more left than it had): the
            // hold it counted on may not be there.
            let why = match outcome {
                Ok(None) => format!("releasing {surplus} leftover level(s) got no answer"),
                Ok(Some(reply)) => format!("releasing {surplus} leftover level(s) answered {reply:?}"),
                Err(e) => format!("releasing {surplus} leftover level(s) failed: {}", e.message()),
            };
            tracing::warn!(lock = %h.names.display(), owner = %h.owner, "{why}; they expire with the lease unless released");
        }
    }
    hold
}

/// The second half of a fair take that left waiters: moving them up a turn
/// (fair_shift.lua), sent once the taker has its reply rather than inside the take,
/// where rewriting every waiter's timeout held up each hand-off. Best effort and
/// never repeated: a shift that does not land leaves the timeouts a turn late.
fn shift_queue(h: &Holder, head: Vec<u8>) {
    let call = wire::fair_shift(h, &head);
    let Ok(mut conn) = h.ctx.conn() else { return };
    let lock = h.names.display().to_string();
    h.ctx.runtime.spawn(async move {
        if let Err(e) = call.invoke::<i64>(&mut conn).await {
            tracing::debug!(%lock, error = %e, "could not move the fair queue up a turn; its timeouts stay a turn late");
        }
    });
}

/// An acquire sent at `sent_at` with `lease` ms that was never answered: a hold it
/// took, renewed by nobody, is gone by the end of that lease.
pub(super) fn unanswered_acquire(sent_at: Instant, lease_ms: u64) -> Unanswered {
    Unanswered { expires_by: sent_at + Duration::from_millis(lease_ms), handoff: None }
}
