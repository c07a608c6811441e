//! The Rust worker of the cross-language tests and of `ferrolock demo`: a thin
//! user of the core crate that speaks the line protocol of tests/workers/README.md.
//!
//!     ferrolock-worker URL [WATCHDOG_MS]

use std::collections::HashMap;
use std::io::Write;
use std::time::Duration;

use ferrolock::{AcquireOptions, Client, Error, ErrorKind, Hold, Lock};
use tokio::io::{AsyncBufReadExt, BufReader};

/// The one lock handle (one holder) this worker keeps per lock name.
struct Entry {
    lock: Lock,
    /// Levels acquired and not yet released (a lost hold counts until it is released).
    depth: u32,
    /// The latest acquisition: its `lost()` future tells when the hold is lost.
    hold: Option<Hold>,
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

struct Worker {
    client: Client,
    locks: HashMap<String, Entry>,
}

impl Worker {
    /// The handle for `name`, created on first use (fenced or plain).
    fn entry(&mut self, name: &str, fenced: bool) -> Result<&mut Entry, Error> {
        if !self.locks.contains_key(name) {
            let lock = if fenced { self.client.fenced_lock(name)? } else { self.client.lock(name)? };
            self.locks.insert(name.to_string(), Entry { lock, depth: 0, hold: None });
        }
        Ok(self.locks.get_mut(name).expect("inserted"))
    }

    async fn run(&mut self, line: &str) -> Result<String, Error> {
        let fields: Vec<&str> = line.split(' ').collect();
        match fields.as_slice() {
            ["acquire", name, mode @ ("plain" | "fenced")] => self.acquire(name, *mode == "fenced", None).await,
            ["acquire", name, mode @ ("plain" | "fenced"), wait] => {
                let wait = number(wait, "WAIT_MS")?;
                self.acquire(name, *mode == "fenced", Some(wait)).await
            }
            ["release", name] => {
                release(self.entry(name, false)?).await?;
                Ok("ok".into())
            }
            ["force_unlock", name] => Ok(format!("ok {}", self.entry(name, false)?.lock.force_unlock().await?)),
            ["lost", name] => {
                let entry = self.entry(name, false)?;
                match (&entry.hold, entry.depth) {
                    (Some(hold), 1..) => {
                        hold.lost().await;
                        Ok("lost".into())
                    }
                    _ => Err(Error::new(ErrorKind::NotOwner, format!("lock {name:?} is not held by this worker"))),
                }
            }
            ["count", name, counter, log, max, seconds, hold_us] => {
                let (max, seconds) = (number(max, "MAX")?, number(seconds, "SECONDS")?);
                let hold_us = number(hold_us, "HOLD_US")?;
                let entry = self.entry(name, true)?;
                count(entry, counter, log, max, seconds, hold_us).await
            }
            _ => Err(invalid(format!("malformed command {line:?}; see tests/workers/README.md"))),
        }
    }

    async fn acquire(&mut self, name: &str, fenced: bool, wait_ms: Option<u64>) -> Result<String, Error> {
        let entry = self.entry(name, fenced)?;
        Ok(match acquire(entry, wait_ms.map(Duration::from_millis)).await? {
            None => "timeout".into(),
            Some(token) => format!("ok {token}"),
        })
    }
}

/// Acquires one level; `Some(token)` (`-` for a plain lock) or `None` when not acquired in time.
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

async fn count(entry: &mut Entry, counter: &str, log: &str, max: u64, seconds: u64, hold_us: u64) -> Result<String, Error> {
    let mut log_file =
        std::fs::OpenOptions::new().append(true).create(true).open(log).map_err(|e| file_error(log, e))?;
    let start = now_ns();
    let mut done = 0u64;
    while (max == 0 || done < max) && (seconds == 0 || now_ns() - start < seconds * 1_000_000_000) {
        let t0 = now_ns();
        let token = acquire(entry, None).await?.expect("an unbounded wait only returns when acquired");
        let t1 = now_ns();
        let bumped = bump_counter(counter);
        if hold_us > 0 {
            tokio::task::block_in_place(|| std::thread::sleep(Duration::from_micros(hold_us)));
        }
        let t2 = now_ns();
        let released = release(entry).await;
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
    let connected = match watchdog_ms {
        Ok(ms) => Client::builder(args[0].as_str()).watchdog_timeout(Duration::from_millis(ms)).connect().await,
        Err(e) => Err(e),
    };
    let client = match connected {
        Ok(client) => client,
        Err(e) => {
            say(&format!("fail {}", coded(&e)));
            std::process::exit(1);
        }
    };
    say(&format!("ready rust {}", std::process::id()));

    let mut worker = Worker { client, locks: HashMap::new() };
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
