//! One mode's table: what the observer recorded, the faults, the client processes and
//! what was left on the data nodes, with the expectation checks.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::common::{FaultKind, FaultRecord, FAULT_KINDS};
use crate::observer::{Recorded, ResourceStats};
use crate::workers::Ended;

/// Everything one mode produced.
pub struct ModeRun {
    pub title: String,
    pub recorded: Recorded,
    pub faults: Vec<FaultRecord>,
    pub ended: Vec<Ended>,
    /// Observer times (us) of the workers' start and stop.
    pub from_us: u64,
    pub to_us: u64,
    /// Keys left on the masters once every client closed: (key, what).
    pub left: Vec<Left>,
    /// Holders allowed inside, by resource.
    pub allowed: BTreeMap<String, u64>,
    /// Failures found while running (a fault that did not settle, a worker that did not start).
    pub problems: Vec<String>,
}

/// A key left on a master once every client closed.
pub struct Left {
    pub key: String,
    pub what: String,
    /// A lock still held, or a semaphore with other than all its permits free (not a
    /// holder's note or a fair lock's queue of waiters gone).
    pub held: bool,
    /// One of the per-fault semaphores.
    pub semaphore: bool,
    /// A semaphore with fewer permits free than it has: a release a failover lost
    /// (capacity gone until its permits are set again, not two holders too many).
    pub leaked: bool,
}

/// What a mode must show.
pub struct Expect {
    /// 0 overlaps, 0 duplicate or regressed tokens, nothing left held.
    pub zero: bool,
    /// The negative control: overlaps and duplicate/regressed tokens must be seen.
    pub control: bool,
    pub min_failovers: usize,
}

/// How long after a fault settled its effects are still counted as its own (a client
/// still on the old master, a late loss notice).
const AFTERMATH_US: u64 = 5_000_000;

/// Prints the table; returns the failed expectations.
pub fn report(run: &ModeRun, expect: &Expect) -> Vec<String> {
    let rec = &run.recorded;
    let stat = |k: &str| rec.stats.get(k).copied().unwrap_or(0);
    let mut out = String::new();
    let secs = (run.to_us.saturating_sub(run.from_us)) as f64 / 1e6;
    let _ = writeln!(out, "\n== {} ({secs:.0} s)", run.title);

    // Faults, and the overlaps and token incidents in each one's window (or its aftermath).
    let events = anomalies(rec);
    let mut by_kind: BTreeMap<Option<FaultKind>, [u64; 4]> = BTreeMap::new();
    for f in &run.faults {
        let e = by_kind.entry(Some(f.kind)).or_default();
        e[0] += 1;
        e[1] += f.failed_over() as u64;
    }
    for (t, what) in &events {
        let owner = run.faults.iter().rev().find(|f| f.start_us <= *t && *t <= f.end_us + AFTERMATH_US).map(|f| f.kind);
        let e = by_kind.entry(owner).or_default();
        e[if *what == "overlap" { 2 } else { 3 }] += 1;
    }
    if !run.faults.is_empty() || !events.is_empty() {
        let _ = writeln!(out, "{:<15} {:>6} {:>9} {:>14} {:>15}", "fault", "faults", "failovers", "overlap events", "token incidents");
        for kind in FAULT_KINDS.iter().map(|k| Some(*k)).chain([None]) {
            let Some(e) = by_kind.get(&kind) else { continue };
            let name = kind.map(|k| k.name()).unwrap_or("no fault");
            let _ = writeln!(out, "{name:<15} {:>6} {:>9} {:>14} {:>15}", e[0], e[1], e[2], e[3]);
        }
    }
    let failovers = run.faults.iter().filter(|f| f.failed_over()).count();

    // A semaphore's epochs (`{base}.eN`, one per fault) make one row.
    let mut rows: BTreeMap<String, (ResourceStats, u64)> = BTreeMap::new();
    for (name, r) in &rec.resources {
        let base = name.strip_prefix('{').and_then(|n| n.split_once('}')).map(|(b, _)| b).unwrap_or(name);
        let (row, allowed) = rows.entry(base.to_string()).or_default();
        *allowed = run.allowed.get(name).copied().unwrap_or(1);
        add(row, r);
    }
    let row = |out: &mut String, name: &str, allowed: &str, r: &ResourceStats| {
        let tokens = format!("{}/{}/{}", r.dup_tokens, r.regressed_tokens, r.token_incidents);
        let _ = writeln!(out, "{name:<22} {allowed:>7} {:>9} {:>8} {:>10} {tokens:>22}", r.sections, r.overlaps, r.max_inside);
    };
    let _ = writeln!(out, "{:<22} {:>7} {:>9} {:>8} {:>10} {:>22}", "resource", "allowed", "sections", "overlaps", "max inside", "tokens dup/regr/incid.");
    let mut total = ResourceStats::default();
    for (name, (r, allowed)) in &rows {
        row(&mut out, name, &allowed.to_string(), r);
        add(&mut total, r);
    }
    row(&mut out, "total", "", &total);
    let bad_tokens = total.dup_tokens + total.regressed_tokens;

    let windows: Vec<f64> = rec.windows_us.iter().map(|u| *u as f64 / 1000.0).collect();
    let _ = writeln!(
        out,
        "loss notices: {} ({} inside a section, {} after it ended); overlap events: {}, {} of them followed by a loss notice of one of its holders",
        stat("losses"),
        stat("losses_inside"),
        stat("losses_outside"),
        stat("overlap_events"),
        windows.len()
    );
    let _ = writeln!(out, "new holder's entry -> old holder's loss notice: {}", quantiles(&windows, "ms"));
    let _ = writeln!(out, "noticed -> loss reported (client metrics): {}", client_metric(&run.ended));
    let _ = writeln!(out, "sections/s: {}", rates(run));

    let mut errors: BTreeMap<String, i64> = BTreeMap::new();
    for (k, v) in &rec.stats {
        if let Some(kind) = k.strip_prefix("err:") {
            errors.insert(kind.to_string(), *v);
        }
    }
    let errors: Vec<String> = errors.iter().map(|(k, v)| format!("{k} {v}")).collect();
    let _ = writeln!(out, "client errors: {}", if errors.is_empty() { "none".into() } else { errors.join(", ") });

    let finished = run.ended.iter().filter(|e| e.result.is_ok()).count();
    let slowest = run.ended.iter().map(|e| e.stop_took.as_secs_f64()).fold(0.0, f64::max);
    let _ = writeln!(out, "processes: {finished} of {} finished (slowest stop {slowest:.1} s)", run.ended.len());
    let list = |held: bool| {
        // One semaphore per fault: counted, not listed (the run's log lists them).
        let (semaphores, others): (Vec<&Left>, Vec<&Left>) = run.left.iter().filter(|l| l.held == held).partition(|l| l.semaphore);
        let mut keys: Vec<String> = others.iter().map(|l| format!("{} ({})", l.key, l.what)).collect();
        if !semaphores.is_empty() {
            // "F of P permits free"
            let fewer = semaphores
                .iter()
                .filter(|l| {
                    let n: Vec<i64> = l.what.split(' ').filter_map(|w| w.parse().ok()).collect();
                    matches!(n.as_slice(), [free, permits] if free < permits)
                })
                .count();
            keys.push(format!("{} of the per-fault semaphores with other than their permits free ({fewer} with fewer)", semaphores.len()));
        }
        if keys.is_empty() { "nothing".to_string() } else { keys.join(", ") }
    };
    let _ = writeln!(out, "held on the masters once every client closed: {}; other keys left: {}", list(true), list(false));

    // Expectations.
    let mut failed = run.problems.clone();
    for e in &run.ended {
        if let Err(why) = &e.result {
            failed.push(format!("worker {} ({}): {why}", e.id, e.lang));
        }
    }
    let crashes: i64 = rec.stats.iter().filter(|(k, _)| k.contains(":crash:")).map(|(_, v)| *v).sum();
    if crashes > 0 {
        failed.push(format!("{crashes} worker loops ended on an unexpected error (see the workers' log)"));
    }
    if let Some((r, s)) = rec.resources.iter().find(|(_, s)| s.inside_at_end != 0) {
        failed.push(format!("{r}: {} sections entered and never left", s.inside_at_end));
    }
    if run.left.iter().any(|l| l.what == "no expiry") {
        failed.push("a key without expiry was left on a master".into());
    }
    if failovers < expect.min_failovers {
        failed.push(format!("{failovers} real failovers, fewer than the {} asked for", expect.min_failovers));
    }
    if expect.zero {
        if total.overlaps > 0 || bad_tokens > 0 {
            failed.push(format!("expected 0 overlaps and 0 duplicate/regressed tokens, saw {} and {}/{}", total.overlaps, total.dup_tokens, total.regressed_tokens));
        }
        // Leaked semaphore permits are reported above, not failed: a release that a
        // failover lost shrinks the semaphore; that is capacity, not exclusion.
        if run.left.iter().any(|l| l.held && !l.leaked) {
            failed.push("expected nothing held on the masters (leaked semaphore permits aside)".into());
        }
    }
    if expect.control && (total.overlaps == 0 || bad_tokens == 0) {
        failed.push("the negative control must show overlaps and duplicate/regressed tokens: the observer did not catch them".into());
    }
    let _ = writeln!(out, "real failovers: {failovers}; verdict: {}", if failed.is_empty() { "ok".to_string() } else { format!("FAILED: {}", failed.join("; ")) });
    print!("{out}");
    failed
}

fn add(into: &mut ResourceStats, r: &ResourceStats) {
    into.sections += r.sections;
    into.overlaps += r.overlaps;
    into.max_inside = into.max_inside.max(r.max_inside);
    into.dup_tokens += r.dup_tokens;
    into.regressed_tokens += r.regressed_tokens;
    into.token_incidents += r.token_incidents;
    into.inside_at_end += r.inside_at_end;
}

/// Overlaps and token incidents (the counter went back) from the observer's log, as
/// (time, "overlap" | "token").
fn anomalies(rec: &Recorded) -> Vec<(u64, &'static str)> {
    rec.log
        .iter()
        .filter_map(|line| {
            let (t, rest) = line.split_once(' ')?;
            let what = if rest.starts_with("overlap") {
                "overlap"
            } else if rest.starts_with("incident") {
                "token"
            } else {
                return None;
            };
            Some((t.parse().ok()?, what))
        })
        .collect()
}

/// p50 / p99 / max of samples (exact), or n/a.
fn quantiles(samples: &[f64], unit: &str) -> String {
    if samples.is_empty() {
        return "n/a (no samples)".into();
    }
    let mut s = samples.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    let at = |q: f64| s[((q * s.len() as f64).ceil() as usize).clamp(1, s.len()) - 1];
    format!("p50 {:.0} {unit}, p99 {:.0} {unit}, max {:.0} {unit} (n={})", at(0.5), at(0.99), s[s.len() - 1], s.len())
}

/// The "noticed -> loss reported" histogram of the clients' metrics, merged, when the
/// binding has one: quantiles as bucket upper bounds.
fn client_metric(ended: &[Ended]) -> String {
    let mut merged: Option<(String, Vec<f64>, Vec<u64>)> = None;
    for e in ended {
        let Ok(done) = &e.result else { continue };
        let m = &done["loss_metric"];
        let (Some(bounds), Some(counts)) = (m["bounds"].as_array(), m["counts"].as_array()) else { continue };
        let bounds: Vec<f64> = bounds.iter().filter_map(|b| b.as_f64()).collect();
        let counts: Vec<u64> = counts.iter().filter_map(|c| c.as_u64()).collect();
        match &mut merged {
            None => merged = Some((m["name"].as_str().unwrap_or("?").to_string(), bounds, counts)),
            Some((_, b, c)) if *b == bounds && c.len() == counts.len() => c.iter_mut().zip(&counts).for_each(|(a, n)| *a += n),
            Some(_) => return "n/a (the workers' histograms have different buckets)".into(),
        }
    }
    let Some((name, bounds, counts)) = merged else { return "n/a (not in client.metrics())".into() };
    let total: u64 = counts.iter().sum();
    if total == 0 {
        return format!("{name}: no observations");
    }
    let q = |q: f64| {
        let mut seen = 0;
        for (i, n) in counts.iter().enumerate() {
            seen += n;
            if seen as f64 >= q * total as f64 {
                return bounds.get(i).map(|b| format!("<= {:.0} ms", b * 1000.0)).unwrap_or_else(|| "above the last bucket".into());
            }
        }
        "?".into()
    };
    format!("{name}: p50 {}, p99 {} (n={total}, bucket bounds)", q(0.5), q(0.99))
}

/// Sections per second outside and inside the fault windows (whole seconds of the run).
fn rates(run: &ModeRun) -> String {
    let (first, last) = (run.from_us / 1_000_000 + 1, run.to_us / 1_000_000);
    let (mut n_in, mut s_in, mut n_out, mut s_out) = (0u64, 0u64, 0u64, 0u64);
    for sec in first..last {
        let (a, b) = (sec * 1_000_000, (sec + 1) * 1_000_000);
        let count = run.recorded.per_second.get(&sec).copied().unwrap_or(0);
        if run.faults.iter().any(|f| f.start_us < b && a < f.end_us) {
            n_in += 1;
            s_in += count;
        } else {
            n_out += 1;
            s_out += count;
        }
    }
    let rate = |s: u64, n: u64| if n == 0 { "n/a".to_string() } else { format!("{:.1}", s as f64 / n as f64) };
    format!("{} outside faults ({n_out} s), {} inside fault windows ({n_in} s)", rate(s_out, n_out), rate(s_in, n_in))
}
