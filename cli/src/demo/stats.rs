//! What the demo reports, computed from the workers' section logs: who ran how many
//! critical sections, how fast the lock passed between processes, whether any
//! increment was lost and whether fencing tokens followed the order of the sections.

use ferrolock_harness::Section;

/// The sections of one worker process, with its language.
pub type ProcessLog<'a> = (&'static str, &'a [Section]);

/// Per-language counts.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct LanguageRow {
    pub lang: &'static str,
    pub processes: usize,
    pub sections: usize,
    /// Sections taken over from another process that released while this one waited.
    pub handoffs_in: usize,
    /// Of those, taken over from a process of another language.
    pub from_other_languages: usize,
}

#[derive(Debug, Default, Clone, PartialEq)]
pub struct Summary {
    pub rows: Vec<LanguageRow>,
    pub sections: usize,
    /// Release by one process to acquisition by the next one that was already waiting, in ns, sorted.
    pub handoffs_ns: Vec<u64>,
    pub longest_wait_ns: u64,
    /// True when, in the order the sections ran, every token is larger than the one before.
    pub tokens_increasing: bool,
    /// Two sections that overlapped in time (must never happen).
    pub overlaps: usize,
}

impl Summary {
    pub fn handoff_percentile_ms(&self, p: f64) -> Option<f64> {
        if self.handoffs_ns.is_empty() {
            return None;
        }
        let i = ((self.handoffs_ns.len() - 1) as f64 * p).round() as usize;
        Some(self.handoffs_ns[i] as f64 / 1e6)
    }
}

pub fn summarize(languages: &[&'static str], logs: &[ProcessLog]) -> Summary {
    let mut rows: Vec<LanguageRow> =
        languages.iter().map(|&lang| LanguageRow { lang, ..Default::default() }).collect();
    let mut all: Vec<(usize, &Section)> = Vec::new();
    for (process, &(lang, sections)) in logs.iter().enumerate() {
        if let Some(row) = rows.iter_mut().find(|r| r.lang == lang) {
            row.processes += 1;
            row.sections += sections.len();
        }
        all.extend(sections.iter().map(|s| (process, s)));
    }
    all.sort_by_key(|(_, s)| s.acquired_ns);

    let mut summary = Summary { sections: all.len(), tokens_increasing: true, ..Default::default() };
    summary.longest_wait_ns = all.iter().map(|(_, s)| s.acquired_ns.saturating_sub(s.wait_from_ns)).max().unwrap_or(0);
    for pair in all.windows(2) {
        let ((pa, a), (pb, b)) = (pair[0], pair[1]);
        if b.token <= a.token {
            summary.tokens_increasing = false;
        }
        if b.acquired_ns < a.released_ns {
            summary.overlaps += 1;
        }
        if pa != pb && b.wait_from_ns <= a.released_ns {
            summary.handoffs_ns.push(b.acquired_ns.saturating_sub(a.released_ns));
            if let Some(row) = rows.iter_mut().find(|r| r.lang == logs[pb].0) {
                row.handoffs_in += 1;
                if logs[pa].0 != logs[pb].0 {
                    row.from_other_languages += 1;
                }
            }
        }
    }
    summary.handoffs_ns.sort_unstable();
    summary.rows = rows;
    summary
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(token: u64, wait_from_ns: u64, acquired_ns: u64, released_ns: u64) -> Section {
        Section { token, wait_from_ns, acquired_ns, released_ns }
    }

    #[test]
    fn handoffs_count_only_waiting_successors_in_other_processes() {
        let (rust1, c, rust2) = (
            [s(1, 0, 10, 20), s(2, 21, 22, 30)],
            [s(3, 25, 35, 40)],
            [s(4, 38, 41, 50), s(5, 60, 61, 70)],
        );
        let logs: Vec<ProcessLog> = vec![("rust", &rust1), ("c", &c), ("rust", &rust2)];
        let summary = summarize(&["rust", "c"], &logs);
        assert_eq!(summary.sections, 5);
        // 2 -> 3 (c waited since 25, acquired 5 ns after release), 3 -> 4 (1 ns); 1 -> 2 is the
        // same process and 4 -> 5 found the lock free.
        assert_eq!(summary.handoffs_ns, vec![1, 5]);
        assert_eq!(summary.rows[0], LanguageRow { lang: "rust", processes: 2, sections: 4, handoffs_in: 1, from_other_languages: 1 });
        assert_eq!(summary.rows[1], LanguageRow { lang: "c", processes: 1, sections: 1, handoffs_in: 1, from_other_languages: 1 });
        assert_eq!(summary.longest_wait_ns, 10);
        assert!(summary.tokens_increasing);
        assert_eq!(summary.overlaps, 0);
    }

    #[test]
    fn out_of_order_tokens_and_overlaps_are_reported() {
        let (rust, c) = ([s(2, 0, 10, 20)], [s(1, 0, 15, 25)]);
        let logs: Vec<ProcessLog> = vec![("rust", &rust), ("c", &c)];
        let summary = summarize(&["rust", "c"], &logs);
        assert!(!summary.tokens_increasing);
        assert_eq!(summary.overlaps, 1);
    }
}
