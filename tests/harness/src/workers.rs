//! Drives the language workers of tests/workers (protocol: tests/workers/README.md)
//! and reads the section logs their `count` command writes. Used by the
//! cross-language suite and by `ferrolock demo`.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::Duration;

/// Every language with a worker, in the order reports list them.
pub const LANGUAGES: [&str; 4] = ["rust", "python", "node", "c"];

/// One running worker process.
pub struct Worker {
    pub lang: &'static str,
    pub pid: u32,
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
}

impl Worker {
    /// Starts the worker of `lang` built in this workspace (tests). Panics when it cannot start.
    pub fn start(lang: &'static str, url: &str, watchdog_ms: u64) -> Worker {
        Worker::start_with_env(lang, url, watchdog_ms, &[])
    }

    /// [`Worker::start`] with start-up settings in the environment (e.g. FERROLOCK_WORKER_APP).
    pub fn start_with_env(lang: &'static str, url: &str, watchdog_ms: u64, env: &[(&str, &str)]) -> Worker {
        let workers = crate::repo_root().join("tests").join("workers");
        Worker::try_start(lang, url, watchdog_ms, &workers, &own_target_dir(), Duration::from_secs(60), env)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// Starts `<workers_dir>/run-<lang> URL WATCHDOG_MS` (with `env` added to its
    /// environment) and waits for its `ready` line. `target_dir` is the cargo target
    /// directory holding the built Rust and C workers.
    pub fn try_start(
        lang: &'static str,
        url: &str,
        watchdog_ms: u64,
        workers_dir: &Path,
        target_dir: &Path,
        ready_within: Duration,
        env: &[(&str, &str)],
    ) -> Result<Worker, String> {
        let launcher = workers_dir.join(format!("run-{lang}"));
        let mut child = Command::new(&launcher)
            .arg(url)
            .arg(watchdog_ms.to_string())
            .envs(env.iter().copied())
            .env("CARGO_TARGET_DIR", target_dir)
            .env("FERROLOCK_PROFILE", own_profile())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("the {lang} worker cannot start ({}): {e}", launcher.display()))?;
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let pid = child.id();
        let mut worker = Worker { lang, pid, child, stdin, lines };
        let first = worker.try_reply(ready_within).map_err(|e| format!("the {lang} worker did not start: {e}"))?;
        if !first.starts_with(&format!("ready {lang} ")) {
            return Err(format!("the {lang} worker did not start: {first}"));
        }
        Ok(worker)
    }

    /// Sends one command line without waiting for its reply.
    pub fn send(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").and_then(|_| self.stdin.flush()).unwrap_or_else(|e| {
            panic!("the {} worker stopped reading commands: {e}", self.lang);
        });
    }

    /// The next reply line; panics after `timeout` or when the worker has exited.
    pub fn reply(&mut self, timeout: Duration) -> String {
        self.try_reply(timeout).unwrap_or_else(|e| panic!("{} worker: {e}", self.lang))
    }

    pub fn try_reply(&mut self, timeout: Duration) -> Result<String, String> {
        match self.lines.recv_timeout(timeout) {
            Ok(line) => Ok(line),
            Err(RecvTimeoutError::Timeout) => Err(format!("no reply within {timeout:?}")),
            Err(RecvTimeoutError::Disconnected) => {
                let status = self.child.wait().map(|s| s.to_string()).unwrap_or_default();
                Err(format!("exited ({status}) without a reply"))
            }
        }
    }

    /// Sends a command and returns its reply (within 30 s).
    pub fn call(&mut self, line: &str) -> String {
        self.send(line);
        self.reply(Duration::from_secs(30))
    }

    /// `quit`: the worker closes its client and exits 0. Panics otherwise.
    pub fn quit(self) {
        let lang = self.lang;
        self.try_quit().unwrap_or_else(|e| panic!("{lang} worker quit: {e}"));
    }

    pub fn try_quit(mut self) -> Result<(), String> {
        self.send("quit");
        let reply = self.try_reply(Duration::from_secs(30))?;
        if reply != "bye" {
            return Err(format!("replied {reply:?} to quit"));
        }
        match self.child.wait() {
            Ok(status) if status.success() => Ok(()),
            Ok(status) => Err(format!("exited with {status}")),
            Err(e) => Err(e.to_string()),
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The cargo target directory of the running executable (a test or a binary).
pub fn own_target_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let mut dir = exe.parent().unwrap();
    if dir.file_name().is_some_and(|n| n == "deps") {
        dir = dir.parent().unwrap();
    }
    dir.parent().unwrap().to_path_buf()
}

/// The cargo profile (debug or release) the running executable was built with: the
/// workers started from it are taken from the same profile.
pub fn own_profile() -> &'static str {
    if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    }
}

/// One critical section as a worker logged it (CLOCK_MONOTONIC nanoseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Section {
    pub token: u64,
    pub wait_from_ns: u64,
    pub acquired_ns: u64,
    pub released_ns: u64,
}

/// The complete lines of a section log; a line still being written is left out.
pub fn parse_log(text: &str) -> Result<Vec<Section>, String> {
    let complete = match text.rfind('\n') {
        Some(end) => &text[..end],
        None => return Ok(Vec::new()),
    };
    complete
        .lines()
        .map(|line| {
            let f: Vec<u64> = line.split(' ').map(|x| x.parse::<u64>()).collect::<Result<_, _>>().map_err(|_| line)?;
            match f[..] {
                [token, wait_from_ns, acquired_ns, released_ns] => {
                    Ok(Section { token, wait_from_ns, acquired_ns, released_ns })
                }
                _ => Err(line),
            }
        })
        .collect::<Result<_, &str>>()
        .map_err(|line| format!("malformed section log line: {line:?}"))
}

/// Every section in a worker's log file (missing file = none). Panics on a malformed line.
pub fn read_log(path: &Path) -> Vec<Section> {
    let mut log = SectionLog::new(path.to_path_buf());
    log.refresh().unwrap_or_else(|e| panic!("{e}"));
    log.sections
}

/// A worker's section log read as it grows: each refresh reads only what was appended.
pub struct SectionLog {
    path: PathBuf,
    read_up_to: u64,
    pending: String,
    pub sections: Vec<Section>,
}

impl SectionLog {
    pub fn new(path: PathBuf) -> SectionLog {
        SectionLog { path, read_up_to: 0, pending: String::new(), sections: Vec::new() }
    }

    /// Adds the sections completed since the last refresh (missing file = none yet).
    pub fn refresh(&mut self) -> Result<(), String> {
        use std::io::{Read, Seek, SeekFrom};
        let context = |e: std::io::Error| format!("{}: {e}", self.path.display());
        let mut file = match std::fs::File::open(&self.path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(context(e)),
        };
        file.seek(SeekFrom::Start(self.read_up_to)).map_err(context)?;
        let read = file.read_to_string(&mut self.pending).map_err(context)?;
        self.read_up_to += read as u64;
        if let Some(end) = self.pending.rfind('\n') {
            let complete: String = self.pending.drain(..=end).collect();
            let sections = parse_log(&complete).map_err(|e| format!("{}: {e}", self.path.display()))?;
            self.sections.extend(sections);
        }
        Ok(())
    }
}

/// Redisson's release channel of a lock name (DESIGN §2).
pub fn channel_of(name: &str) -> String {
    if name.contains('{') {
        format!("redisson_lock__channel:{name}")
    } else {
        format!("redisson_lock__channel:{{{name}}}")
    }
}
