//! The protocol of Redisson's RLock and RFencedLock (DESIGN §2): the acquire and
//! release scripts, their replies, and what a lost reply means.
//!
//! Acquire: the script takes the lock (or re-enters) and answers the hold count
//! (and the fencing token), or the PTTL of someone else's hold. A lost reply is
//! settled by reading the holder's own field on a fresh connection; if Redis cannot
//! say in time, the caller gets the error and what that acquire took is given back
//! as soon as Redis answers (unanswered.rs).
//!
//! Release: idempotent through the reply latch (retries reuse the request id and
//! get the first answer) for as long as the latch lives, the retry window; one
//! still unanswered then is done as far as the caller is concerned and completed on
//! the server as soon as Redis answers (unanswered.rs). A release that ends the
//! hold may hand it straight to a waiter of the same client (handoff.rs).

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::granted::{apply_acquired, decode_acquire, twice_failed, unanswered_acquire, AcquireReply};
use super::handoff::{Directed, Handoff, STREAK};
use super::holder::{Holder, Level, PendingHold};
use super::release::{release_script, Levels, ReleaseReply};
use super::unanswered;
use super::wire;
use crate::error::{Error, ErrorKind, Result};
use crate::hold::pending::OpGuard;
use crate::hold::Released;
use crate::waiting::Attempt;

/// One acquire attempt (under the holder's operation lock, `guard`), off Sentinel and
/// Cluster or with the replica acknowledgement off (acked.rs's otherwise).
pub(crate) async fn acquire_once(h: Arc<Holder>, lease_ms: Option<u64>, guard: OpGuard) -> Result<Attempt<PendingHold>> {
    if h.ctx.is_shut_down() {
        return Err(Error::shut_down());
    }
    let mut conn = h.ctx.conn()?;
    let lease = lease_ms.unwrap_or_else(|| h.ctx.config.watchdog_ms());
    let before = h.cell.state.lock().unwrap().count;
    let call = wire::acquire(&h, lease, None);
    for _ in 0..2 {
        // The lease counts from the send, not from before a new connection's set-up.
        conn.ready().await.map_err(|e| Error::from_redis(&e, &h.context("acquiring")))?;
        let sent_at = Instant::now();
        match call.invoke::<AcquireReply>(&mut conn).await {
            Ok(reply) => return decode_acquire(&h, reply, lease_ms, sent_at).await,
            // Refused: nothing was sent, so nothing to read back (a Redlock member that is down).
            Err(e) if e.is_connection_refusal() => return Err(Error::from_redis(&e, &h.context("acquiring"))),
            Err(e) if Error::is_ambiguous(&e) => {
                // The script may or may not have run: our own field tells which. The
                // connection that failed was retired, so the read goes to a fresh one.
                tracing::debug!(lock = %h.names.display(), error = %e, "acquire reply lost; reading the hold back");
                let (count, token) = match read_own_field(&h, &mut conn).await {
                    Ok(field) => field,
                    Err(err) => {
                        // Still unknown: the caller gets the error, and a resolver settles
                        // it (holding the operation lock, so no call sees a half state).
                        let runtime = h.ctx.runtime.clone();
                        runtime.spawn(unanswered::settle(h, guard, unanswered_acquire(sent_at, lease)));
                        return Err(err);
                    }
                };
                if count > before as i64 {
                    let hold = apply_acquired(&h, count as u32, token, lease_ms, sent_at).await;
                    return Ok(Attempt::Acquired(PendingHold::new(Level { holder: h, hold })));
                }
                // It did not run: sending it again is safe.
            }
            Err(e) => return Err(Error::from_redis(&e, &h.context("acquiring"))),
        }
    }
    Err(twice_failed(&h))
}

/// Reads this holder's hold count (and, fenced, the token counter) with a few
/// retries while the connection re-establishes itself.
async fn read_own_field(h: &Holder, conn: &mut crate::transport::Conn) -> Result<(i64, Option<u64>)> {
    let mut pipe = redis::pipe();
    pipe.hget(&h.names.name, &*h.field);
    if h.is_fenced() {
        pipe.get(&h.names.token());
    }
    let mut delay = Duration::from_millis(20);
    let give_up = Instant::now() + h.ctx.config.connect_timeout + h.ctx.config.response_timeout;
    loop {
        let read = if h.is_fenced() {
            pipe.query_async::<(Option<i64>, Option<u64>)>(conn).await
        } else {
            pipe.query_async::<(Option<i64>,)>(conn).await.map(|(count,)| (count, None))
        };
        match read {
            Ok((count, token)) => return Ok((count.unwrap_or(0), token)),
            Err(e) if Error::is_ambiguous(&e) && Instant::now() + delay < give_up => {
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_millis(500));
            }
            Err(e) => return Err(Error::from_redis(&e, &h.context("checking after a lost reply on"))),
        }
    }
}

/// Releases one level (or all), under the holder's operation lock (`guard`);
/// `directed`: the successor to hand to instead of the hub's first waiter.
pub(crate) async fn release_once(h: &Arc<Holder>, all: bool, guard: OpGuard, directed: Option<Directed>) -> Result<Released> {
    let (lease_ms, full, deadline, streak) = {
        let mut st = h.cell.state.lock().unwrap();
        if st.count == 0 && st.lost_levels > 0 {
            st.lost_levels = if all { 0 } else { st.lost_levels - 1 };
            return Err(st.lost_error.clone().unwrap_or_else(|| h.cell.lost_error("it was lost")));
        }
        // A holder that never acquired here (a hand-over) does not know the lease: keep the TTL.
        let lease_ms = if st.count == 0 { 0 } else { st.lease_ms };
        let full = st.count > 0 && (all || st.count == 1);
        st.releasing = full;
        (lease_ms, full, st.deadline, st.streak)
    };
    // Not while shutting down: the successor's acquire ends with `Cancelled` instead.
    // After a streak of hand-offs, free the lock: waiters of other clients only wake by message.
    // Not under a replica-ack policy: the successor's field would be written by the
    // release, which nothing acknowledges; freed, the lock goes to a waiter whose own
    // acquire is acknowledged.
    let hands_off = h.kind.hands_off() && !h.ctx.acknowledged();
    let mut handoff = if full && streak < STREAK && hands_off && !h.ctx.is_shut_down() {
        let claimed = match directed {
            Some(directed) => directed.take(),
            None => h.ctx.hub.claim_successor(&h.names.channel(), h.uid),
        };
        // Letting an unfenced successor go before the reply is only as safe as this
        // hold: it must outlive the reply (see handoff.rs). (Only read the clock when
        // there is a successor: every clock read shows in the uncontended cycle.)
        let early = || deadline > Instant::now() + h.ctx.config.response_timeout;
        claimed.and_then(|claimed| Handoff::start(claimed, early(), streak + 1))
    } else {
        drop(directed);
        None
    };
    let mut outcome = run_release(h, lease_ms, all, handoff.as_ref()).await;
    if let Some(known) = outcome.as_ref().map(|reply| *reply).transpose() {
        if let Some(handoff) = handoff.take() {
            let known = known.map_err(Error::clone);
            handoff.settle(&known).await;
            // The script failed before it wrote (a broken token counter of the
            // successor, say): release plainly; the successor finds out by itself.
            if known.is_err_and(|e| e.kind() != ErrorKind::Connection) {
                outcome = run_release(h, lease_ms, all, None).await;
            }
        }
    }
    // Each way clears `releasing` under the same lock as it ends the hold: a renewal
    // that finds the field gone in between would report a loss that never happened.
    match outcome {
        Ok(Some(reply)) => settle_release(h, reply, all),
        Ok(None) => unanswered::release(h, all, guard, handoff),
        Err(e) => {
            h.cell.state.lock().unwrap().releasing = false;
            Err(e)
        }
    }
}

fn settle_release(h: &Holder, reply: ReleaseReply, all: bool) -> Result<Released> {
    let mut st = h.cell.state.lock().unwrap();
    st.releasing = false;
    match reply {
        ReleaseReply::NotOwner if st.count > 0 => {
            let generation = st.generation;
            drop(st);
            h.cell.mark_lost(generation, "its owner field was gone when it was released (expired or force-unlocked)");
            let mut st = h.cell.state.lock().unwrap();
            st.lost_levels = st.lost_levels.saturating_sub(1);
            Err(st.lost_error.clone().unwrap_or_else(|| h.cell.lost_error("it was lost")))
        }
        ReleaseReply::NotOwner => Err(Error::new(
            ErrorKind::NotOwner,
            format!(
                "lock \"{}\" is not held by this holder ({}); acquire it before releasing it",
                h.names.display(), h.owner
            ),
        )),
        ReleaseReply::StillHeld if !all => {
            // Levels under its field that it does not count (a hand-over's, or ones a
            // failover left) stay on the server; its own last one ends its hold here,
            // or it would go on renewing a lock its caller believes released.
            if st.count > 1 {
                st.count -= 1;
            } else if st.count == 1 {
                h.cell.finish(&mut st);
            }
            Ok(Released::StillHeld(st.count))
        }
        ReleaseReply::StillHeld | ReleaseReply::Released | ReleaseReply::Handed(_) => {
            h.cell.finish(&mut st);
            Ok(Released::Unlocked)
        }
    }
}

async fn run_release(h: &Holder, lease_ms: u64, all: bool, handoff: Option<&Handoff>) -> Result<Option<ReleaseReply>> {
    let conn = h.ctx.conn()?;
    let levels = if all { Levels::All } else { Levels::Some(1) };
    release_script(h, conn, h.names.latch(h.ctx.next_request()), lease_ms, levels, handoff.map(Handoff::target)).await
}
