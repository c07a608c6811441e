//! What a client's locks did, counted where it happens (atomics, no locks on the
//! hot path), read as a [`Metrics`] snapshot and rendered in Prometheus's text
//! format so that users can serve it from their own HTTP endpoint.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// Upper bounds of the histogram buckets, in seconds: from a same-client hand-off
/// (well under 1 ms) to a long wait or a long critical section.
const BOUNDS: [f64; 16] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 60.0, 300.0];

/// How an acquire call ended.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Outcome {
    Acquired,
    NotAcquired,
    Failed,
    Cancelled,
}

impl Outcome {
    fn as_str(self) -> &'static str {
        match self {
            Outcome::Acquired => "acquired",
            Outcome::NotAcquired => "not_acquired",
            Outcome::Failed => "failed",
            Outcome::Cancelled => "cancelled",
        }
    }
}

/// Times one acquire call and records its outcome; a call dropped half-way counts
/// as cancelled. With the `spans` feature it is also a `tracing` span
/// `ferrolock.acquire` (fields `primitive`, `name`, `outcome`, `wait_ms`) that an
/// OpenTelemetry layer (tracing-opentelemetry) exports as is.
pub(crate) struct AcquireTiming<'a> {
    recorder: &'a Recorder,
    started: std::time::Instant,
    outcome: Outcome,
    #[cfg(feature = "spans")]
    span: tracing::Span,
}

impl<'a> AcquireTiming<'a> {
    #[cfg_attr(not(feature = "spans"), allow(unused_variables))]
    pub fn start(recorder: &'a Recorder, primitive: &str, name: &str) -> Self {
        AcquireTiming {
            recorder,
            started: std::time::Instant::now(),
            outcome: Outcome::Cancelled,
            #[cfg(feature = "spans")]
            span: tracing::info_span!(
                "ferrolock.acquire",
                primitive,
                name,
                outcome = tracing::field::Empty,
                wait_ms = tracing::field::Empty
            ),
        }
    }

    pub fn end<T>(mut self, result: &crate::error::Result<Option<T>>) {
        self.outcome = match result {
            Ok(Some(_)) => Outcome::Acquired,
            Ok(None) => Outcome::NotAcquired,
            Err(e) if e.kind() == crate::error::ErrorKind::Cancelled => Outcome::Cancelled,
            Err(_) => Outcome::Failed,
        };
    }
}

impl Drop for AcquireTiming<'_> {
    fn drop(&mut self) {
        let waited = self.started.elapsed();
        self.recorder.acquire(self.outcome, waited);
        #[cfg(feature = "spans")]
        {
            self.span.record("outcome", self.outcome.as_str());
            self.span.record("wait_ms", waited.as_secs_f64() * 1e3);
        }
    }
}

/// The counters of one client.
#[derive(Default)]
pub(crate) struct Recorder {
    outcomes: [AtomicU64; 4],
    wait: Buckets,
    hold: Buckets,
    renewals: AtomicU64,
    renewal_failures: AtomicU64,
    losses: AtomicU64,
    reconnects: AtomicU64,
    failovers: AtomicU64,
    failover_loss: Buckets,
}

#[derive(Default)]
struct Buckets {
    counts: [AtomicU64; BOUNDS.len() + 1],
    sum_ns: AtomicU64,
}

impl Buckets {
    fn observe(&self, d: Duration) {
        let secs = d.as_secs_f64();
        let i = BOUNDS.iter().position(|&b| secs <= b).unwrap_or(BOUNDS.len());
        self.counts[i].fetch_add(1, Relaxed);
        self.sum_ns.fetch_add(d.as_nanos().min(u64::MAX as u128) as u64, Relaxed);
    }

    fn snapshot(&self) -> Histogram {
        let counts: Vec<u64> = self.counts.iter().map(|c| c.load(Relaxed)).collect();
        Histogram {
            bounds: BOUNDS.to_vec(),
            count: counts.iter().sum(),
            counts,
            sum: self.sum_ns.load(Relaxed) as f64 / 1e9,
        }
    }
}

impl Recorder {
    /// An acquire call ended after waiting `waited`.
    pub fn acquire(&self, outcome: Outcome, waited: Duration) {
        self.outcomes[outcome as usize].fetch_add(1, Relaxed);
        self.wait.observe(waited);
    }

    /// A hold ended (released or lost) after `held`.
    pub fn hold_ended(&self, held: Duration) {
        self.hold.observe(held);
    }

    pub fn renewals(&self, renewed: u64, failed: u64) {
        self.renewals.fetch_add(renewed, Relaxed);
        self.renewal_failures.fetch_add(failed, Relaxed);
    }

    pub fn lost(&self) {
        self.losses.fetch_add(1, Relaxed);
    }

    pub fn reconnected(&self) {
        self.reconnects.fetch_add(1, Relaxed);
    }

    /// The client noticed a failover (transport/failover.rs).
    pub fn failover_noticed(&self) {
        self.failovers.fetch_add(1, Relaxed);
    }

    /// A hold was reported lost `after` the failover that took it was noticed.
    pub fn lost_after_failover(&self, after: Duration) {
        self.failover_loss.observe(after);
    }

    pub fn snapshot(&self, client_id: &str, holds_now: u64, waiters_now: u64) -> Metrics {
        let outcome = |o: Outcome| self.outcomes[o as usize].load(Relaxed);
        Metrics {
            client_id: client_id.to_string(),
            acquired: outcome(Outcome::Acquired),
            not_acquired: outcome(Outcome::NotAcquired),
            failed: outcome(Outcome::Failed),
            cancelled: outcome(Outcome::Cancelled),
            wait: self.wait.snapshot(),
            hold: self.hold.snapshot(),
            holds_now,
            waiters_now,
            renewals: self.renewals.load(Relaxed),
            renewal_failures: self.renewal_failures.load(Relaxed),
            losses: self.losses.load(Relaxed),
            reconnects: self.reconnects.load(Relaxed),
            failovers_noticed: self.failovers.load(Relaxed),
            failover_loss_report: self.failover_loss.snapshot(),
        }
    }
}

/// A histogram: `counts[i]` observations were at most `bounds[i]` seconds and more
/// than `bounds[i - 1]` (not cumulative); the last count is above every bound.
#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    /// Upper bounds of the buckets, in seconds, ascending.
    pub bounds: Vec<f64>,
    /// Observations per bucket; one more than `bounds` (the last is +Inf).
    pub counts: Vec<u64>,
    /// Sum of every observation, in seconds.
    pub sum: f64,
    /// Number of observations.
    pub count: u64,
}

/// A snapshot of what one client's locks did since it connected ([`crate::Client::metrics`]).
/// Acquires of a multi-lock are counted by each member's client, once per member.
#[derive(Debug, Clone, PartialEq)]
pub struct Metrics {
    /// The client these counters belong to.
    pub client_id: String,
    /// Acquire calls that got the lock.
    pub acquired: u64,
    /// Bounded acquire calls that ran out of time.
    pub not_acquired: u64,
    /// Acquire calls that failed with an error.
    pub failed: u64,
    /// Acquire calls whose caller went away (a dropped future, a cancelled task).
    pub cancelled: u64,
    /// Time from an acquire call to its outcome, every outcome.
    pub wait: Histogram,
    /// Time from an acquisition to the end of that hold (release or loss).
    pub hold: Histogram,
    /// Locks held now.
    pub holds_now: u64,
    /// Acquire calls waiting for a release now.
    pub waiters_now: u64,
    /// Holds the watchdog renewed.
    pub renewals: u64,
    /// Renewal calls that failed (the hold is kept until its deadline and retried).
    pub renewal_failures: u64,
    /// Holds lost.
    pub losses: u64,
    /// Connections made again after one broke or stalled (commands and messages).
    pub reconnects: u64,
    /// Failovers this client noticed (Sentinel's `+switch-master`, a reconnect that
    /// landed on another or a restarted master, a cluster slot that changed masters);
    /// each makes it check every hold at once.
    pub failovers_noticed: u64,
    /// Time from noticing a failover to reporting a hold it lost, per hold lost.
    pub failover_loss_report: Histogram,
}

impl Metrics {
    /// The snapshot in Prometheus's text exposition format (version 0.0.4), every
    /// series labelled with `client="<client id>"`.
    pub fn to_prometheus(&self) -> String {
        let label = format!("client=\"{}\"", self.client_id);
        let mut out = String::new();
        let _ = writeln!(out, "# HELP ferrolock_acquires_total Acquire calls by outcome.");
        let _ = writeln!(out, "# TYPE ferrolock_acquires_total counter");
        for (outcome, n) in [
            (Outcome::Acquired, self.acquired),
            (Outcome::NotAcquired, self.not_acquired),
            (Outcome::Failed, self.failed),
            (Outcome::Cancelled, self.cancelled),
        ] {
            let outcome = outcome.as_str();
            let _ = writeln!(out, "ferrolock_acquires_total{{{label},outcome=\"{outcome}\"}} {n}");
        }
        histogram(&mut out, &label, "ferrolock_acquire_wait_seconds", "Time from an acquire call to its outcome.", &self.wait);
        histogram(&mut out, &label, "ferrolock_hold_seconds", "Time from an acquisition to its release or loss.", &self.hold);
        histogram(
            &mut out,
            &label,
            "ferrolock_failover_loss_report_seconds",
            "Time from noticing a failover to reporting a hold it lost.",
            &self.failover_loss_report,
        );
        for (name, kind, help, value) in [
            ("ferrolock_holds", "gauge", "Locks held now.", self.holds_now),
            ("ferrolock_waiters", "gauge", "Acquire calls waiting for a release now.", self.waiters_now),
            ("ferrolock_renewals_total", "counter", "Holds renewed by the watchdog.", self.renewals),
            ("ferrolock_renewal_failures_total", "counter", "Renewal calls that failed.", self.renewal_failures),
            ("ferrolock_losses_total", "counter", "Holds lost.", self.losses),
            ("ferrolock_reconnects_total", "counter", "Connections made again after a failure.", self.reconnects),
            ("ferrolock_failovers_noticed_total", "counter", "Failovers noticed (each checks every hold at once).", self.failovers_noticed),
        ] {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name}{{{label}}} {value}");
        }
        out
    }
}

fn histogram(out: &mut String, label: &str, name: &str, help: &str, h: &Histogram) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
    let mut cumulative = 0;
    for (bound, n) in h.bounds.iter().zip(&h.counts) {
        cumulative += n;
        let _ = writeln!(out, "{name}_bucket{{{label},le=\"{bound}\"}} {cumulative}");
    }
    let _ = writeln!(out, "{name}_bucket{{{label},le=\"+Inf\"}} {}", h.count);
    let _ = writeln!(out, "{name}_sum{{{label}}} {}", h.sum);
    let _ = writeln!(out, "{name}_count{{{label}}} {}", h.count);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_and_text() {
        let r = Recorder::default();
        r.acquire(Outcome::Acquired, Duration::from_micros(300));
        r.acquire(Outcome::NotAcquired, Duration::from_secs(2));
        r.acquire(Outcome::Acquired, Duration::from_secs(1000));
        let m = r.snapshot("c1", 1, 0);
        assert_eq!((m.acquired, m.not_acquired, m.wait.count), (2, 1, 3));
        assert_eq!(m.wait.counts[0], 1, "300 us is in the first bucket");
        assert_eq!(m.wait.counts[11], 1, "2 s is in the 2.5 s bucket");
        assert_eq!(*m.wait.counts.last().unwrap(), 1, "1000 s is above every bound");
        let text = m.to_prometheus();
        assert!(text.contains("ferrolock_acquires_total{client=\"c1\",outcome=\"acquired\"} 2\n"), "{text}");
        assert!(text.contains("ferrolock_acquire_wait_seconds_bucket{client=\"c1\",le=\"2.5\"} 2\n"), "{text}");
        assert!(text.contains("ferrolock_acquire_wait_seconds_bucket{client=\"c1\",le=\"+Inf\"} 3\n"), "{text}");
        assert!(text.contains("ferrolock_holds{client=\"c1\"} 1\n"), "{text}");
        r.failover_noticed();
        r.lost_after_failover(Duration::from_millis(30));
        let text = r.snapshot("c1", 0, 0).to_prometheus();
        assert!(text.contains("ferrolock_failovers_noticed_total{client=\"c1\"} 1\n"), "{text}");
        assert!(text.contains("ferrolock_failover_loss_report_seconds_bucket{client=\"c1\",le=\"0.05\"} 1\n"), "{text}");
    }
}
