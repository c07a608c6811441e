//! Test harness shared by every Rust test suite of the workspace: real redis-server
//! processes started (and killed) by the tests themselves on free loopback ports,
//! a TCP fault proxy, and small helpers. It does not depend on ferrolock itself.

mod workers;
pub use workers::*;

mod cluster;
mod fault_proxy;
mod sentinel;
mod tls;
mod topology;
pub use cluster::*;
pub use fault_proxy::FaultProxy;
pub use sentinel::*;
/// Short-lived raw connections and INFO / ROLE parsing, for topologies built outside
/// this crate (the failover harness's, with proxies in front of every node).
pub use topology::{connect, info_field, query, role};

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A redis-server owned by one test. Killed on drop.
pub struct RedisServer {
    pub port: u16,
    dir: ScratchDir,
    child: Option<Child>,
    extra: Vec<String>,
    tls: bool,
    /// Contents of a config file written into `dir` and passed before every other argument.
    config: Option<String>,
    /// Set while the process is SIGSTOPped by [`RedisServer::pause`].
    paused: AtomicBool,
}

static NEXT_DIR: AtomicU64 = AtomicU64::new(0);

/// A fresh directory under the system temp dir, unique per process and call, removed on drop.
pub struct ScratchDir(PathBuf);

impl ScratchDir {
    pub fn new(what: &str) -> Result<ScratchDir, String> {
        let dir = std::env::temp_dir().join(format!(
            "ferrolock-{what}-{}-{}",
            std::process::id(),
            NEXT_DIR.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        Ok(ScratchDir(dir))
    }

    pub fn path(&self) -> &std::path::Path {
        &self.0
    }

    pub fn join(&self, file: impl AsRef<std::path::Path>) -> PathBuf {
        self.0.join(file)
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

impl RedisServer {
    pub fn start() -> RedisServer {
        Self::start_with(&[])
    }

    pub fn start_with(extra: &[&str]) -> RedisServer {
        Self::try_start(extra).unwrap_or_else(|e| panic!("{e}"))
    }

    /// A server not started yet, on a free port, in a fresh directory.
    fn unstarted(extra: &[&str], config: Option<String>) -> Result<RedisServer, String> {
        Ok(RedisServer {
            port: free_port(),
            dir: ScratchDir::new("redis")?,
            child: None,
            extra: extra.iter().map(|s| s.to_string()).collect(),
            tls: false,
            config,
            paused: AtomicBool::new(false),
        })
    }

    /// Like [`RedisServer::start_with`], with an error instead of a panic (for `ferrolock demo`).
    pub fn try_start(extra: &[&str]) -> Result<RedisServer, String> {
        let mut server = RedisServer::unstarted(extra, None)?;
        server.spawn()?; // on error, drop removes the directory
        Ok(server)
    }

    /// Like [`RedisServer::try_start`], with `config` written to `redis.conf` in the server's
    /// directory and given as the config file (first argument); `extra` may hold e.g.
    /// `--sentinel`. The file is writable, as Sentinel needs (it rewrites it). Returns once
    /// the server on the port reports this process's pid.
    pub fn try_start_with_config(config: &str, extra: &[&str]) -> Result<RedisServer, String> {
        let mut server = RedisServer::unstarted(extra, Some(config.to_string()))?;
        server.spawn()?;
        Ok(server)
    }

    /// The process id, `None` once killed.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    /// False once [`RedisServer::kill`] ran.
    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    /// The server's working directory (its `--dir`).
    pub fn dir(&self) -> &std::path::Path {
        self.dir.path()
    }

    /// SIGSTOPs the process (it keeps its sockets but answers nothing); waits until the
    /// kernel reports it stopped. Drop still kills it.
    pub fn pause(&self) {
        let Some(pid) = self.pid() else { panic!("pause: redis-server on port {} is not running", self.port) };
        self.paused.store(true, Ordering::SeqCst);
        send_signal("STOP", pid);
        wait_process_state(pid, true, self.port);
    }

    /// SIGCONTs a process stopped by [`RedisServer::pause`]; waits until it runs again.
    pub fn resume(&self) {
        let Some(pid) = self.pid() else { panic!("resume: redis-server on port {} is not running", self.port) };
        send_signal("CONT", pid);
        wait_process_state(pid, false, self.port);
        self.paused.store(false, Ordering::SeqCst);
    }

    /// True between [`RedisServer::pause`] and [`RedisServer::resume`]: do not query it, it would not answer.
    pub fn is_paused(&self) -> bool {
        self.paused.load(Ordering::SeqCst)
    }

    fn command(&self) -> Command {
        let mut cmd = Command::new(redis_server_binary());
        if self.config.is_some() {
            cmd.arg(self.config_path()); // redis-server only takes the config file first
        }
        if self.tls {
            cmd.args(["--port", "0", "--tls-port", &self.port.to_string(), "--tls-auth-clients", "no"])
                .arg("--tls-cert-file")
                .arg(self.dir.join("cert.pem"))
                .arg("--tls-key-file")
                .arg(self.dir.join("key.pem"));
        } else {
            cmd.arg("--port").arg(self.port.to_string());
        }
        cmd.args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--daemonize", "no"])
            .arg("--dir")
            .arg(self.dir.path())
            .args(&self.extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        cmd
    }

    fn config_path(&self) -> PathBuf {
        self.dir.join("redis.conf")
    }

    /// Writes the config file afresh: a previous attempt's process may have rewritten it.
    fn write_config(&self) -> Result<(), String> {
        match &self.config {
            Some(config) => std::fs::write(self.config_path(), config)
                .map_err(|e| format!("cannot write {}: {e}", self.config_path().display())),
            None => Ok(()),
        }
    }

    fn spawn(&mut self) -> Result<(), String> {
        self.write_config()?;
        let mut cmd = self.command();
        let mut child = cmd.spawn().map_err(|e| {
            format!("cannot start {}: {e} (is redis-server installed? the README's set-up commands install it)", redis_server_binary())
        })?;
        let deadline = Instant::now() + Duration::from_secs(10);
        // Ready when the server on the port reports our child's pid: another process may own the port.
        loop {
            if child.try_wait().unwrap().is_some() || Instant::now() > deadline {
                if Instant::now() > deadline || self.tls {
                    // Never leave a server behind, even when the test fails here.
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(format!("redis-server did not start on port {} (tls: {})", self.port, self.tls));
                }
                self.port = free_port(); // lost a race for the port: try another
                self.write_config()?;
                cmd = self.command();
                child = cmd.spawn().map_err(|e| format!("cannot start redis-server: {e}"))?;
                continue;
            }
            if self.reports_pid(child.id()) && child.try_wait().unwrap().is_none() {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        self.child = Some(child);
        Ok(())
    }

    fn reports_pid(&self, pid: u32) -> bool {
        if self.tls {
            // No TLS client here: a live child with a listening port is ours.
            return std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok();
        }
        use std::io::{Read, Write};
        let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", self.port)) else { return false };
        let _ = s.set_read_timeout(Some(Duration::from_secs(1)));
        if s.write_all(b"*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n").is_err() {
            return false;
        }
        let mut buf = vec![0u8; 8192];
        let mut got = Vec::new();
        while let Ok(n) = s.read(&mut buf) {
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
            if got.starts_with(b"-") || (String::from_utf8_lossy(&got).contains("process_id:") && got.ends_with(b"\r\n\r\n")) {
                break;
            }
        }
        let reply = String::from_utf8_lossy(&got);
        if reply.starts_with("-NOAUTH") {
            // A password-protected server that answers: ours if our child is still alive.
            return true;
        }
        reply.contains(&format!("process_id:{pid}\r\n"))
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Kills the server (like a crash) and starts a new empty one on the same port.
    pub fn restart(&mut self) {
        self.kill();
        self.spawn().unwrap_or_else(|e| panic!("{e}"));
    }

    /// Kills the server and starts a new empty one on the same port with `extra` in place
    /// of the arguments it was started with (e.g. a killed master brought back as a replica).
    pub fn restart_with(&mut self, extra: &[&str]) {
        self.kill();
        self.extra = extra.iter().map(|s| s.to_string()).collect();
        self.spawn().unwrap_or_else(|e| panic!("{e}"));
    }

    /// The arguments given after the harness's own (see [`RedisServer::start_with`]).
    pub fn extra_args(&self) -> &[String] {
        &self.extra
    }

    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            // SIGKILL, which also ends a SIGSTOPped process.
            let _ = child.kill();
            let _ = child.wait();
        }
        self.paused.store(false, Ordering::SeqCst);
    }

    /// A raw connection for looking at what ferrolock wrote.
    pub async fn raw(&self) -> redis::aio::MultiplexedConnection {
        redis::Client::open(self.url()).unwrap().get_multiplexed_async_connection().await.unwrap()
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill(); // the directory goes with `dir`
    }
}

fn send_signal(signal: &str, pid: u32) {
    let status = Command::new("kill")
        .args([format!("-{signal}"), pid.to_string()])
        .status()
        .unwrap_or_else(|e| panic!("cannot run kill -{signal} {pid}: {e}"));
    assert!(status.success(), "kill -{signal} {pid} failed: {status}");
}

/// Waits until /proc says the process is (or is no longer) stopped, as signals are
/// delivered asynchronously. Without /proc (not Linux) it returns at once.
fn wait_process_state(pid: u32, stopped: bool, port: u16) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return };
        // "pid (comm) S ...": comm may hold spaces and parentheses, the state follows the last ')'.
        let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.trim_start().chars().next());
        if matches!(state, Some('T') | Some('t')) == stopped {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "redis-server {pid} on port {port} did not become {} (state {state:?})",
            if stopped { "stopped" } else { "running" }
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn redis_server_binary() -> String {
    std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".to_string())
}

/// The version of the redis-server the tests start (`redis-server --version`: Redis's
/// `v=7.2.6`, Valkey's own version), read once. Options some versions lack depend on it.
pub fn redis_server_version() -> (u32, u32, u32) {
    static VERSION: std::sync::OnceLock<(u32, u32, u32)> = std::sync::OnceLock::new();
    *VERSION.get_or_init(|| {
        let out = Command::new(redis_server_binary())
            .arg("--version")
            .output()
            .unwrap_or_else(|e| panic!("cannot run {} --version: {e}", redis_server_binary()));
        let text = String::from_utf8_lossy(&out.stdout);
        let v = text.split_whitespace().find_map(|w| w.strip_prefix("v=")).unwrap_or_else(|| panic!("no version in {text:?}"));
        let mut parts = v.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
        (parts.next().unwrap_or(0), parts.next().unwrap_or(0), parts.next().unwrap_or(0))
    })
}

/// Waits until `check` is true, re-checking every 10 ms, failing after `limit`.
pub async fn eventually<F, Fut>(limit: Duration, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + limit;
    loop {
        if check().await {
            return;
        }
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// All keys in the server's db 0.
pub async fn keys(conn: &mut redis::aio::MultiplexedConnection) -> Vec<String> {
    let mut keys: Vec<String> = redis::cmd("KEYS").arg("*").query_async(conn).await.unwrap();
    keys.sort();
    keys
}

pub async fn numsub(conn: &mut redis::aio::MultiplexedConnection, channel: &str) -> i64 {
    let (_, n): (String, i64) = redis::cmd("PUBSUB").arg("NUMSUB").arg(channel).query_async(conn).await.unwrap();
    n
}

/// Script calls so far (EVALSHA + EVAL), from INFO commandstats.
pub async fn script_calls(conn: &mut redis::aio::MultiplexedConnection) -> u64 {
    command_calls(conn, &["evalsha", "eval"]).await
}

/// Calls so far of the given commands (lower case), from INFO commandstats; commands
/// run inside scripts count too.
pub async fn command_calls(conn: &mut redis::aio::MultiplexedConnection, commands: &[&str]) -> u64 {
    let info: String = redis::cmd("INFO").arg("commandstats").query_async(conn).await.unwrap();
    info.lines()
        .filter(|l| commands.iter().any(|c| l.strip_prefix("cmdstat_").and_then(|r| r.strip_prefix(c)).is_some_and(|r| r.starts_with(':'))))
        .filter_map(|l| l.split("calls=").nth(1)?.split(',').next()?.parse::<u64>().ok())
        .sum()
}

/// Path of an example binary built by `cargo test` (target/<profile>/examples/NAME).
pub fn example_binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().unwrap().parent().unwrap();
    let path = profile_dir.join("examples").join(name);
    assert!(path.exists(), "example {name} not built at {}", path.display());
    path
}

/// Path of a binary of the workspace (target/<profile>/NAME), built before the tests run.
pub fn target_binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let path = exe.parent().unwrap().parent().unwrap().join(name);
    assert!(
        path.exists(),
        "{name} is not built at {}; build it first (scripts/test.sh does: cargo build --workspace --bins)",
        path.display()
    );
    path
}

/// The repository's root directory.
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// How a finished process ended: exit code (-1 for a signal) and its output.
pub struct Finished {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl std::fmt::Debug for Finished {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "exit {}\n--- stdout\n{}--- stderr\n{}", self.code, self.stdout, self.stderr)
    }
}

impl From<std::process::Output> for Finished {
    fn from(out: std::process::Output) -> Finished {
        Finished {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

/// Runs `cmd` to its end (for commands that end by themselves).
pub fn finish(cmd: &mut Command) -> Finished {
    cmd.output().unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}")).into()
}
