//! The demo's live view: a table redrawn in place on a terminal, one progress line
//! per second otherwise (logs and CI output stay readable).

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use super::stats::Summary;

pub struct Live {
    terminal: bool,
    drawn_lines: usize,
    last_line: Option<Instant>,
}

impl Live {
    pub fn new(name: &str, url: &str, workers: usize) -> Live {
        println!("ferrolock demo: {workers} workers contend on lock \"{name}\" at {url}");
        Live { terminal: std::io::stdout().is_terminal(), drawn_lines: 0, last_line: None }
    }

    pub fn update(&mut self, summary: &Summary, left: Duration) {
        if self.terminal {
            let mut lines = table(summary);
            lines.push(format!("{:.1} s left", left.as_secs_f64()));
            self.redraw(&lines);
        } else if self.last_line.is_none_or(|t| t.elapsed() >= Duration::from_secs(1)) {
            self.last_line = Some(Instant::now());
            let per_language: Vec<String> = summary.rows.iter().map(|r| format!("{} {}", r.lang, r.sections)).collect();
            println!(
                "{:>4.0} s left: {} sections ({}), {} hand-offs",
                left.as_secs_f64().ceil(),
                summary.sections,
                per_language.join(", "),
                summary.handoffs_ns.len()
            );
        }
    }

    /// The final table, in place of the live one.
    pub fn finish(&mut self, summary: &Summary) {
        let lines = table(summary);
        if self.terminal {
            self.redraw(&lines);
        } else {
            println!();
            for line in lines {
                println!("{line}");
            }
        }
    }

    fn redraw(&mut self, lines: &[String]) {
        let mut out = std::io::stdout().lock();
        if self.drawn_lines > 0 {
            let _ = write!(out, "\x1b[{}A", self.drawn_lines);
        }
        for line in lines {
            let _ = writeln!(out, "\x1b[2K{line}");
        }
        // A shorter table than last time: clear what is left below it.
        for _ in lines.len()..self.drawn_lines {
            let _ = writeln!(out, "\x1b[2K");
        }
        self.drawn_lines = self.drawn_lines.max(lines.len());
        let _ = out.flush();
    }
}

fn table(summary: &Summary) -> Vec<String> {
    let mut lines = vec![format!(
        "{:<9} {:>9} {:>19} {:>10} {:>21}",
        "language", "processes", "critical sections", "hand-offs", "from other languages"
    )];
    for r in &summary.rows {
        lines.push(format!(
            "{:<9} {:>9} {:>19} {:>10} {:>21}",
            r.lang, r.processes, r.sections, r.handoffs_in, r.from_other_languages
        ));
    }
    lines.push(format!(
        "{:<9} {:>9} {:>19} {:>10} {:>21}",
        "total",
        summary.rows.iter().map(|r| r.processes).sum::<usize>(),
        summary.sections,
        summary.handoffs_ns.len(),
        summary.rows.iter().map(|r| r.from_other_languages).sum::<usize>()
    ));
    lines
}
