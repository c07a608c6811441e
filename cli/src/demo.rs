//! `ferrolock demo`: workers in Rust, Python, Node and C (tests/workers) contend on
//! one fenced lock for N seconds, each doing non-atomic increments of a shared
//! counter file and logging every critical section. A live view shows per-language
//! sections and hand-offs; the end prints the table and checks that no increment
//! was lost and that fencing tokens followed the order of the sections.
//!
//! With no `--url` and no `REDIS_URL` it runs its own redis-server on a free
//! loopback port in a temp dir. The workers come from this repository's bindings,
//! built by `bash scripts/build.sh` (`bash scripts/demo.sh` builds, then runs this).

mod stats;
mod view;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ferrolock_harness::{own_target_dir, RedisServer, ScratchDir, SectionLog, Worker, LANGUAGES};

use crate::target::redact;
use stats::{summarize, Summary};

/// Worker processes per language.
const PROCESSES_PER_LANGUAGE: usize = 2;

const EXIT_FAILED: i32 = 1;

pub fn run(url: Option<String>, seconds: u64, workers: Option<PathBuf>) -> i32 {
    match Demo::new(url, seconds, workers).and_then(|demo| demo.run()) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("ferrolock demo: {message}");
            EXIT_FAILED
        }
    }
}

struct Demo {
    url: String,
    /// Our own server, stopped (and its directory removed) when the demo ends.
    server: Option<RedisServer>,
    seconds: u64,
    workers_dir: PathBuf,
    dir: ScratchDir,
    name: String,
}

impl Demo {
    fn new(url: Option<String>, seconds: u64, workers: Option<PathBuf>) -> Result<Demo, String> {
        let workers_dir = workers.unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/workers"));
        if !workers_dir.join("run-rust").exists() {
            return Err(format!(
                "no workers in {}: run the demo from a clone of the repository (bash scripts/demo.sh), or pass --workers DIR",
                workers_dir.display()
            ));
        }
        let (url, server) = match url {
            Some(url) => (url, None),
            None => {
                let server = RedisServer::try_start(&[])?;
                (server.url(), Some(server))
            }
        };
        let dir = ScratchDir::new("demo")?;
        Ok(Demo { url, server, seconds, workers_dir, dir, name: format!("ferrolock:demo:{}", std::process::id()) })
    }

    fn run(self) -> Result<i32, String> {
        let mut workers = self.start_workers()?;
        let counter = self.dir.join("counter");
        let mut logs: Vec<SectionLog> = (0..workers.len()).map(|i| SectionLog::new(self.dir.join(format!("{i}.log")))).collect();
        for (i, worker) in workers.iter_mut().enumerate() {
            let log = self.dir.join(format!("{i}.log"));
            worker.send(&format!("count {} {} {} 0 {} 0", self.name, counter.display(), log.display(), self.seconds));
        }

        let langs: Vec<&'static str> = workers.iter().map(|w| w.lang).collect();
        let mut view = view::Live::new(&self.name, &redact(&self.url), workers.len());
        let started = Instant::now();
        let give_up = started + Duration::from_secs(self.seconds + 60);
        let mut done: Vec<Option<u64>> = vec![None; workers.len()];
        while done.iter().any(Option::is_none) {
            for (i, worker) in workers.iter_mut().enumerate() {
                if done[i].is_some() {
                    continue;
                }
                match worker.try_reply(Duration::ZERO) {
                    Ok(reply) => match reply.strip_prefix("ok ").and_then(|n| n.parse().ok()) {
                        Some(n) => done[i] = Some(n),
                        None => return Err(format!("the {} worker (pid {}) failed: {reply}", worker.lang, worker.pid)),
                    },
                    Err(e) if e.starts_with("no reply") => {}
                    Err(e) => return Err(format!("the {} worker (pid {}) {e}", worker.lang, worker.pid)),
                }
            }
            if Instant::now() > give_up {
                return Err("the workers did not finish within a minute of the end; something is stuck".into());
            }
            let left = Duration::from_secs(self.seconds).saturating_sub(started.elapsed());
            view.update(&summarize(&LANGUAGES, &refresh_logs(&langs, &mut logs)?), left);
            std::thread::sleep(Duration::from_millis(100)); // the view's refresh rate, not a synchronisation
        }
        for worker in workers {
            let (lang, pid) = (worker.lang, worker.pid);
            worker.try_quit().map_err(|e| format!("the {lang} worker (pid {pid}) did not quit cleanly: {e}"))?;
        }

        let summary = summarize(&LANGUAGES, &refresh_logs(&langs, &mut logs)?);
        view.finish(&summary);
        let counted: usize = std::fs::read_to_string(&counter)
            .map_err(|e| format!("reading the counter: {e}"))?
            .trim()
            .parse()
            .map_err(|_| "the counter file does not hold a number".to_string())?;
        let reported: u64 = done.iter().map(|n| n.unwrap_or(0)).sum();
        let lost_updates = summary.sections as i64 - counted as i64;
        print_report(&summary, counted, lost_updates);
        self.clean_up();

        let mut failures = Vec::new();
        if lost_updates != 0 {
            failures.push(format!("{lost_updates} lost updates"));
        }
        if reported as usize != summary.sections {
            failures.push(format!("workers reported {reported} sections but logged {}", summary.sections));
        }
        if !summary.tokens_increasing || summary.overlaps > 0 {
            failures.push("fencing tokens out of order or overlapping sections".into());
        }
        if let Some(idle) = summary.rows.iter().find(|r| r.sections == 0) {
            failures.push(format!("the {} workers never got the lock", idle.lang));
        }
        if failures.is_empty() {
            Ok(0)
        } else {
            eprintln!("ferrolock demo: FAILED: {}", failures.join("; "));
            Ok(EXIT_FAILED)
        }
    }

    /// Starts every worker at once and waits for all to be ready; any failure stops the demo.
    fn start_workers(&self) -> Result<Vec<Worker>, String> {
        let target = own_target_dir();
        let started: Vec<Result<Worker, String>> = std::thread::scope(|scope| {
            let handles: Vec<_> = LANGUAGES
                .iter()
                .flat_map(|&lang| std::iter::repeat_n(lang, PROCESSES_PER_LANGUAGE))
                .map(|lang| {
                    let (url, dir, target) = (&self.url, &self.workers_dir, &target);
                    scope.spawn(move || Worker::try_start(lang, url, 30_000, dir, target, Duration::from_secs(60)))
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("worker start-up panicked".into()))).collect()
        });
        started.into_iter().collect::<Result<Vec<_>, _>>().map_err(|e| format!("{e}\n(build the workers with: bash scripts/build.sh)"))
    }

    /// On someone else's server, leave nothing behind: the lock itself is gone after the
    /// last release, the fencing-token counter is ours to delete.
    fn clean_up(&self) {
        if self.server.is_none() {
            let token_key = format!("redisson_lock_token:{{{}}}", self.name);
            let deleted = redis::Client::open(self.url.as_str())
                .and_then(|c| c.get_connection())
                .and_then(|mut c| redis::cmd("DEL").arg(&token_key).query::<i64>(&mut c));
            if let Err(e) = deleted {
                eprintln!("ferrolock demo: could not delete {token_key}: {e}");
            }
        }
    }
}

/// Every worker's sections so far, reading only what the logs gained since last time.
fn refresh_logs<'a>(langs: &[&'static str], logs: &'a mut [SectionLog]) -> Result<Vec<stats::ProcessLog<'a>>, String> {
    for log in logs.iter_mut() {
        log.refresh()?;
    }
    Ok(langs.iter().zip(logs.iter()).map(|(&lang, log)| (lang, log.sections.as_slice())).collect())
}

fn print_report(summary: &Summary, counted: usize, lost_updates: i64) {
    let ms = |p: f64| summary.handoff_percentile_ms(p).map_or("-".to_string(), |v| format!("{v:.3} ms"));
    println!();
    println!("hand-offs between processes   {}", summary.handoffs_ns.len());
    println!("hand-off p50 / p99            {} / {}", ms(0.5), ms(0.99));
    println!("longest wait                  {:.3} ms", summary.longest_wait_ns as f64 / 1e6);
    println!("lost updates                  {lost_updates}   (counter {counted}, critical sections {})", summary.sections);
    println!(
        "fencing tokens                {}",
        if summary.tokens_increasing && summary.overlaps == 0 {
            "strictly increasing in the order of the sections"
        } else {
            "OUT OF ORDER"
        }
    );
}
