//! Calls of a holder that Redis never answered in time: an acquire whose reply was
//! lost and could not be read back, or a release whose retries ran out (its unlock
//! latch lives only the retry window, so a retry after that could act twice). The
//! caller gets its answer at once from the local view, which takes the call as having
//! had the effect it tells the caller (an acquire: none; a release: the levels given
//! up); this settles the server with that view as soon as Redis answers: the levels
//! of the holder's field that the local view does not account for are released (a
//! release that had not run runs again, with its hand-off if it had one), and a
//! hand-off's successor learns from its own field whether the lock is really its own.
//!
//! It holds the holder's operation lock until done (a hand-off also holds its
//! successor's), so no call of theirs sees a half-settled state. It gives up only
//! when the local view accounts for nothing and what the call may have left would
//! have expired by itself, or when the client is gone.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::handoff::Handoff;
use super::holder::Holder;
use super::release::{release_script, Levels, ReleaseReply};
use crate::error::{Error, ErrorKind, Result};
use crate::hold::pending::OpGuard;
use crate::hold::Released;

/// A call of a holder sent and never answered.
pub(crate) struct Unanswered {
    /// When levels it may have left on the server expire at the latest, renewed by nobody.
    pub expires_by: Instant,
    /// The hand-off the release was making, settled with its outcome.
    pub handoff: Option<Handoff>,
}

/// A release Redis did not answer within the retry window: it may have run, and its
/// latch may expire before Redis answers, so it cannot be sent again as it is. The
/// local view takes it as done (the caller gives the level up either way: nothing
/// renews it from now) and [`settle`] makes Redis agree once it answers,
/// running the release again if it had not run, and settles its hand-off.
pub(crate) fn release(h: &Arc<Holder>, all: bool, guard: OpGuard, handoff: Option<Handoff>) -> Result<Released> {
    let window = h.ctx.config.retry_window;
    let (outcome, lease_ms) = {
        let mut st = h.cell.state.lock().unwrap();
        st.releasing = false;
        let lease_ms = st.lease_ms.max(handoff.as_ref().map_or(0, |handoff| handoff.lease_ms));
        let outcome = if st.count > 0 {
            if all || st.count == 1 {
                h.cell.finish(&mut st);
                Ok(Released::Unlocked)
            } else {
                st.count -= 1;
                Ok(Released::StillHeld(st.count))
            }
        } else if st.lost_levels > 0 {
            // Its deadline passed during the retries: the loss was told (Redis may have
            // expired it first); what may be left of its field goes once Redis answers.
            st.lost_levels = if all { 0 } else { st.lost_levels - 1 };
            Err(st.lost_error.clone().unwrap_or_else(|| h.cell.lost_error("it was lost")))
        } else {
            // A hold this holder does not know here (taken under its id elsewhere):
            // nothing tells what Redis should be left with.
            return Err(Error::new(
                ErrorKind::Connection,
                format!(
                    "releasing lock \"{}\": Redis did not answer within the retry window ({window:?}), so the release \
                     may or may not have run; check with hold_count once Redis answers",
                    h.names.display()
                ),
            ));
        };
        (outcome, lease_ms)
    };
    if outcome.is_ok() {
        tracing::warn!(
            lock = %h.names.display(),
            owner = %h.owner,
            "Redis did not answer the release of lock \"{}\" within the retry window ({window:?}); the level is \
             released here and the client completes the release on the server as soon as Redis answers",
            h.names.display(),
        );
    }
    // A field nobody renews is gone a lease after its last renewal, which may still land.
    let expires_by = Instant::now() + Duration::from_millis(lease_ms) * 2;
    let call = Unanswered { expires_by, handoff };
    h.ctx.runtime.spawn(settle(h.clone(), guard, call));
    outcome
}

/// Settles `call` once Redis answers (see the module comment), holding `guard`.
pub(crate) async fn settle(h: Arc<Holder>, guard: OpGuard, call: Unanswered) {
    let _guard = guard;
    let Unanswered { expires_by, mut handoff } = call;
    let mut delay = Duration::from_millis(20);
    loop {
        // The levels the local view accounts for: only a loss changes them meanwhile.
        let expected = h.cell.state.lock().unwrap().count;
        let conn = match h.ctx.conn() {
            Ok(conn) if expected > 0 || Instant::now() < expires_by => conn,
            gone => {
                let why = gone.err().unwrap_or_else(|| Error::new(ErrorKind::Connection, "Redis did not answer before its lease ran out"));
                if let Some(handoff) = handoff {
                    handoff.settle(&Err(why)).await;
                }
                return;
            }
        };
        let mut read_conn = conn.clone();
        match read_fields(&h, handoff.as_ref(), &mut read_conn).await {
            Ok((count, successor)) => {
                let extra = count - expected as i64;
                let reply = if extra > 0 {
                    // Levels nobody accounts for: an acquire that ran, or a release that did not.
                    let lease = if expected == 0 { 0 } else { h.cell.state.lock().unwrap().lease_ms };
                    let latch = h.names.latch(h.ctx.next_request());
                    match release_script(&h, conn, latch, lease, Levels::Some(extra as u32), handoff.as_ref().map(Handoff::target)).await {
                        Ok(Some(reply)) => {
                            tracing::info!(lock = %h.names.display(), owner = %h.owner, levels = extra, "released levels of a call Redis had not answered");
                            reply
                        }
                        Ok(None) => {
                            tracing::debug!(lock = %h.names.display(), "no answer yet to a call Redis had not answered; retrying");
                            continue;
                        }
                        Err(e) => {
                            tracing::debug!(lock = %h.names.display(), error = %e, "could not settle a call Redis had not answered yet; retrying");
                            tokio::time::sleep(delay).await;
                            delay = (delay * 2).min(Duration::from_millis(500));
                            continue;
                        }
                    }
                } else {
                    // It had its effect: a release that handed over left the successor's field.
                    match successor {
                        Some((held, token)) if held > 0 => ReleaseReply::Handed(token),
                        _ => ReleaseReply::Released,
                    }
                };
                if let Some(handoff) = handoff.take() {
                    handoff.settle(&Ok(reply)).await;
                }
                if expected == 0 {
                    // Nothing held here any more: a note the hold left goes with it now
                    // (the release's own removal may not have got through either).
                    super::note::remove(&h, read_conn).await;
                }
                return;
            }
            Err(e) => tracing::debug!(lock = %h.names.display(), error = %e, "a call Redis had not answered is still unsettled; retrying"),
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_millis(500));
    }
}

/// The holder's hold count on the server and, with a hand-off, its successor's (and
/// the token counter, for a fenced successor: nobody else can have taken one since).
async fn read_fields(h: &Holder, handoff: Option<&Handoff>, conn: &mut crate::transport::Conn) -> redis::RedisResult<(i64, Option<(i64, u64)>)> {
    let successor = handoff.map(|handoff| handoff.successor());
    let mut pipe = redis::pipe();
    pipe.hget(&h.names.name, &*h.field);
    let Some(successor) = successor else {
        let (count,): (Option<i64>,) = pipe.query_async(conn).await?;
        return Ok((count.unwrap_or(0), None));
    };
    pipe.hget(&successor.names.name, &*successor.field);
    if successor.is_fenced() {
        pipe.get(&successor.names.token());
        let (count, held, token): (Option<i64>, Option<i64>, Option<u64>) = pipe.query_async(conn).await?;
        return Ok((count.unwrap_or(0), Some((held.unwrap_or(0), token.unwrap_or(0)))));
    }
    let (count, held): (Option<i64>, Option<i64>) = pipe.query_async(conn).await?;
    Ok((count.unwrap_or(0), Some((held.unwrap_or(0), 0))))
}
