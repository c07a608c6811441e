//! One watchdog per client: every watchdog_timeout / 3 it renews all holds taken
//! without an explicit lease, at most 100 per script call, all calls in flight at once.
//! A renewal that finds the owner field gone marks the hold lost; a hold that cannot
//! be renewed is marked lost by its own deadline timer (see holder.rs).
//!
//! A renewal call stays in flight until the latest deadline of its holds, not the
//! response timeout, and is sent again (on a fresh connection, see transport.rs)
//! after a connection failure: on a slow link a hold is kept as long as a renewal
//! can get through in time. Rounds do not wait for each other: a hold whose renewal
//! is still under way is left out of the next round.

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::client::ClientInner;
use crate::holder::Holder;
use crate::scripts;

/// Holds per renewal script call.
pub const BATCH: usize = 100;

/// What one renewal round did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RenewalReport {
    /// Holds renewed.
    pub renewed: usize,
    /// Holds found lost (owner field gone).
    pub lost: usize,
    /// Holds whose renewal call failed (retried next round; lost at their deadline).
    pub failed: usize,
    /// Script calls made.
    pub script_calls: usize,
    /// Wall time of the round.
    pub duration: Duration,
}

/// Each hold is renewed a third of the lease after its last confirmed renewal (or
/// its acquisition), like Redisson's per-lock timers; the watchdog looks every
/// twelfth of the lease and renews together every hold due before its next look,
/// so a renewal that took long is followed by the next one without waiting a
/// whole interval.
pub(crate) async fn run(client: Weak<ClientInner>, mut shutdown: watch::Receiver<bool>) {
    let look = match client.upgrade() {
        Some(c) => (c.config.renew_interval() / 4).max(Duration::from_millis(1)),
        None => return,
    };
    let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + look, look);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ticker.tick() => {}
            _ = shutdown.changed() => return,
        }
        let Some(c) = client.upgrade() else { return };
        if c.is_shut_down() {
            return;
        }
        let runtime = c.runtime.clone();
        let horizon = Instant::now() + look;
        runtime.spawn(async move {
            let report = renew_all(&c, Some(horizon)).await;
            if report.failed > 0 {
                tracing::warn!(failed = report.failed, "watchdog could not renew some locks before their deadline");
            }
        });
    }
}

/// One round over every hold due before `horizon`, leaving out holds whose renewal
/// is still in flight; with no horizon (an explicit round), over every hold.
pub(crate) async fn renew_all(client: &ClientInner, horizon: Option<Instant>) -> RenewalReport {
    let started = Instant::now();
    let holds: Vec<(Arc<Holder>, u64)> = client
        .held_holders()
        .into_iter()
        .filter_map(|h| h.begin_renewal(horizon).map(|generation| (h, generation)))
        .collect();
    let calls = holds.chunks(BATCH).map(|batch| renew_batch(client, batch));
    let mut report = RenewalReport::default();
    for part in futures_util::future::join_all(calls).await {
        report.renewed += part.renewed;
        report.lost += part.lost;
        report.failed += part.failed;
        report.script_calls += part.script_calls;
    }
    report.duration = started.elapsed();
    report
}

async fn renew_batch(client: &ClientInner, batch: &[(Arc<Holder>, u64)]) -> RenewalReport {
    let report = renew_until_deadline(client, batch).await;
    for (holder, generation) in batch {
        holder.end_renewal(*generation);
    }
    report
}

async fn renew_until_deadline(client: &ClientInner, batch: &[(Arc<Holder>, u64)]) -> RenewalReport {
    let mut report = RenewalReport::default();
    let mut call = scripts::RENEW.prepare_invoke();
    call.arg(client.config.watchdog_ms());
    for (holder, _) in batch {
        call.key(&holder.keys.name).arg(&holder.owner);
    }
    let mut delay = Duration::from_millis(10);
    loop {
        // Worth sending while any of the holds can still be saved.
        let until = batch.iter().filter_map(|(h, generation)| h.deadline_of(*generation)).max();
        let now = Instant::now();
        let Some(until) = until.filter(|u| *u > now) else {
            report.failed = batch.len();
            return report;
        };
        let Ok(conn) = client.conn() else { return report };
        let mut conn = conn.with_timeout(until - now);
        let sent_at = Instant::now();
        report.script_calls += 1;
        // A NOSCRIPT (SCRIPT FLUSH) makes it three requests: bound them together too.
        let reply = match tokio::time::timeout(until - now, call.invoke_async::<Vec<i64>>(&mut conn)).await {
            Ok(reply) => reply,
            Err(_) => Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "renewal past the deadline").into()),
        };
        match reply {
            Ok(flags) if flags.len() == batch.len() => {
                for ((holder, generation), flag) in batch.iter().zip(flags) {
                    if flag == 1 {
                        holder.renewed(*generation, sent_at);
                        report.renewed += 1;
                    } else {
                        holder.renewal_found_gone(*generation);
                        report.lost += 1;
                    }
                }
                return report;
            }
            Ok(flags) => {
                tracing::error!(expected = batch.len(), got = flags.len(), "unexpected renewal reply");
                report.failed = batch.len();
                return report;
            }
            Err(e) if crate::error::Error::is_ambiguous(&e) => {
                tracing::debug!(error = %e, "renewal call failed; sending it again");
                tokio::time::sleep(delay.min(until.saturating_duration_since(Instant::now()))).await;
                delay = (delay * 2).min(Duration::from_millis(200));
            }
            Err(e) => {
                let e = crate::error::Error::from_redis(&e, "renewing held locks");
                tracing::warn!(error = %e, "renewal refused");
                report.failed = batch.len();
                return report;
            }
        }
    }
}
