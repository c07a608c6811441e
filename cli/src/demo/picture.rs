//! The demo's closing picture, drawn from the workers' section logs: a timeline of
//! who held the lock (one row per language, one character per time slice) and a
//! histogram of how long each acquisition waited, so that fairness and
//! cross-language hand-offs show at a glance.
//!
//! Integer arithmetic on nanoseconds throughout: the same logs always draw the same
//! picture (the demo's test recomputes it from the logs it kept).

use super::stats::ProcessLog;

/// Characters per timeline row.
pub const TIMELINE_WIDTH: usize = 60;
/// Characters of the longest histogram bar.
pub const BAR_WIDTH: usize = 40;

/// A language's share of the time the lock was held during one slice, darkest first:
/// at least half, a quarter, a tenth, anything; blank when it did not hold it at all.
pub const SHADES: [char; 4] = ['█', '▓', '▒', '░'];

/// Wait-time buckets: upper bounds (exclusive) in ns and their labels; the last is open.
pub const WAIT_BUCKETS: [(u64, &str); 10] = [
    (100_000, "< 0.1 ms"),
    (300_000, "0.1-0.3 ms"),
    (1_000_000, "0.3-1 ms"),
    (3_000_000, "1-3 ms"),
    (10_000_000, "3-10 ms"),
    (30_000_000, "10-30 ms"),
    (100_000_000, "30-100 ms"),
    (300_000_000, "0.1-0.3 s"),
    (1_000_000_000, "0.3-1 s"),
    (u64::MAX, ">= 1 s"),
];

/// The shade of a language that held the lock `held` ns of the `total` ns anyone held it in a slice.
pub fn shade(held: u64, total: u64) -> char {
    let (held, total) = (u128::from(held), u128::from(total));
    match held {
        0 => ' ',
        _ if held * 2 >= total => SHADES[0],
        _ if held * 4 >= total => SHADES[1],
        _ if held * 10 >= total => SHADES[2],
        _ => SHADES[3],
    }
}

/// Which bucket of [`WAIT_BUCKETS`] a wait of `ns` falls in.
pub fn wait_bucket(ns: u64) -> usize {
    WAIT_BUCKETS.iter().position(|&(below, _)| ns < below).unwrap_or(WAIT_BUCKETS.len() - 1)
}

/// The timeline's lines: a heading, one row per language of `languages`, the time axis.
pub fn timeline(languages: &[&'static str], logs: &[ProcessLog]) -> Vec<String> {
    let sections = || logs.iter().flat_map(|&(lang, sections)| sections.iter().map(move |s| (lang, s)));
    let (Some(start), Some(end)) = (sections().map(|(_, s)| s.acquired_ns).min(), sections().map(|(_, s)| s.released_ns).max()) else {
        return vec!["who held the lock: nobody (no critical section ran)".to_string()];
    };
    let span = end.saturating_sub(start).max(1);
    let bound = |i: usize| start + (u128::from(span) * i as u128 / TIMELINE_WIDTH as u128) as u64;
    // held[language][slice]: ns that language held the lock within the slice.
    let mut held = vec![vec![0u64; TIMELINE_WIDTH]; languages.len()];
    for (lang, s) in sections() {
        let Some(row) = languages.iter().position(|&l| l == lang) else { continue };
        for (slice, time) in held[row].iter_mut().enumerate() {
            let (from, to) = (bound(slice), bound(slice + 1));
            *time += s.released_ns.min(to).saturating_sub(s.acquired_ns.max(from));
        }
    }
    let per_slice: Vec<u64> = (0..TIMELINE_WIDTH).map(|slice| held.iter().map(|row| row[slice]).sum()).collect();
    let all: u64 = per_slice.iter().sum();
    let label = languages.iter().map(|l| l.len()).max().unwrap_or(0).max(6);
    let mut lines = vec![format!("who held the lock (one character = {:.0} ms):", span as f64 / 1e6 / TIMELINE_WIDTH as f64)];
    for (row, lang) in held.iter().zip(languages) {
        let cells: String = row.iter().zip(&per_slice).map(|(&h, &t)| shade(h, t)).collect();
        let total: u64 = row.iter().sum();
        let percent = (u128::from(total) * 100 + u128::from(all) / 2) / u128::from(all.max(1));
        lines.push(format!("{lang:>label$} |{cells}| {percent:>3}% of the hold time"));
    }
    let right = format!("{:.1} s", span as f64 / 1e9);
    lines.push(format!("{:>label$}  0 s{right:>width$}", "", width = TIMELINE_WIDTH - 3));
    lines.push(format!(
        "{:>label$}  {} half or more of the time anyone held it in that slice, {} a quarter, {} a tenth, {} less",
        "", SHADES[0], SHADES[1], SHADES[2], SHADES[3]
    ));
    lines
}

/// The histogram's lines: a heading, one line per bucket from the first to the last
/// that holds a wait, with its bar, its count and the count per language.
pub fn wait_histogram(languages: &[&'static str], logs: &[ProcessLog]) -> Vec<String> {
    let mut counts = vec![vec![0u64; languages.len()]; WAIT_BUCKETS.len()];
    for &(lang, sections) in logs {
        let Some(column) = languages.iter().position(|&l| l == lang) else { continue };
        for s in sections {
            counts[wait_bucket(s.acquired_ns.saturating_sub(s.wait_from_ns))][column] += 1;
        }
    }
    let totals: Vec<u64> = counts.iter().map(|row| row.iter().sum()).collect();
    let (Some(first), Some(last)) = (totals.iter().position(|&n| n > 0), totals.iter().rposition(|&n| n > 0)) else {
        return vec!["wait before each acquisition: no acquisition".to_string()];
    };
    let most = totals.iter().copied().max().unwrap_or(1);
    let mut lines = vec!["wait before each acquisition (all workers; per language on the right):".to_string()];
    for bucket in first..=last {
        let n = totals[bucket];
        // Rounded up: a bucket with any wait in it always shows.
        let bar = "█".repeat(((u128::from(n) * BAR_WIDTH as u128).div_ceil(u128::from(most))) as usize);
        let split: Vec<String> = languages.iter().zip(&counts[bucket]).map(|(lang, c)| format!("{lang} {c}")).collect();
        lines.push(format!("{:>10} |{bar:<BAR_WIDTH$}| {n:>6}  ({})", WAIT_BUCKETS[bucket].1, split.join(", ")));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrolock_harness::Section;

    fn s(wait_from_ns: u64, acquired_ns: u64, released_ns: u64) -> Section {
        Section { token: 0, wait_from_ns, acquired_ns, released_ns }
    }

    #[test]
    fn timeline_rows_show_each_languages_share_of_every_slice() {
        // 60 slices of 10 ns: rust holds the first half, c the second, both share slice 30.
        let rust = [s(0, 0, 305)];
        let c = [s(0, 305, 600)];
        let logs: Vec<ProcessLog> = vec![("rust", &rust), ("c", &c)];
        let lines = timeline(&["rust", "c"], &logs);
        let row = |i: usize| lines[i].split('|').nth(1).unwrap().to_string();
        let rust_row: Vec<char> = row(1).chars().collect();
        let c_row: Vec<char> = row(2).chars().collect();
        assert_eq!(rust_row.len(), TIMELINE_WIDTH);
        assert!(rust_row[..30].iter().all(|&ch| ch == '█') && rust_row[31..].iter().all(|&ch| ch == ' '), "{lines:?}");
        assert!(c_row[..30].iter().all(|&ch| ch == ' ') && c_row[31..].iter().all(|&ch| ch == '█'), "{lines:?}");
        // Slice 30 is held half by each.
        assert_eq!((rust_row[30], c_row[30]), ('█', '█'));
        assert!(lines[1].ends_with(" 51% of the hold time") && lines[2].ends_with(" 49% of the hold time"), "{lines:?}");
    }

    #[test]
    fn shades_follow_the_share() {
        assert_eq!([shade(0, 10), shade(5, 10), shade(3, 10), shade(1, 10), shade(1, 11)], [' ', '█', '▓', '▒', '░']);
    }

    #[test]
    fn histogram_counts_every_wait_in_its_bucket_per_language() {
        let rust = [s(0, 50_000, 60_000), s(0, 2_000_000, 2_000_001)];
        let c = [s(0, 2_500_000, 2_500_001), s(0, 2_000_000_000, 2_000_000_001)];
        let logs: Vec<ProcessLog> = vec![("rust", &rust), ("c", &c)];
        let lines = wait_histogram(&["rust", "c"], &logs);
        // From "< 0.1 ms" to ">= 1 s": every bucket in between is shown, empty or not.
        assert_eq!(lines.len(), 1 + WAIT_BUCKETS.len(), "{lines:?}");
        assert!(lines[1].contains("< 0.1 ms") && lines[1].ends_with("1  (rust 1, c 0)"), "{lines:?}");
        assert!(lines[4].contains("1-3 ms") && lines[4].ends_with("2  (rust 1, c 1)"), "{lines:?}");
        assert!(lines[4].contains(&"█".repeat(BAR_WIDTH)), "{lines:?}");
        assert!(lines[5].contains("|                                        |"), "{lines:?}");
        assert!(lines[10].contains(">= 1 s") && lines[10].ends_with("1  (rust 0, c 1)"), "{lines:?}");
    }
}
