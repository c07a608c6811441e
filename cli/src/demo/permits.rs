//! The demo's second act: the same workers share a semaphore of [`PERMITS`] permits
//! (Redisson's RSemaphore) instead of a lock. Each takes one permit, stays inside
//! [`HOLD_US`], gives it back, again and again; the logs show how many were inside
//! at once, which must never exceed the permits.

use ferrolock_harness::Section;

use super::stats::ProcessLog;

/// The permits of the second act's semaphore.
pub const PERMITS: usize = 3;

/// How long each worker stays inside with its permit: long enough for several to be
/// inside together, so the limit is seen at work.
pub const HOLD_US: u64 = 2000;

/// Characters of the "inside at once" line.
pub const WIDTH: usize = 60;

/// The most sections inside together, counting a section from its acquisition to its
/// release; a release and an acquisition at the same instant do not overlap.
pub fn most_inside<'a>(sections: impl Iterator<Item = (u64, u64)> + 'a) -> usize {
    let mut events: Vec<(u64, i64)> = sections.flat_map(|(from, to)| [(from, 1), (to, -1)]).collect();
    events.sort();
    let (mut inside, mut most) = (0i64, 0i64);
    for (_, delta) in events {
        inside += delta;
        most = most.max(inside);
    }
    most as usize
}

/// Per 1/WIDTH of the act (first acquisition to last release): the most inside at once.
pub fn inside_per_slice(logs: &[ProcessLog]) -> Vec<usize> {
    let all = || logs.iter().flat_map(|(_, sections)| sections.iter());
    let (Some(start), Some(end)) = (all().map(|s| s.acquired_ns).min(), all().map(|s| s.released_ns).max()) else {
        return vec![0; WIDTH];
    };
    let span = u128::from(end - start);
    let edge = |i: usize| (u128::from(start) + span * i as u128 / WIDTH as u128) as u64;
    (0..WIDTH)
        .map(|i| {
            let (a, b) = (edge(i), edge(i + 1));
            most_inside(all().filter(|s| s.acquired_ns < b && s.released_ns > a).map(|s| (s.acquired_ns.max(a), s.released_ns.min(b))))
        })
        .collect()
}

/// The act's report: a table per language, the most inside at once, the permits back
/// at the end, and the "inside at once" line.
pub fn report(languages: &[&'static str], logs: &[ProcessLog], name: &str, permits_back: Option<i64>) -> Vec<String> {
    let row = |lang: &str, processes: usize, sections: usize| format!("{lang:<9} {processes:>9} {sections:>13}");
    let mut lines = vec![format!("{:<9} {:>9} {:>13}", "language", "processes", "times inside")];
    for &lang in languages {
        let mine: Vec<&[Section]> = logs.iter().filter(|(l, _)| *l == lang).map(|(_, s)| *s).collect();
        lines.push(row(lang, mine.len(), mine.iter().map(|s| s.len()).sum()));
    }
    lines.push(row("total", logs.len(), logs.iter().map(|(_, s)| s.len()).sum()));
    let most = most_inside(logs.iter().flat_map(|(_, s)| s.iter().map(|s| (s.acquired_ns, s.released_ns))));
    lines.push(String::new());
    lines.push(format!("most inside at once           {most} of {PERMITS} permits"));
    let back = permits_back.map_or_else(|| "unknown".to_string(), |n| n.to_string());
    lines.push(format!("permits free at the end       {back} of {PERMITS} (every permit given back)"));
    lines.push(String::new());
    let all = || logs.iter().flat_map(|(_, sections)| sections.iter());
    let span_ns = match (all().map(|s| s.acquired_ns).min(), all().map(|s| s.released_ns).max()) {
        (Some(start), Some(end)) => end - start,
        _ => 0,
    };
    lines.push(format!(
        "inside \"{name}\" at once (one character = {:.1} ms, the most in that time)",
        span_ns as f64 / 1e6 / WIDTH as f64
    ));
    let cells: String = inside_per_slice(logs).iter().map(|n| char::from_digit(*n as u32, 10).unwrap_or('+')).collect();
    lines.push(format!("{:<9} |{cells}|", "inside"));
    let end = format!("{:.1} s", span_ns as f64 / 1e9);
    lines.push(format!("{:<9}  0 s{end:>width$}", "", width = WIDTH - 3));
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(from: u64, to: u64) -> Section {
        Section { token: 0, wait_from_ns: from, acquired_ns: from, released_ns: to }
    }

    #[test]
    fn counts_the_most_inside_together() {
        assert_eq!(most_inside([(0, 10), (5, 15), (9, 20), (16, 30)].into_iter()), 3);
        // Back to back is not together.
        assert_eq!(most_inside([(0, 10), (10, 20), (20, 30)].into_iter()), 1);
        assert_eq!(most_inside(std::iter::empty()), 0);
    }

    #[test]
    fn each_slice_shows_its_own_most() {
        let a = [section(0, 60), section(0, 30)];
        let b = [section(30, 60)];
        let logs: Vec<ProcessLog> = vec![("rust", &a), ("c", &b)];
        let slices = inside_per_slice(&logs);
        assert_eq!(slices.len(), WIDTH);
        assert!(slices.iter().all(|&n| n == 2), "{slices:?}");
        let report = report(&["rust", "c"], &logs, "s", Some(3));
        assert!(report.contains(&"most inside at once           2 of 3 permits".to_string()), "{report:?}");
    }
}
