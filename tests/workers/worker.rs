//! The Rust worker of the cross-language tests and of `ferrolock demo`: a thin
//! user of the core crate that speaks the line protocol of tests/workers/README.md.
//!
//!     ferrolock-worker URL [WATCHDOG_MS]

mod elect;

use std::collections::HashMap;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ferrolock::{
    AcquireOptions, Client, CountDownLatch, Error, ErrorKind, Hold, Lock, LockKind, PermitExpirableSemaphore, Semaphore,
};
use tokio::io::{AsyncBufReadExt, BufReader};

/// The one lock handle (one holder) this worker keeps per (lock name, kind).
struct Entry {
    lock: Lock,
    /// Levels acquired and not yet released (a lost hold counts until it is released).
    depth: u32,
    /// The latest acquisition: its `lost()` future tells when the hold is lost.
    hold: Option<Hold>,
}

impl Entry {
    fn new(lock: Lock) -> Entry {
        Entry { lock, depth: 0, hold: None }
    }
}

/// CLOCK_MONOTONIC in nanoseconds, comparable with the other workers' clocks.
fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec to write into.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// `CODE MESSAGE` of an error, on one line.
fn coded(e: &Error) -> String {
    format!("{} {}", e.kind().code(), e.message().replace(['\r', '\n'], " "))
}

fn invalid(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidArgument, message)
}

/// A non-negative decimal integer field (at most 15 digits), as every worker parses them.
fn number(field: &str, what: &str) -> Result<u64, Error> {
    if field.is_empty() || field.len() > 15 || !field.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid(format!("{what} must be a non-negative integer, not {field:?}")));
    }
    Ok(field.parse().expect("checked digits"))
}

fn millis(field: &str, what: &str) -> Result<Duration, Error> {
    number(field, what).map(Duration::from_millis)
}

/// The protocol's lock kinds: `plain` is core's reentrant lock.
fn lock_kind(field: &str) -> Result<LockKind, Error> {
    match field {
        "plain" => Ok(LockKind::Reentrant),
        "fenced" | "fair" | "read" | "write" => field.parse(),
        _ => Err(invalid(format!("unknown lock kind {field:?}; give plain, fenced, fair, read or write"))),
    }
}

fn file_error(path: &str, e: std::io::Error) -> Error {
    invalid(format!("file {path:?}: {e}"))
}

/// The deliberately non-atomic counter update: read, then truncate and write.
fn bump_counter(path: &str) -> Result<(), Error> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(file_error(path, e)),
    };
    let text = text.trim();
    let digits = text.strip_prefix('-').unwrap_or(text);
    let value: i64 = if text.is_empty() {
        0
    } else if !digits.is_empty() && digits.len() <= 18 && digits.bytes().all(|b| b.is_ascii_digit()) {
        text.parse().expect("checked digits")
    } else {
        return Err(invalid(format!("counter file {path:?} does not hold an integer")));
    };
    std::fs::write(path, (value + 1).to_string()).map_err(|e| file_error(path, e))
}

/// What one `count` section holds: a lock level, or one permit of a semaphore.
enum Section<'a> {
    Lock(&'a mut Entry),
    Permit(Semaphore),
}

impl Section<'_> {
    /// Takes it, waiting as long as it takes; the token to log (0 without one).
    async fn take(&mut self) -> Result<u64, Error> {
        match self {
            Section::Lock(entry) => {
                acquire(entry, None).await?.expect("an unbounded wait only returns when acquired");
                Ok(entry.hold.as_ref().and_then(Hold::token).unwrap_or(0))
            }
            Section::Permit(semaphore) => {
                let taken = semaphore.acquire_permits(1, None).await?;
                assert!(taken, "an unbounded wait only returns when acquired");
                Ok(0)
            }
        }
    }

    async fn give_back(&mut self) -> Result<(), Error> {
        match self {
            Section::Lock(entry) => release(entry).await,
            Section::Permit(semaphore) => semaphore.release(1).await.map(|_| ()),
        }
    }
}

/// Core's log lines (INFO and up), kept for `waitlog`.
#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<u8>>>);

impl Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Logs {
    /// The message of the latest "waiting ... for lock \"NAME\"" line.
    fn latest_wait(&self, name: &str) -> Option<String> {
        let text = String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned();
        let lock = format!(" for lock \"{name}\"");
        text.lines().rev().find_map(|line| {
            let at = line.find("waiting ")?;
            let message = &line[at..];
            message.contains(&lock).then(|| message.to_string())
        })
    }
}

/// An optional number of milliseconds from the environment (issue 31's start-up settings).
fn env_ms(name: &str) -> Result<Option<Duration>, Error> {
    std::env::var(name).ok().filter(|v| !v.is_empty()).map(|v| millis(&v, name)).transpose()
}

struct Worker {
    client: Client,
    logs: Logs,
    locks: HashMap<(String, LockKind), Entry>,
    /// The kind each name was first used with: `release NAME` / `lost NAME` without a KIND.
    first_kind: HashMap<String, LockKind>,
    semaphores: HashMap<String, Semaphore>,
    permits: HashMap<String, PermitExpirableSemaphore>,
    latches: HashMap<String, CountDownLatch>,
}

impl Worker {
    /// The handle for (`name`, `kind`), created on first use; both sides of a
    /// read-write lock come from one `read_write_lock` (one holder).
    fn entry(&mut self, name: &str, kind: LockKind) -> Result<&mut Entry, Error> {
        let key = (name.to_string(), kind);
        if !self.locks.contains_key(&key) {
            match kind {
                LockKind::Read | LockKind::Write => {
                    let rw = self.client.read_write_lock(name)?;
                    self.locks.insert((name.to_string(), LockKind::Read), Entry::new(rw.read()));
                    self.locks.insert((name.to_string(), LockKind::Write), Entry::new(rw.write()));
                }
                _ => {
                    let lock = self.client.lock_with(name, ferrolock::LockOptions::kind(kind))?;
                    self.locks.insert(key.clone(), Entry::new(lock));
                }
            }
        }
        self.first_kind.entry(name.to_string()).or_insert(kind);
        Ok(self.locks.get_mut(&key).expect("inserted"))
    }

    /// The kind a command without KIND means: the one NAME was first used with
    /// (`plain` for a name not used yet).
    fn kind_of(&self, name: &str, kind: Option<&str>) -> Result<LockKind, Error> {
        match kind {
            Some(kind) => lock_kind(kind),
            None => Ok(self.first_kind.get(name).copied().unwrap_or(LockKind::Reentrant)),
        }
    }

    fn semaphore(&mut self, name: &str) -> Result<Semaphore, Error> {
        if !self.semaphores.contains_key(name) {
            self.semaphores.insert(name.to_string(), self.client.semaphore(name)?);
        }
        Ok(self.semaphores[name].clone())
    }

    fn permits(&mut self, name: &str) -> Result<PermitExpirableSemaphore, Error> {
        if !self.permits.contains_key(name) {
            self.permits.insert(name.to_string(), self.client.permit_expirable_semaphore(name)?);
        }
        Ok(self.permits[name].clone())
    }

    fn latch(&mut self, name: &str) -> Result<CountDownLatch, Error> {
        if !self.latches.contains_key(name) {
            self.latches.insert(name.to_string(), self.client.count_down_latch(name)?);
        }
        Ok(self.latches[name].clone())
    }

    async fn run(&mut self, line: &str) -> Result<String, Error> {
        let fields: Vec<&str> = line.split(' ').collect();
        match fields.as_slice() {
            ["acquire", name, kind] => self.acquire(name, lock_kind(kind)?, None).await,
            ["acquire", name, kind, wait] => {
                let kind = lock_kind(kind)?;
                self.acquire(name, kind, Some(millis(wait, "WAIT_MS")?)).await
            }
            ["release", name, kind @ ..] if kind.len() <= 1 => {
                let kind = self.kind_of(name, kind.first().copied())?;
                release(self.entry(name, kind)?).await?;
                Ok("ok".into())
            }
            ["label", name, label @ ..] if !label.is_empty() => {
                let kind = self.kind_of(name, None)?;
                self.entry(name, kind)?.lock.set_holder_label(Some(&label.join(" ")))?;
                Ok("ok".into())
            }
            ["holder", name] => {
                let kind = self.kind_of(name, None)?;
                let seen = self.entry(name, kind)?.lock.last_holder();
                Ok(format!("ok {}", seen.map_or_else(|| "-".to_string(), |h| h.describe())))
            }
            ["elect", name, port, sha, id, resign_ms] => {
                let (port, resign_ms) = (number(port, "FENCE_PORT")?, number(resign_ms, "RESIGN_MS")?);
                elect::start(&self.client, name, port, sha, id, resign_ms).await
            }
            ["waitlog", name] => Ok(format!("ok {}", self.logs.latest_wait(name).unwrap_or_else(|| "-".into()))),
            ["force_unlock", name] => {
                let kind = self.kind_of(name, None)?;
                Ok(format!("ok {}", self.entry(name, kind)?.lock.force_unlock().await?))
            }
            ["lost", name, kind @ ..] if kind.len() <= 1 => {
                let kind = self.kind_of(name, kind.first().copied())?;
                let entry = self.entry(name, kind)?;
                match (&entry.hold, entry.depth) {
                    (Some(hold), 1..) => {
                        hold.lost().await;
                        Ok("lost".into())
                    }
                    _ => Err(Error::new(ErrorKind::NotOwner, format!("lock {name:?} is not held by this worker"))),
                }
            }
            ["count", name, counter, log, max, seconds, hold_us, kind @ ..] if kind.len() <= 1 => {
                let (max, seconds) = (number(max, "MAX")?, number(seconds, "SECONDS")?);
                let hold_us = number(hold_us, "HOLD_US")?;
                let section = match kind.first().copied().unwrap_or("fenced") {
                    sem if sem.starts_with("sem:") => {
                        let permits = number(&sem[4..], "the permits of KIND sem:P")?;
                        let semaphore = self.semaphore(name)?;
                        semaphore.try_set_permits(permits).await?;
                        Section::Permit(semaphore)
                    }
                    kind => {
                        let kind = lock_kind(kind)?;
                        Section::Lock(self.entry(name, kind)?)
                    }
                };
                count(section, counter, log, max, seconds, hold_us).await
            }
            ["sem_set", name, permits] => {
                let permits = number(permits, "PERMITS")?;
                Ok(format!("ok {}", self.semaphore(name)?.try_set_permits(permits).await?))
            }
            ["sem_acquire", name, permits, wait @ ..] if wait.len() <= 1 => {
                let permits = number(permits, "PERMITS")?;
                let wait = wait.first().map(|w| millis(w, "WAIT_MS")).transpose()?;
                let taken = self.semaphore(name)?.acquire_permits(permits, wait).await?;
                Ok(if taken { "ok" } else { "timeout" }.into())
            }
            ["sem_release", name, permits] => {
                let permits = number(permits, "PERMITS")?;
                Ok(format!("ok {}", self.semaphore(name)?.release(permits).await?))
            }
            ["sem_available", name] => Ok(format!("ok {}", self.semaphore(name)?.available().await?)),
            ["permit_acquire", name, rest @ ..] if rest.len() <= 2 => {
                let wait = match rest.first() {
                    None | Some(&"-") => None,
                    Some(wait) => Some(millis(wait, "WAIT_MS")?),
                };
                let lease = rest.get(1).map(|l| millis(l, "LEASE_MS")).transpose()?;
                match self.permits(name)?.acquire_with(wait, lease).await? {
                    // The permit outlives this command: the test releases it by id.
                    Some(permit) => Ok(format!("ok {}", permit.forget())),
                    None => Ok("timeout".into()),
                }
            }
            ["permit_release", name, id] => Ok(format!("ok {}", self.permits(name)?.release(id).await?)),
            ["permit_set", name, permits] => {
                let permits = number(permits, "PERMITS")?;
                Ok(format!("ok {}", self.permits(name)?.try_set_permits(permits).await?))
            }
            ["latch_set", name, count] => {
                let count = number(count, "COUNT")?;
                Ok(format!("ok {}", self.latch(name)?.try_set_count(count).await?))
            }
            ["latch_down", name] => Ok(format!("ok {}", self.latch(name)?.count_down().await?)),
            ["latch_count", name] => Ok(format!("ok {}", self.latch(name)?.count().await?)),
            ["latch_wait", name, wait @ ..] if wait.len() <= 1 => {
                let wait = wait.first().map(|w| millis(w, "WAIT_MS")).transpose()?;
                Ok(if self.latch(name)?.wait(wait).await? { "ok open" } else { "timeout" }.into())
            }
            _ => Err(invalid(format!("malformed command {line:?}; see tests/workers/README.md"))),
        }
    }

    async fn acquire(&mut self, name: &str, kind: LockKind, wait: Option<Duration>) -> Result<String, Error> {
        let entry = self.entry(name, kind)?;
        Ok(match acquire(entry, wait).await? {
            None => "timeout".into(),
            Some(token) => format!("ok {token}"),
        })
    }
}

/// Acquires one level; `Some(token)` (`-` for a lock without one) or `None` when not acquired in time.
async fn acquire(entry: &mut Entry, wait: Option<Duration>) -> Result<Option<String>, Error> {
    // A lost hold is over: the next acquisition starts a new one.
    let depth = if entry.lock.is_lost() { 0 } else { entry.depth };
    let Some(hold) = entry.lock.acquire_hold(AcquireOptions { wait, lease: None }).await? else {
        return Ok(None);
    };
    entry.depth = depth + 1;
    let token = hold.token().map_or_else(|| "-".to_string(), |t| t.to_string());
    entry.hold = Some(hold);
    Ok(Some(token))
}

async fn release(entry: &mut Entry) -> Result<(), Error> {
    let result = entry.lock.release().await;
    match &result {
        Ok(_) => entry.depth = entry.depth.saturating_sub(1),
        Err(e) if e.kind() == ErrorKind::LockLost => entry.depth = entry.depth.saturating_sub(1),
        Err(e) if e.kind() == ErrorKind::NotOwner => entry.depth = 0,
        Err(_) => {}
    }
    result.map(|_| ())
}

async fn count(mut section: Section<'_>, counter: &str, log: &str, max: u64, seconds: u64, hold_us: u64) -> Result<String, Error> {
    let mut log_file =
        std::fs::OpenOptions::new().append(true).create(true).open(log).map_err(|e| file_error(log, e))?;
    let start = now_ns();
    let mut done = 0u64;
    while (max == 0 || done < max) && (seconds == 0 || now_ns() - start < seconds * 1_000_000_000) {
        let t0 = now_ns();
        let token = section.take().await?;
        let t1 = now_ns();
        let bumped = bump_counter(counter);
        if hold_us > 0 {
            tokio::task::block_in_place(|| std::thread::sleep(Duration::from_micros(hold_us)));
        }
        let t2 = now_ns();
        let released = section.give_back().await;
        released?;
        bumped?;
        log_file.write_all(format!("{token} {t0} {t1} {t2}\n").as_bytes()).map_err(|e| file_error(log, e))?;
        log_file.flush().map_err(|e| file_error(log, e))?;
        done += 1;
    }
    Ok(format!("ok {done}"))
}
#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let watchdog_ms = match args.as_slice() {
        [_] => Ok(30_000),
        [_, watchdog] => number(watchdog, "WATCHDOG_MS"),
        _ => Err(invalid("usage: ferrolock-worker URL [WATCHDOG_MS]")),
    };
    let logs = Logs::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_ansi(false)
        .with_max_level(tracing::Level::INFO)
        .with_writer(move || writer.clone())
        .finish();
    let _ = tracing::subscriber::set_global_default(subscriber);
    let settings = (env_ms("FERROLOCK_WORKER_NOTE_AFTER_MS"), env_ms("FERROLOCK_WORKER_SLOW_WAIT_MS"));
    let connected = match (watchdog_ms, settings) {
        (Ok(ms), (Ok(note_after), Ok(slow_wait))) => {
            let mut builder = Client::builder(args[0].as_str()).watchdog_timeout(Duration::from_millis(ms));
            if let Ok(app) = std::env::var("FERROLOCK_WORKER_APP") {
                builder = builder.app_name(app);
            }
            if let Some(after) = note_after {
                builder = builder.holder_note_after(after);
            }
            if let Some(after) = slow_wait {
                builder = builder.slow_wait_log(Some(after));
            }
            builder.connect().await
        }
        (Err(e), _) | (_, (Err(e), _)) | (_, (_, Err(e))) => Err(e),
    };
    let client = match connected {
        Ok(client) => client,
        Err(e) => {
            say(&format!("fail {}", coded(&e)));
            std::process::exit(1);
        }
    };
    say(&format!("ready rust {}", std::process::id()));

    let mut worker = Worker {
        client,
        logs,
        locks: HashMap::new(),
        first_kind: HashMap::new(),
        semaphores: HashMap::new(),
        permits: HashMap::new(),
        latches: HashMap::new(),
    };
    let mut stdin = BufReader::new(tokio::io::stdin());
    let mut line = Vec::new();
    loop {
        line.clear();
        match stdin.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        let result = match std::str::from_utf8(&line) {
            Ok("quit") => break,
            Ok(text) if !text.contains('\0') => worker.run(text).await,
            _ => Err(invalid("the command is not valid UTF-8 text")),
        };
        say(&result.unwrap_or_else(|e| format!("err {}", coded(&e))));
    }
    // Shutting the client down releases whatever this worker still holds.
    let _ = worker.client.shutdown().await;
    say("bye");
    std::process::exit(0);
}
