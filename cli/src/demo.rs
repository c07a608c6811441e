//! `ferrolock demo`: workers in Rust, Python, Node and C (tests/workers) contend on
//! one fenced lock for N seconds, each doing non-atomic increments of a shared
//! counter file and logging every critical section. A live view shows per-language
//! sections and hand-offs; the end prints the table and checks that no increment
//! was lost and that fencing tokens followed the order of the sections. A second
//! act (demo/permits.rs) has the same workers share a semaphore of 3 permits and
//! shows that at most 3 were inside at once.
//!
//! With no `--url` and no `REDIS_URL` it runs its own redis-server on a free
//! loopback port in a temp dir. The workers come from the repository this binary
//! was built from (or `--workers DIR`), built by `bash scripts/build.sh`
//! (`bash scripts/demo.sh` builds, then runs this). An installed binary (`cargo
//! install --path cli`) finds them there too; when something is missing it says
//! what, and the command that builds it, before starting anything.

mod permits;
mod picture;
mod stats;
mod view;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ferrolock_harness::{own_profile, own_target_dir, RedisServer, ScratchDir, SectionLog, Worker, LANGUAGES};

use crate::target::redact;
use stats::{summarize, Summary};

/// Worker processes per language.
const PROCESSES_PER_LANGUAGE: usize = 2;

const EXIT_FAILED: i32 = 1;

pub fn run(url: Option<String>, seconds: u64, workers: Option<PathBuf>, keep_logs: Option<PathBuf>) -> i32 {
    match Demo::new(url, seconds, workers, keep_logs).and_then(|demo| demo.run()) {
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
    /// The cargo target directory the launchers take the built workers from.
    target_dir: PathBuf,
    /// Removed (with what is in it) when the demo ends.
    _scratch: ScratchDir,
    /// Where the section logs and the counter go: `--logs DIR` (kept), else `dir`.
    logs_dir: PathBuf,
    name: String,
}

/// The repository this binary was built from (a `cargo install --path cli` too).
fn built_from() -> PathBuf {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    repo.canonicalize().unwrap_or(repo)
}

impl Demo {
    fn new(url: Option<String>, seconds: u64, workers: Option<PathBuf>, keep_logs: Option<PathBuf>) -> Result<Demo, String> {
        let workers_dir = workers.unwrap_or_else(|| built_from().join("tests").join("workers"));
        if !workers_dir.join("run-rust").exists() {
            return Err(format!(
                "no workers in {dir}. The demo runs the workers of a ferrolock repository clone \
                 (tests/workers/run-{{rust,python,node,c}}, with the bindings built); this binary was \
                 built from {repo}. In a clone: `bash scripts/demo.sh` (builds everything, then runs \
                 the demo), or `FERROLOCK_PROFILE={profile} bash scripts/build.sh` and then \
                 `ferrolock demo --workers CLONE/tests/workers`",
                dir = workers_dir.display(),
                repo = built_from().display(),
                profile = own_profile()
            ));
        }
        let target_dir = find_built_workers(&workers_dir)?;
        let dir = ScratchDir::new("demo")?;
        let logs_dir = match keep_logs {
            Some(keep) => {
                std::fs::create_dir_all(&keep).map_err(|e| format!("cannot create {}: {e}", keep.display()))?;
                keep
            }
            None => dir.path().to_path_buf(),
        };
        let (url, server) = match url {
            Some(url) => (url, None),
            None if !on_path("redis-server") => {
                return Err("no redis-server on PATH: install it (e.g. apt-get install redis-server; \
                            scripts/build.sh does) or give a server with --url redis://HOST:PORT"
                    .to_string())
            }
            None => {
                let server = RedisServer::try_start(&[])?;
                (server.url(), Some(server))
            }
        };
        let name = format!("ferrolock:demo:{}", std::process::id());
        Ok(Demo { url, server, seconds, workers_dir, target_dir, _scratch: dir, logs_dir, name })
    }

    fn run(self) -> Result<i32, String> {
        let mut workers = self.start_workers()?;
        let counter = self.logs_dir.join("counter");
        let log_of = |i: usize, lang: &str| self.logs_dir.join(format!("{i}-{lang}.log"));
        for (i, worker) in workers.iter().enumerate() {
            // A log kept from an earlier run would be read as this run's sections.
            let _ = std::fs::remove_file(log_of(i, worker.lang));
        }
        let _ = std::fs::remove_file(&counter);
        let mut logs: Vec<SectionLog> = workers.iter().enumerate().map(|(i, w)| SectionLog::new(log_of(i, w.lang))).collect();
        for (i, worker) in workers.iter_mut().enumerate() {
            let log = log_of(i, worker.lang);
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
        let process_logs = refresh_logs(&langs, &mut logs)?;
        let summary = summarize(&LANGUAGES, &process_logs);
        view.finish(&summary);
        let counted: usize = std::fs::read_to_string(&counter)
            .map_err(|e| format!("reading the counter: {e}"))?
            .trim()
            .parse()
            .map_err(|_| "the counter file does not hold a number".to_string())?;
        let reported: u64 = done.iter().map(|n| n.unwrap_or(0)).sum();
        let lost_updates = summary.sections as i64 - counted as i64;
        print_report(&summary, counted, lost_updates);
        print_terms();
        println!();
        for line in picture::timeline(&LANGUAGES, &process_logs) {
            println!("{line}");
        }
        println!();
        for line in picture::wait_histogram(&LANGUAGES, &process_logs) {
            println!("{line}");
        }

        let second = self.second_act(&mut workers);
        for worker in workers {
            let (lang, pid) = (worker.lang, worker.pid);
            worker.try_quit().map_err(|e| format!("the {lang} worker (pid {pid}) did not quit cleanly: {e}"))?;
        }
        let (most_inside, permits_back) = second?;
        self.clean_up();

        let mut failures = Vec::new();
        if most_inside > permits::PERMITS {
            failures.push(format!("{most_inside} workers inside a semaphore of {} permits", permits::PERMITS));
        }
        if permits_back != Some(permits::PERMITS as i64) {
            failures.push(format!("{permits_back:?} permits free at the end, not {}", permits::PERMITS));
        }
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

    /// The semaphore of the second act.
    fn semaphore_name(&self) -> String {
        format!("{}:permits", self.name)
    }

    /// The second act: every worker takes one permit of a semaphore of
    /// `permits::PERMITS` at a time for half the demo's time; prints its report.
    /// Returns the most inside at once and the free permits at the end.
    fn second_act(&self, workers: &mut [Worker]) -> Result<(usize, Option<i64>), String> {
        let name = self.semaphore_name();
        let seconds = self.seconds.div_ceil(2);
        println!();
        println!(
            "act 2: {} workers share semaphore \"{name}\" of {} permits for {seconds} s (each takes one, stays \
             inside {} ms, gives it back)",
            workers.len(),
            permits::PERMITS,
            permits::HOLD_US / 1000
        );
        let log_of = |i: usize, lang: &str| self.logs_dir.join(format!("permits-{i}-{lang}.log"));
        for (i, worker) in workers.iter_mut().enumerate() {
            let log = log_of(i, worker.lang);
            let _ = std::fs::remove_file(&log);
            // Each its own counter: with several inside, a shared one would mean nothing.
            let counter = self._scratch.join(format!("permits-counter-{i}"));
            worker.send(&format!(
                "count {name} {} {} 0 {seconds} {} sem:{}",
                counter.display(),
                log.display(),
                permits::HOLD_US,
                permits::PERMITS
            ));
        }
        let give_up = Instant::now() + Duration::from_secs(seconds + 60);
        let mut done = vec![false; workers.len()];
        while done.iter().any(|d| !d) {
            for (i, worker) in workers.iter_mut().enumerate() {
                if done[i] {
                    continue;
                }
                match worker.try_reply(Duration::from_millis(100)) {
                    Ok(reply) if reply.starts_with("ok ") => done[i] = true,
                    Ok(reply) => return Err(format!("the {} worker (pid {}) failed in act 2: {reply}", worker.lang, worker.pid)),
                    Err(e) if e.starts_with("no reply") => {}
                    Err(e) => return Err(format!("the {} worker (pid {}) {e}", worker.lang, worker.pid)),
                }
            }
            if Instant::now() > give_up {
                return Err("the workers did not finish act 2 within a minute of its end; something is stuck".into());
            }
        }
        let langs: Vec<&'static str> = workers.iter().map(|w| w.lang).collect();
        let mut logs: Vec<SectionLog> = workers.iter().enumerate().map(|(i, w)| SectionLog::new(log_of(i, w.lang))).collect();
        let process_logs = refresh_logs(&langs, &mut logs)?;
        let most = permits::most_inside(process_logs.iter().flat_map(|(_, s)| s.iter().map(|s| (s.acquired_ns, s.released_ns))));
        let back = redis::Client::open(self.url.as_str())
            .and_then(|c| c.get_connection())
            .and_then(|mut c| redis::cmd("GET").arg(&name).query::<Option<i64>>(&mut c))
            .ok()
            .flatten();
        println!();
        for line in permits::report(&LANGUAGES, &process_logs, &name, back) {
            println!("{line}");
        }
        Ok((most, back))
    }

    /// Starts every worker at once and waits for all to be ready; any failure stops the demo.
    fn start_workers(&self) -> Result<Vec<Worker>, String> {
        let target = self.target_dir.clone();
        let started: Vec<Result<Worker, String>> = std::thread::scope(|scope| {
            let handles: Vec<_> = LANGUAGES
                .iter()
                .flat_map(|&lang| std::iter::repeat_n(lang, PROCESSES_PER_LANGUAGE))
                .map(|lang| {
                    let (url, dir, target) = (&self.url, &self.workers_dir, &target);
                    scope.spawn(move || Worker::try_start(lang, url, 30_000, dir, target, Duration::from_secs(60), &[]))
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("worker start-up panicked".into()))).collect()
        });
        started.into_iter().collect::<Result<Vec<_>, _>>().map_err(|e| format!("{e}\n(build the workers with: bash scripts/build.sh)"))
    }

    /// On someone else's server, leave nothing behind: the lock itself is gone after the
    /// last release, the fencing-token counter and the semaphore are ours to delete.
    fn clean_up(&self) {
        if self.server.is_none() {
            let ours = [format!("redisson_lock_token:{{{}}}", self.name), self.semaphore_name()];
            let deleted = redis::Client::open(self.url.as_str())
                .and_then(|c| c.get_connection())
                .and_then(|mut c| redis::cmd("DEL").arg(&ours[..]).query::<i64>(&mut c));
            if let Err(e) = deleted {
                eprintln!("ferrolock demo: could not delete {}: {e}", ours.join(", "));
            }
        }
    }
}

/// The cargo target directory holding the built Rust and C workers of this binary's
/// profile: `$CARGO_TARGET_DIR`, this binary's own (a build in the repository), or the
/// repository's `target` (an installed binary). When `workers_dir` is a repository's
/// `tests/workers`, everything the four workers need is checked first, and what is
/// missing is listed with the command that builds it. Other worker directories (the
/// `--workers` of a test) are left to their launchers.
fn find_built_workers(workers_dir: &Path) -> Result<PathBuf, String> {
    let profile = own_profile();
    let repo = workers_dir.join("../..");
    let repo = repo.canonicalize().unwrap_or(repo);
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR").filter(|d| !d.is_empty()) {
        // Relative the way the launchers read it: from the repository.
        candidates.push(repo.join(dir));
    }
    candidates.push(own_target_dir());
    candidates.push(repo.join("target"));
    let found = candidates.iter().find(|dir| dir.join(profile).join("ferrolock-worker").is_file()).cloned();
    if !repo.join("scripts").join("build.sh").is_file() {
        return Ok(found.unwrap_or_else(own_target_dir));
    }
    let target = found.clone().unwrap_or_else(|| repo.join("target"));
    let mut missing = Vec::new();
    if found.is_none() {
        missing.push(format!("the Rust worker ({})", target.join(profile).join("ferrolock-worker").display()));
    }
    let c_worker = target.join(profile).join("ferrolock-worker-c");
    if !c_worker.is_file() {
        missing.push(format!("the C worker and libferrolock ({})", c_worker.display()));
    }
    let python = repo.join("bindings-python/.venv/bin/python");
    if !python.exists() {
        missing.push(format!("the Python binding's virtualenv ({})", python.display()));
    }
    if !on_path("node") {
        missing.push("Node.js (the node command, >= 20)".to_string());
    }
    let addon = repo.join("bindings-node/ferrolock.node");
    if !addon.is_file() {
        missing.push(format!("the Node addon ({})", addon.display()));
    }
    if missing.is_empty() {
        return Ok(target);
    }
    Err(format!(
        "the demo runs workers in Rust, Python, Node and C from the repository at {repo} \
         ({profile} builds: this ferrolock is one), and these are not built:\n  - {list}\n\
         Build them with:\n  cd {repo} && FERROLOCK_PROFILE={profile} bash scripts/build.sh\n\
         (it installs what is missing: redis-server, gcc, Node.js, a Python venv), or build and \
         run the whole demo with: bash {repo}/scripts/demo.sh",
        repo = repo.display(),
        list = missing.join("\n  - ")
    ))
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

/// Every worker's sections so far, reading only what the logs gained since last time.
fn refresh_logs<'a>(langs: &[&'static str], logs: &'a mut [SectionLog]) -> Result<Vec<stats::ProcessLog<'a>>, String> {
    for log in logs.iter_mut() {
        log.refresh()?;
    }
    Ok(langs.iter().zip(logs.iter()).map(|(&lang, log)| (lang, log.sections.as_slice())).collect())
}

/// One line per term of the table and the report.
pub const TERMS: [(&str, &str); 6] = [
    ("critical section", "acquire, add 1 to a shared counter file (read, then write), release"),
    ("hand-off", "the lock passing from one worker process to another that was waiting for it"),
    ("from other languages", "hand-offs from a worker in another language (e.g. from Python to C)"),
    ("hand-off p50 / p99", "from a release to the waiting worker's acquisition: median, 99th percentile"),
    ("lost updates", "increments lost to two workers holding the lock at once: must be 0"),
    ("fencing tokens", "each acquisition's token is larger than the one before it"),
];

fn print_terms() {
    println!();
    println!("what the terms mean:");
    for (term, meaning) in TERMS {
        println!("  {term:<20}  {meaning}");
    }
}

/// The build the figures come from: the workers are built with this binary, in the
/// same profile and at the same optimisation level (scripts/build.sh --demo).
fn build_note() -> String {
    let (profile, opt, cold) = (env!("FERROLOCK_BUILT_PROFILE"), env!("FERROLOCK_BUILT_OPT_LEVEL"), env!("FERROLOCK_BUILT_COLD_OPT_LEVEL"));
    let hint = match (profile, opt) {
        ("release", "3") => "",
        ("release", _) => "; scripts/demo.sh's quick build: FERROLOCK_DEMO_OPT_LEVEL=3 bash scripts/demo.sh builds as the benchmarks do",
        _ => "; not optimised as a release is: FERROLOCK_PROFILE=release bash scripts/demo.sh",
    };
    let cold = if cold.is_empty() { String::new() } else { format!(" (TLS, URL and argument parsing, and this CLI, at {cold})") };
    format!("{profile} builds at opt-level {opt}{cold}{hint}")
}

fn print_report(summary: &Summary, counted: usize, lost_updates: i64) {
    let ms = |p: f64| summary.handoff_percentile_ms(p).map_or("-".to_string(), |v| format!("{v:.3} ms"));
    println!();
    println!("hand-offs between processes   {}", summary.handoffs_ns.len());
    println!("hand-off p50 / p99            {} / {}", ms(0.5), ms(0.99));
    println!("longest wait                  {:.3} ms", summary.longest_wait_ns as f64 / 1e6);
    println!("measured with                 {}", build_note());
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
