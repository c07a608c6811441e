//! Waiters that say why they wait: an acquire that has waited `slow_wait_log`
//! (default 10 s) logs, at INFO, the lock and who holds it (their notes, note.rs),
//! and again each time its wait doubles; an acquire that times out keeps who held the
//! lock at that moment for its caller's error ([`crate::Lock::last_holder`]).

use std::time::{Duration, Instant};

use super::holder::Holder;
use super::who::human_duration;
use super::status::{snapshot, LockStatus};

/// The log of one waiting acquire: when it started waiting. Its lines come from the
/// acquire's own future (`Reporter::run`, polled beside the wait), which spawns nothing.
pub(crate) struct Reporter {
    started: Instant,
    after: Duration,
}

/// Starts logging for an acquire that starts waiting now, unless its wait ends
/// before the first line is due.
pub(crate) fn start(holder: &Holder, deadline: Option<Instant>) -> Option<Reporter> {
    let after = holder.ctx.config.slow_wait_log?;
    let started = Instant::now();
    if deadline.is_some_and(|d| d <= started + after) {
        return None;
    }
    Some(Reporter { started, after })
}

impl Reporter {
    /// Logs `slow_wait_log` after the wait started and each time the wait doubles;
    /// never returns (the wait drops it).
    pub async fn run(&self, holder: &Holder) {
        let mut waited = self.after;
        loop {
            tokio::time::sleep_until((self.started + waited).into()).await;
            let seen = match read(holder).await {
                Ok(status) => describe(&status),
                Err(e) => format!("its holder could not be read ({})", e.message()),
            };
            tracing::info!(
                lock = %holder.names.display(),
                owner = %holder.owner,
                waited_ms = waited.as_millis() as u64,
                "waiting {} for lock \"{}\": {seen}",
                human_duration(waited),
                holder.names.display()
            );
            waited *= 2;
        }
    }
}

/// Reads who holds the lock and keeps it for [`crate::Lock::last_holder`].
pub(crate) async fn remember_holder(holder: &Holder) {
    // Bounded: the caller's wait is over already.
    let read = tokio::time::timeout(holder.ctx.config.response_timeout, read(holder)).await;
    let seen = match read {
        Ok(Ok(status)) => status.holders.into_iter().next(),
        _ => None,
    };
    holder.extras.lock().unwrap().get_or_insert_with(Default::default).last_seen = seen;
}

async fn read(holder: &Holder) -> crate::Result<LockStatus> {
    snapshot(&holder.ctx.conn()?, &holder.ctx.transport, &holder.names).await
}

/// "held by billing on host-7 pid 4242 (thread worker-3) for 5 m 12 s; lease 20.1 s
/// left; 3 clients waiting".
fn describe(status: &LockStatus) -> String {
    if status.holders.is_empty() {
        return "it is free now (being handed to another waiter)".to_string();
    }
    let holders: Vec<String> = status.holders.iter().map(|h| h.describe()).collect();
    let mut text = format!("held by {}", holders.join(", and by "));
    match status.remaining_lease {
        Some(Duration::MAX) => text.push_str("; no expiry"),
        Some(left) => text.push_str(&format!("; lease {:.1} s left", left.as_secs_f64())),
        None => {}
    }
    text.push_str(&format!("; {} client(s) waiting", status.subscribers));
    text
}
