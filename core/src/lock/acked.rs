//! The acquire behind Sentinel or on a Cluster with a replica-ack policy (DESIGN §3,
//! "Topologies"): the script and its acknowledgement go in one pipeline to the
//! lock's master (transport/conn/acked.rs), and a hold the policy did not confirm is
//! never kept: it is undone by the lost-reply resolver (unanswered.rs), holding the
//! operation lock, before the caller can act on the error.
//!
//! The script also records what it took under a key of this acquire's own
//! (`ferrolock_grant:{n}:<request id>`, with the lease): a read-back after a lost reply
//! looks for that record, not for the holder's field, which a release lost in a
//! failover may have left behind (adopting it handed the previous fencing token out
//! again). A record found is kept only once a later write of this client reached the
//! replicas (`WAIT` after refreshing it: replication is one ordered stream). Redisson's
//! hash is left as it is, so its RLock still interoperates.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::holder::{Holder, Level, PendingHold};
use super::granted::{apply_acquired, decode_acquire, twice_failed, unanswered_acquire, AcquireReply};
use super::unanswered;
use super::wire;
use crate::error::{Error, Result};
use crate::hold::pending::OpGuard;
use crate::transport::{Acked, Conn, Unconfirmed};
use crate::waiting::Attempt;

/// One acknowledged acquire attempt (under the holder's operation lock, `guard`).
pub(super) async fn acquire_once(h: Arc<Holder>, lease_ms: Option<u64>, guard: OpGuard) -> Result<Attempt<PendingHold>> {
    let conn = h.ctx.conn()?;
    let config = &h.ctx.config;
    let lease = lease_ms.unwrap_or_else(|| config.watchdog_ms());
    let context = h.context("acquiring");
    for _ in 0..2 {
        let grant = h.names.grant(h.ctx.next_request());
        let call = wire::acquire(&h, lease, Some(&grant));
        let sent_at = Instant::now();
        let (value, outcome) = match conn.request_acked(call.to_cmd(), Some(call.script()), &h.names.name, config).await {
            Ok(Acked::Sent(value, outcome)) => (value, outcome),
            Ok(Acked::Refused(shortfall)) => return Err(Error::unreplicated(&context, shortfall, false, config.replica_ack_timeout)),
            Ok(Acked::NoWaitAof { version, address }) => return Err(Error::no_waitaof(&context, &version, &address)),
            // Refused: nothing was sent, so nothing to read back.
            Err(e) if e.is_connection_refusal() => return Err(Error::from_redis(&e, &context)),
            Err(e) if Error::is_ambiguous(&e) => {
                tracing::debug!(lock = %h.names.display(), error = %e, "acquire reply lost; looking for its grant");
                match read_back(&h, &conn, &grant, lease).await {
                    ReadBack::NotRun => continue,
                    ReadBack::Confirmed(count, token) => {
                        h.ctx.remove_latch_later(grant);
                        let token = h.is_fenced().then_some(token);
                        let hold = apply_acquired(&h, count, token, lease_ms, sent_at).await;
                        return Ok(Attempt::Acquired(PendingHold::new(Level { holder: h, hold })));
                    }
                    ReadBack::Unconfirmed(err) => {
                        h.ctx.remove_latch_later(grant);
                        let runtime = h.ctx.runtime.clone();
                        runtime.spawn(unanswered::settle(h, guard, unanswered_acquire(sent_at, lease)));
                        return Err(err);
                    }
                }
            }
            Err(e) => return Err(Error::from_redis(&e, &context)),
        };
        let reply = value
            .extract_error()
            .and_then(|value| Ok(redis::from_redis_value::<AcquireReply>(value)?))
            .map_err(|e| Error::from_redis(&e, &context))?;
        if !reply.is_acquired() {
            return decode_acquire(&h, reply, lease_ms, sent_at).await;
        }
        let err = match outcome {
            Ok(()) => {
                h.ctx.remove_latch_later(grant);
                return decode_acquire(&h, reply, lease_ms, sent_at).await;
            }
            Err(Unconfirmed::Short(shortfall)) => Error::unreplicated(&context, shortfall, true, config.replica_ack_timeout),
            Err(Unconfirmed::Failed(e)) => Error::from_redis(&e, &format!("{context} (waiting for its replicas)")),
        };
        // Taken, but not where the policy wants it: a failover now could lose it.
        h.ctx.remove_latch_later(grant);
        let runtime = h.ctx.runtime.clone();
        runtime.spawn(unanswered::settle(h, guard, unanswered_acquire(sent_at, lease)));
        return Err(err);
    }
    Err(twice_failed(&h))
}

/// What a read-back after a lost reply found.
enum ReadBack {
    /// No record: the acquire did not run (on this master); sending it again is safe.
    NotRun,
    /// It ran, took the hold to this count (and token), and the replicas have it.
    Confirmed(u32, u64),
    /// It ran, or nobody can say: the caller gets this, a resolver settles the rest.
    Unconfirmed(Error),
}

/// Looks for this acquire's grant record on a fresh connection (the one that failed
/// was retired), with a few retries while it re-establishes itself; a record found is
/// refreshed (a write) with the acknowledgement, which confirms the acquire too.
async fn read_back(h: &Holder, conn: &Conn, grant: &[u8], lease_ms: u64) -> ReadBack {
    let context = h.context("checking after a lost reply on");
    let config = &h.ctx.config;
    let mut delay = Duration::from_millis(20);
    let give_up = Instant::now() + config.connect_timeout + config.response_timeout;
    let record: Option<String> = loop {
        match redis::cmd("GET").arg(grant).query_async(&mut conn.clone()).await {
            Ok(record) => break record,
            Err(e) if Error::is_ambiguous(&e) && Instant::now() + delay < give_up => {
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_millis(500));
            }
            Err(e) => return ReadBack::Unconfirmed(Error::from_redis(&e, &context)),
        }
    };
    let Some(record) = record else { return ReadBack::NotRun };
    let (count, token) = record.split_once(':').unwrap_or((&record, "0"));
    let (count, token) = (count.parse().unwrap_or(1), token.parse().unwrap_or(0));
    let refresh = redis::cmd("PEXPIRE").arg(grant).arg(lease_ms).to_owned();
    let timeout = config.replica_ack_timeout;
    ReadBack::Unconfirmed(match conn.request_acked(refresh, None, &h.names.name, config).await {
        Ok(Acked::Sent(_, Ok(()))) => return ReadBack::Confirmed(count, token),
        Ok(Acked::Sent(_, Err(Unconfirmed::Short(shortfall)))) => Error::unreplicated(&context, shortfall, true, timeout),
        Ok(Acked::Refused(shortfall)) => Error::unreplicated(&context, shortfall, true, timeout),
        Ok(Acked::Sent(_, Err(Unconfirmed::Failed(e)))) | Err(e) => Error::from_redis(&e, &context),
        Ok(Acked::NoWaitAof { version, address }) => Error::no_waitaof(&context, &version, &address),
    })
}
