//! The Java side: a process running tests/redisson/Interop.java on one Redisson
//! version, one command line in, one reply line out (the command list is at the
//! top of Interop.java). Replies are read by a thread into a channel, so a test can
//! write a blocking command (a wait), do its own part, then await the reply.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use ferrolock_harness::repo_root;
use tokio::sync::mpsc;

/// Longest a command other than an explicit wait may take to answer (a busy machine, a cold JVM).
pub const REPLY_WITHIN: Duration = Duration::from_secs(30);

pub struct Redisson {
    pub version: &'static str,
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::UnboundedReceiver<String>,
}

impl Redisson {
    /// Starts the driver of `version` with one RedissonClient per URL, their
    /// `lockWatchdogTimeout` set to `watchdog`; returns once it printed `ready`.
    pub async fn start(version: &'static str, watchdog: Duration, urls: &[String]) -> Redisson {
        let dir = repo_root().join("tests/redisson/target");
        let classes = dir.join(format!("classes-{version}"));
        let lib = dir.join(format!("lib-{version}"));
        assert!(
            classes.join("Interop.class").exists() && lib.join(format!("redisson-{version}.jar")).exists(),
            "the Redisson {version} driver is not built: run tests/redisson/build.sh (scripts/build.sh does)"
        );
        let classpath = format!("{}:{}/*", classes.display(), lib.display());
        let mut child = Command::new("java")
            // Quick to start and light on a 2-core machine: C1 only, serial GC.
            .args(["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx256m", "-cp", &classpath, "Interop"])
            .arg(watchdog.as_millis().to_string())
            .args(urls)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("java runs (tests/redisson/build.sh installs a JDK)");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let mut redisson = Redisson { version, child, stdin, lines };
        let started = Instant::now();
        let ready = redisson.reply(Duration::from_secs(60)).await;
        assert_eq!(ready, "ready", "Redisson {version} driver did not start");
        eprintln!("[redisson {version}] driver ready in {} ms", started.elapsed().as_millis());
        redisson
    }

    /// Writes one command line without waiting for its reply.
    pub fn send(&mut self, command: &str) {
        writeln!(self.stdin, "{command}")
            .and_then(|_| self.stdin.flush())
            .unwrap_or_else(|e| panic!("Redisson {} driver stopped reading: {e}", self.version));
    }

    /// The next reply line; panics after `within`, when the driver exited, or on an `error` reply.
    pub async fn reply(&mut self, within: Duration) -> String {
        let line = match tokio::time::timeout(within, self.lines.recv()).await {
            Ok(Some(line)) => line,
            Ok(None) => {
                let status = self.child.wait().map(|s| s.to_string()).unwrap_or_default();
                panic!("Redisson {} driver exited ({status}) without a reply", self.version)
            }
            Err(_) => panic!("Redisson {} driver: no reply within {within:?}", self.version),
        };
        assert!(!line.starts_with("error"), "Redisson {} driver: {line}", self.version);
        line
    }

    /// Sends a command that does not wait on anything and returns its reply.
    pub async fn call(&mut self, command: &str) -> String {
        self.send(command);
        self.reply(REPLY_WITHIN).await
    }

    /// The owner field the driver's (main) thread writes into lock hashes.
    pub async fn owner(&mut self) -> String {
        self.call("id").await
    }
}

impl Drop for Redisson {
    fn drop(&mut self) {
        // Its servers die with the test: no need for Redisson's (slow) graceful shutdown.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Prints a measured wake-up (the test output shows it with --nocapture) and checks
/// it against the bound that only a message can meet: every wait here is bounded by
/// 30 s and every lease is 30 s.
pub fn wake_up(version: &str, what: &str, elapsed: Duration) {
    println!("[redisson {version}] wake-up, {what}: {:.1} ms", elapsed.as_secs_f64() * 1e3);
    assert!(
        elapsed < WAKE_BOUND,
        "[redisson {version}] {what} took {elapsed:?}: not woken by the message (lease and wait are 30 s)"
    );
}

/// What a wake-up by message must beat, on a busy machine.
pub const WAKE_BOUND: Duration = Duration::from_secs(1);

/// The lease of every lock in these tests and the bound of every wait.
pub const LEASE: Duration = Duration::from_secs(30);
