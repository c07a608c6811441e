//! The `ferrolock` command-line tool against a real redis-server: exit codes,
//! conflicts, lost locks, signal forwarding, fencing tokens, `status` and
//! `unlock --force`. Build it first: `cargo build -p ferrolock-cli`.
//!
//! Commands run under the lock are small sh scripts that write files: the tests
//! synchronise on those files and on Redis state, never on sleeps.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ferrolock_harness::{
    channel_of, eventually, finish, free_port, keys, numsub, target_binary, Finished, RedisServer, ScratchDir, Worker,
};

/// A directory for the files the commands write. Dropping it also creates `stop`,
/// which ends every holding script still running (they give up after a minute anyway).
struct Scratch {
    dir: ScratchDir,
}

impl Scratch {
    fn new() -> Scratch {
        Scratch { dir: ScratchDir::new("cli-test").unwrap() }
    }

    fn path(&self, file: &str) -> String {
        self.dir.join(file).display().to_string()
    }

    fn read(&self, file: &str) -> Option<String> {
        std::fs::read_to_string(self.dir.join(file)).ok().map(|s| s.trim().to_string())
    }

    async fn wait_for(&self, file: &str) {
        let path = self.dir.join(file);
        eventually(Duration::from_secs(10), &format!("{file} to be written"), || {
            let exists = path.exists();
            async move { exists }
        })
        .await;
    }

    fn stop(&self) {
        std::fs::write(self.dir.join("stop"), "").unwrap();
    }

    /// A script that writes `ready`, then holds until `stop` exists, running `on_signal`
    /// (sh trap syntax: `trap '<on_signal>' <signals>`) if it gets one of `signals`.
    fn holder_script(&self, traps: &[(&str, &str)]) -> Vec<String> {
        let mut script = String::new();
        for (signal, action) in traps {
            script.push_str(&format!("trap '{action}' {signal}\n"));
        }
        script.push_str(&format!(
            "echo ready > {ready}\n\
             i=0\n\
             while [ ! -e {stop} ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done\n",
            ready = self.path("ready"),
            stop = self.path("stop"),
        ));
        vec!["sh".into(), "-c".into(), script]
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::write(self.dir.join("stop"), ""); // the directory goes with `dir`
    }
}

/// `ferrolock ARGS` with REDIS_URL pointing at the test's server.
fn ferrolock(server: &RedisServer, args: &[&str]) -> Command {
    let mut cmd = Command::new(target_binary("ferrolock"));
    cmd.args(args).env("REDIS_URL", server.url()).stdin(Stdio::null());
    cmd
}

/// `ferrolock run [OPTIONS] NAME -- CMD...`
fn run_cmd(server: &RedisServer, options: &[&str], name: &str, command: &[String]) -> Command {
    let mut cmd = ferrolock(server, &["run"]);
    cmd.args(options).arg(name).arg("--").args(command);
    cmd
}

fn sh(script: &str) -> Vec<String> {
    vec!["sh".into(), "-c".into(), script.into()]
}



/// A `ferrolock` running in the background; SIGKILLed if a test fails before it ends.
struct Running {
    child: Child,
}

impl Running {
    fn start(cmd: &mut Command) -> Running {
        Running { child: cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap() }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn signal(&self, signal: &str) {
        let status = Command::new("kill").args(["-s", signal, &self.pid().to_string()]).status().unwrap();
        assert!(status.success(), "kill -s {signal} failed");
    }

    fn has_exited(&mut self) -> bool {
        self.child.try_wait().unwrap().is_some()
    }

    async fn finish(mut self, limit: Duration) -> Finished {
        let deadline = Instant::now() + limit;
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(Instant::now() < deadline, "ferrolock (pid {}) did not exit within {limit:?}", self.pid());
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        let (mut stdout, mut stderr) = (String::new(), String::new());
        self.child.stdout.take().unwrap().read_to_string(&mut stdout).unwrap();
        self.child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
        Finished { code: status.code().unwrap_or(-1), stdout, stderr }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

async fn status_json(server: &RedisServer, name: &str) -> serde_json::Value {
    let out = finish(&mut ferrolock(server, &["status", name, "--json"]));
    assert_eq!(out.code, 0, "{out:?}");
    serde_json::from_str(out.stdout.trim()).unwrap_or_else(|e| panic!("status --json printed {:?}: {e}", out.stdout))
}

/// Nothing but fencing-token counters may stay behind.
async fn assert_nothing_locked(server: &RedisServer) {
    let mut conn = server.raw().await;
    let left: Vec<String> = keys(&mut conn).await.into_iter().filter(|k| !k.starts_with("redisson_lock_token:")).collect();
    assert!(left.is_empty(), "keys left behind: {left:?}");
}

#[tokio::test]
async fn cmd_exit_status_passes_through() {
    let server = RedisServer::start();
    let out = finish(&mut run_cmd(&server, &[], "pass", &sh("echo hello; exit 0")));
    assert_eq!((out.code, out.stdout.as_str(), out.stderr.as_str()), (0, "hello\n", ""), "{out:?}");
    let out = finish(&mut run_cmd(&server, &[], "pass", &sh("exit 3")));
    assert_eq!(out.code, 3, "{out:?}");
    // Died of a signal: 128 + N, as shells report it.
    let out = finish(&mut run_cmd(&server, &[], "pass", &sh("kill -KILL $$")));
    assert_eq!(out.code, 137, "{out:?}");
    // Without `--`, everything after the first word of CMD belongs to CMD.
    let out = finish(ferrolock(&server, &["run", "pass", "sh", "-c", "echo \"$1\"", "sh", "--wait"]).arg("x"));
    assert_eq!((out.code, out.stdout.as_str()), (0, "--wait\n"), "{out:?}");
    assert_nothing_locked(&server).await;
    let mut conn = server.raw().await;
    assert!(keys(&mut conn).await.is_empty());
}

#[tokio::test]
async fn cmd_not_found_127_not_executable_126() {
    let server = RedisServer::start();
    let scratch = Scratch::new();
    let out = finish(&mut run_cmd(&server, &[], "nf", &["ferrolock-no-such-command".to_string()]));
    assert_eq!(out.code, 127, "{out:?}");
    assert!(out.stderr.starts_with("ferrolock: ") && out.stderr.contains("not found"), "{out:?}");
    let plain = scratch.path("plain.sh");
    std::fs::write(&plain, "#!/bin/sh\necho no\n").unwrap();
    let out = finish(&mut run_cmd(&server, &[], "nf", &[plain]));
    assert_eq!(out.code, 126, "{out:?}");
    assert!(out.stderr.contains("not executable"), "{out:?}");
    let out = finish(&mut run_cmd(&server, &[], "nf", &[scratch.dir.path().display().to_string()]));
    assert_eq!(out.code, 126, "{out:?}");
    assert_nothing_locked(&server).await;
}

#[test]
fn usage_errors_exit_2() {
    let bin = target_binary("ferrolock");
    let cases: &[(&[&str], &str)] = &[
        (&["run", "name"], "<CMD>"),
        (&["run", "name", "--"], "<CMD>"),
        (&["run", "--wait", "-1", "name", "--", "true"], "--wait"),
        (&["run", "--wait", "soon", "name", "--", "true"], "--wait"),
        (&["run", "--wait", "nan", "name", "--", "true"], "--wait"),
        (&["run", "--wait", "inf", "name", "--", "true"], "--wait"),
        (&["run", "--lease", "0", "name", "--", "true"], "--lease"),
        (&["run", "-n", "--wait", "1", "name", "--", "true"], "--wait"),
        (&["run", "--lease", "5", "--watchdog", "5", "name", "--", "true"], "--watchdog"),
        (&["run", "-E", "256", "name", "--", "true"], "--conflict-exit-code"),
        (&["unlock", "name"], "--force"),
        (&["lock", "name"], "lock"),
        (&["status"], "<NAME>"),
        (&["status", ""], "the name is empty"),
        (&["run", "", "--", "true"], "lock name is empty"),
        (&["run", "name", "-c", "true", "--", "true"], "--command"),
        (&["run", "name", "-c", "true", "extra"], "--command"),
        (&["run", "name", "-c"], "--command"),
        (&["status", "name", "--check", "--check"], "--check"),
        (&["run", "--shared", "--fenced", "name", "--", "true"], "--fenced"),
        (&["run", "--shared", "--exclusive", "name", "--", "true"], "--exclusive"),
        (&["run", "--fair", "--exclusive", "name", "--", "true"], "--fair"),
        (&["run", "--semaphore", "0", "name", "--", "true"], "--semaphore"),
        (&["run", "--semaphore", "two", "name", "--", "true"], "--semaphore"),
        (&["run", "--semaphore", "2", "--lease", "5", "name", "--", "true"], "--lease"),
        (&["run", "--semaphore", "2", "--fair", "name", "--", "true"], "--semaphore"),
        (&["latch", "name"], "--count"),
        (&["latch", "name", "--count", "0"], "--count"),
        (&["latch", "name", "--count", "2", "--count-down"], "--count"),
        (&["latch", "name", "--timeout", "1", "--count-down"], "--timeout"),
        (&["latch", "name", "--wait", "--timeout", "-1"], "--timeout"),
        (&["latch", "", "--count-down"], "latch name is empty"),
        (&["run", "--semaphore", "2", "", "--", "true"], "semaphore name is empty"),
        (&["status", "name", "--kind", "queue"], "--kind"),
    ];
    for (args, mentions) in cases {
        // Nothing listens here: a usage error must be reported before any connection.
        let out = finish(Command::new(&bin).args(*args).env("REDIS_URL", "redis://127.0.0.1:1"));
        assert_eq!(out.code, 2, "ferrolock {args:?}: {out:?}");
        assert!(out.stderr.starts_with("ferrolock: "), "ferrolock {args:?}: {out:?}");
        assert!(out.stderr.contains(mentions), "ferrolock {args:?} should mention {mentions}: {out:?}");
    }
}

#[test]
fn help_and_version() {
    let bin = target_binary("ferrolock");
    let out = finish(Command::new(&bin).arg("--help"));
    assert_eq!(out.code, 0, "{out:?}");
    for needle in ["run", "status", "unlock", "REDIS_URL", "Examples", "Exit status", "69", "74", "75", "77", "127"] {
        assert!(out.stdout.contains(needle), "--help lacks {needle}: {out:?}");
    }
    for sub in ["run", "status", "unlock", "demo"] {
        let out = finish(Command::new(&bin).args([sub, "--help"]));
        assert_eq!(out.code, 0, "{sub} --help: {out:?}");
        assert!(out.stdout.contains("Example"), "{sub} --help has no examples: {out:?}");
    }
    let out = finish(Command::new(&bin).args(["status", "--help"]));
    assert!(out.stdout.contains("-1") && out.stdout.contains("remaining_lease_ms"), "{out:?}");
    let out = finish(Command::new(&bin).arg("--version"));
    assert_eq!((out.code, out.stdout.trim()), (0, concat!("ferrolock ", env!("CARGO_PKG_VERSION"))), "{out:?}");
}

#[test]
fn unreachable_server_exits_69_fast_without_showing_the_password() {
    let bin = target_binary("ferrolock");
    let port = free_port(); // nothing listens on it once the probe socket is gone
    let url = format!("redis://user:s3cret@127.0.0.1:{port}");
    let runs: [&[&str]; 5] =
        [&["run", "x", "--", "true"], &["run", "x", "-c", "true"], &["status", "x"], &["status", "x", "--check"], &["unlock", "--force", "x"]];
    for args in runs {
        let started = Instant::now();
        let out = finish(Command::new(&bin).arg("--url").arg(&url).args(args).env_remove("REDIS_URL"));
        assert_eq!(out.code, 69, "{args:?}: {out:?}");
        assert!(started.elapsed() < Duration::from_secs(5), "{args:?} took {:?}", started.elapsed());
        assert!(out.stderr.starts_with("ferrolock: ") && out.stderr.contains("cannot connect"), "{out:?}");
        assert!(out.stderr.contains(&port.to_string()), "{out:?}");
        assert!(!out.stderr.contains("s3cret") && !out.stdout.contains("s3cret"), "{out:?}");
    }
    // A malformed URL is a usage error; it is echoed with the password masked.
    let out = finish(Command::new(&bin).args(["status", "x", "--url", "redis://user:s3cret@127.0.0.1:99999"]));
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("redis://user:***@127.0.0.1:99999") && !out.stderr.contains("s3cret"), "{out:?}");
}

#[tokio::test]
async fn conflict_exits_1_or_the_conflict_exit_code() {
    let server = RedisServer::start();
    let scratch = Scratch::new();
    // --url after the subcommand, no REDIS_URL: same server.
    let mut holder_cmd = run_cmd(&server, &["--url", &server.url()], "busy", &scratch.holder_script(&[]));
    holder_cmd.env_remove("REDIS_URL");
    let holder = Running::start(&mut holder_cmd);
    scratch.wait_for("ready").await;

    let marker = scratch.path("second-ran");
    let second = sh(&format!("echo ran > {marker}"));
    for (options, code) in [(&["--wait", "0"][..], 1), (&["-n"][..], 1), (&["--wait", "0", "--conflict-exit-code", "9"][..], 9)] {
        let out = finish(&mut run_cmd(&server, options, "busy", &second));
        assert_eq!(out.code, code, "{options:?}: {out:?}");
        // Quiet like flock(1) when stderr is not a terminal.
        assert_eq!(out.stderr, "", "{options:?}");
    }
    let started = Instant::now();
    let out = finish(&mut run_cmd(&server, &["--wait", "0.3", "-E", "4"], "busy", &second));
    assert_eq!(out.code, 4, "{out:?}");
    assert!(started.elapsed() >= Duration::from_millis(300), "gave up after {:?}", started.elapsed());
    let out = finish(&mut run_cmd(&server, &["--wait", "0.3"], "busy", &second));
    assert_eq!(out.code, 1, "{out:?}");
    assert!(scratch.read("second-ran").is_none(), "CMD ran without the lock");

    scratch.stop();
    let out = holder.finish(Duration::from_secs(10)).await;
    assert_eq!(out.code, 0, "{out:?}");
    let out = finish(&mut run_cmd(&server, &["-n"], "busy", &second));
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(scratch.read("second-ran").as_deref(), Some("ran"));
    assert_nothing_locked(&server).await;
}

#[tokio::test]
async fn lost_lock_sends_sigterm_to_cmd_and_exits_75() {
    let server = RedisServer::start();
    let scratch = Scratch::new();
    let got = scratch.path("got");
    let script = scratch.holder_script(&[("TERM", &format!("echo TERM > {got}; exit 12"))]);
    // A short watchdog: the renewal that finds the hold gone comes within 0.1 s.
    let holder = Running::start(&mut run_cmd(&server, &["--watchdog", "0.3"], "lost", &script));
    scratch.wait_for("ready").await;

    let out = finish(&mut ferrolock(&server, &["unlock", "--force", "lost"]));
    assert_eq!((out.code, out.stdout.as_str()), (0, "unlocked lost\n"), "{out:?}");
    let out = holder.finish(Duration::from_secs(10)).await;
    assert_eq!(out.code, 75, "{out:?}");
    assert!(out.stderr.starts_with("ferrolock: ") && out.stderr.contains("lost"), "{out:?}");
    assert!(out.stderr.contains("SIGTERM"), "{out:?}");
    assert_eq!(scratch.read("got").as_deref(), Some("TERM"));

    let out = finish(&mut ferrolock(&server, &["unlock", "--force", "lost"]));
    assert_eq!((out.code, out.stdout.as_str()), (0, "lost was not locked\n"), "{out:?}");
    assert_nothing_locked(&server).await;
}

#[tokio::test]
async fn lease_running_out_under_cmd_is_a_lost_lock() {
    let server = RedisServer::start();
    let scratch = Scratch::new();
    let got = scratch.path("got");
    let script = scratch.holder_script(&[("TERM", &format!("echo TERM > {got}; exit 12"))]);
    let holder = Running::start(&mut run_cmd(&server, &["--lease", "0.5"], "leased", &script));
    let out = holder.finish(Duration::from_secs(10)).await;
    assert_eq!(out.code, 75, "{out:?}");
    assert_eq!(scratch.read("got").as_deref(), Some("TERM"));
    // The run counts the lease from before its acquire was sent, so it may call the
    // hold lost (and exit) up to that round-trip before Redis expires the key; a
    // loaded machine's round-trip can be longer than the run's exit. Nothing is left
    // once the lease is over on the server's clock too.
    eventually(Duration::from_secs(5), "the lease to run out on the server", || async {
        keys(&mut server.raw().await).await.iter().all(|k| k.starts_with("redisson_lock_token:"))
    })
    .await;
    assert_nothing_locked(&server).await;
}

#[tokio::test]
async fn signals_are_forwarded_to_cmd() {
    let server = RedisServer::start();
    for (signal, code) in [("TERM", 21), ("INT", 22), ("HUP", 23)] {
        let scratch = Scratch::new();
        let got = scratch.path("got");
        let script = scratch.holder_script(&[(signal, &format!("echo {signal} >> {got}; exit {code}"))]);
        let running = Running::start(&mut run_cmd(&server, &[], "sig", &script));
        scratch.wait_for("ready").await;
        running.signal(signal);
        let out = running.finish(Duration::from_secs(10)).await;
        assert_eq!(out.code, code, "SIG{signal}: {out:?}");
        // Exactly once.
        assert_eq!(scratch.read("got").as_deref(), Some(signal));
        assert_nothing_locked(&server).await;
    }
    // A CMD that does not catch it dies of it: 128 + N.
    let scratch = Scratch::new();
    let running = Running::start(&mut run_cmd(&server, &[], "sig", &scratch.holder_script(&[])));
    scratch.wait_for("ready").await;
    running.signal("TERM");
    let out = running.finish(Duration::from_secs(10)).await;
    assert_eq!(out.code, 128 + 15, "{out:?}");
    assert_nothing_locked(&server).await;
}

#[tokio::test]
async fn signal_while_waiting_gives_up_with_nothing_held() {
    let server = RedisServer::start();
    let scratch = Scratch::new();
    let holder = Running::start(&mut run_cmd(&server, &[], "wait-sig", &scratch.holder_script(&[])));
    scratch.wait_for("ready").await;
    let conn = server.raw().await;
    for signal in ["INT", "TERM", "HUP"] {
        let marker = scratch.path("waiter-ran");
        let mut waiter = Running::start(&mut run_cmd(&server, &[], "wait-sig", &sh(&format!("echo ran > {marker}"))));
        let ch = channel_of("wait-sig");
        eventually(Duration::from_secs(10), "the waiter to subscribe", || {
            let (mut conn, ch) = (conn.clone(), ch.clone());
            async move { numsub(&mut conn, &ch).await == 1 }
        })
        .await;
        assert!(!waiter.has_exited());
        waiter.signal(signal);
        let out = waiter.finish(Duration::from_secs(5)).await;
        let number = match signal { "HUP" => 1, "INT" => 2, _ => 15 };
        assert_eq!(out.code, 128 + number, "SIG{signal}: {out:?}");
        assert!(out.stderr.contains("nothing is held"), "{out:?}");
        assert!(scratch.read("waiter-ran").is_none(), "CMD ran after the wait was cancelled");
        eventually(Duration::from_secs(5), "the waiter's subscription to go", || {
            let (mut conn, ch) = (conn.clone(), ch.clone());
            async move { numsub(&mut conn, &ch).await == 0 }
        })
        .await;
    }
    let status = status_json(&server, "wait-sig").await;
    assert_eq!(status["holders"].as_array().unwrap().len(), 1, "{status}");
    scratch.stop();
    assert_eq!(holder.finish(Duration::from_secs(10)).await.code, 0);
    assert_nothing_locked(&server).await;
}

#[tokio::test]
async fn fenced_runs_get_increasing_tokens() {
    let server = RedisServer::start();
    let scratch = Scratch::new();
    let mut tokens = Vec::new();
    for i in 0..3 {
        let file = scratch.path(&format!("token{i}"));
        let out = finish(&mut run_cmd(&server, &["--fenced"], "fenced", &sh(&format!("echo $FERROLOCK_TOKEN > {file}"))));
        assert_eq!(out.code, 0, "{out:?}");
        tokens.push(scratch.read(&format!("token{i}")).unwrap().parse::<u64>().unwrap());
    }
    assert!(tokens.windows(2).all(|w| w[0] < w[1]), "tokens {tokens:?}");
    // Without --fenced there is no token.
    let file = scratch.path("plain");
    let out = finish(&mut run_cmd(&server, &[], "fenced", &sh(&format!("echo ${{FERROLOCK_TOKEN-unset}} > {file}"))));
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(scratch.read("plain").as_deref(), Some("unset"));
    assert_eq!(status_json(&server, "fenced").await["last_token"], serde_json::json!(tokens[2]));
    let mut conn = server.raw().await;
    assert_eq!(keys(&mut conn).await, vec!["redisson_lock_token:{fenced}".to_string()]);
}

#[tokio::test]
async fn status_while_held_and_when_free() {
    let server = RedisServer::start();
    let scratch = Scratch::new();
    let holder = Running::start(&mut run_cmd(&server, &["--fenced"], "st", &scratch.holder_script(&[])));
    scratch.wait_for("ready").await;
    let waiter = Running::start(&mut run_cmd(&server, &[], "st", &sh("true")));
    let conn = server.raw().await;
    eventually(Duration::from_secs(10), "the waiter to subscribe", || {
        let mut conn = conn.clone();
        async move { numsub(&mut conn, &channel_of("st")).await == 1 }
    })
    .await;

    let held = status_json(&server, "st").await;
    assert_eq!(held["name"], "st", "{held}");
    assert_eq!(held["locked"], true, "{held}");
    let holders = held["holders"].as_array().unwrap();
    assert_eq!(holders.len(), 1, "{held}");
    assert_eq!(holders[0]["count"], 1, "{held}");
    assert!(holders[0]["owner"].as_str().unwrap().contains(':'), "{held}");
    let lease = held["remaining_lease_ms"].as_i64().unwrap();
    assert!(lease > 0 && lease <= 30_000, "{held}");
    assert_eq!(held["waiters"], 1, "{held}");
    assert_eq!(held["last_token"], 1, "{held}");

    let text = finish(&mut ferrolock(&server, &["status", "st"]));
    assert_eq!(text.code, 0, "{text:?}");
    for needle in ["held", holders[0]["owner"].as_str().unwrap(), "count 1", "s left", "last token"] {
        assert!(text.stdout.contains(needle), "status lacks {needle}: {text:?}");
    }

    scratch.stop();
    assert_eq!(holder.finish(Duration::from_secs(10)).await.code, 0);
    // The waiter gets it next and finishes.
    assert_eq!(waiter.finish(Duration::from_secs(10)).await.code, 0);

    let free = status_json(&server, "st").await;
    assert_eq!(
        free,
        serde_json::json!({"name": "st", "kind": "lock", "locked": false, "holders": [], "remaining_lease_ms": null, "waiters": 0, "last_token": 1, "eviction_policy": null})
    );
    let text = finish(&mut ferrolock(&server, &["status", "st"]));
    assert_eq!(text.code, 0, "{text:?}");
    assert!(text.stdout.contains("free"), "{text:?}");
    assert_nothing_locked(&server).await;
}

/// A server that may evict lock keys (maxmemory with an LRU policy): `status` says
/// which policy and what to set, as text and as JSON, for a lock and for a semaphore;
/// `run` (with core's warnings on: RUST_LOG) logs it once on stderr and still runs.
#[tokio::test]
async fn status_warns_of_a_server_that_may_evict_lock_keys() {
    let server = RedisServer::start();
    let mut conn = server.raw().await;
    for (key, value) in [("maxmemory", "1gb"), ("maxmemory-policy", "allkeys-lru")] {
        let _: () = redis::cmd("CONFIG").arg("SET").arg(key).arg(value).query_async(&mut conn).await.unwrap();
    }
    let _: () = redis::cmd("SET").arg("permits").arg(2).query_async(&mut conn).await.unwrap();
    assert_eq!(status_json(&server, "evicted").await["eviction_policy"], "allkeys-lru");
    assert_eq!(status_json(&server, "permits").await["eviction_policy"], "allkeys-lru");
    for name in ["evicted", "permits"] {
        let text = finish(&mut ferrolock(&server, &["status", name]));
        assert_eq!(text.code, 0, "{text:?}");
        assert!(text.stdout.contains("maxmemory-policy allkeys-lru") && text.stdout.contains("noeviction"), "{text:?}");
    }
    let run = finish(ferrolock(&server, &["run", "evicted", "--", "true"]).env("RUST_LOG", "ferrolock=warn"));
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stderr.matches("may evict lock keys").count(), 1, "one warning per client: {run:?}");
    assert!(run.stderr.contains("allkeys-lru") && run.stderr.contains("noeviction"), "{run:?}");
}

#[tokio::test]
async fn force_unlock_wakes_a_waiting_run_promptly() {
    let server = RedisServer::start();
    let scratch = Scratch::new();
    // The default 30 s watchdog lease: the waiter must not have to wait for it.
    let holder = Running::start(&mut run_cmd(&server, &[], "wake", &scratch.holder_script(&[])));
    scratch.wait_for("ready").await;
    let marker = scratch.path("waiter-ran");
    let waiter = Running::start(&mut run_cmd(&server, &[], "wake", &sh(&format!("echo ran > {marker}"))));
    let conn = server.raw().await;
    eventually(Duration::from_secs(10), "the waiter to subscribe", || {
        let mut conn = conn.clone();
        async move { numsub(&mut conn, &channel_of("wake")).await == 1 }
    })
    .await;

    let started = Instant::now();
    let out = finish(&mut ferrolock(&server, &["unlock", "--force", "wake"]));
    assert_eq!((out.code, out.stdout.as_str()), (0, "unlocked wake\n"), "{out:?}");
    let out = waiter.finish(Duration::from_secs(5)).await;
    assert_eq!(out.code, 0, "{out:?}");
    assert!(started.elapsed() < Duration::from_secs(5), "woken after {:?}", started.elapsed());
    assert_eq!(scratch.read("waiter-ran").as_deref(), Some("ran"));

    // The first holder finds out when it releases: its command ran unprotected.
    scratch.stop();
    let out = holder.finish(Duration::from_secs(10)).await;
    assert_eq!(out.code, 75, "{out:?}");
    assert!(out.stderr.contains("lost"), "{out:?}");
    assert_nothing_locked(&server).await;
}

#[tokio::test]
async fn a_key_that_is_not_a_lock_is_refused() {
    let server = RedisServer::start();
    let out = finish(&mut run_cmd(&server, &["--fenced"], "typed", &sh("true")));
    assert_eq!(out.code, 0, "{out:?}");
    // The token counter is a plain string key: not a lock (status reads it as a number: see
    // status_tells_every_kind_apart); a list is nothing ferrolock knows.
    let counter = "redisson_lock_token:{typed}";
    let mut conn = server.raw().await;
    let _: () = redis::cmd("RPUSH").arg("a-list").arg("x").query_async(&mut conn).await.unwrap();
    for args in [&["status", "a-list"][..], &["unlock", "--force", counter], &["run", "-n", counter, "--", "true"]] {
        let out = finish(&mut ferrolock(&server, args));
        assert_eq!(out.code, 65, "{args:?}: {out:?}");
        assert!(out.stderr.starts_with("ferrolock: "), "{out:?}");
        assert!(out.stderr.contains("not a lock") || out.stderr.contains("another type"), "{out:?}");
    }
    assert_eq!(keys(&mut conn).await, vec!["a-list".to_string(), counter.to_string()], "unlock --force must not delete a non-lock key");
}

/// Creates (or changes) ACL user `user` with password `pw` and these extra rules.
async fn acl_user(server: &RedisServer, user: &str, rules: &[&str]) -> String {
    let mut conn = server.raw().await;
    let mut cmd = redis::cmd("ACL");
    cmd.arg("SETUSER").arg(user).arg(rules);
    let () = cmd.query_async(&mut conn).await.unwrap();
    format!("redis://{user}:pw@127.0.0.1:{}", server.port)
}

#[tokio::test]
async fn acl_refusal_exits_77_and_names_the_rule() {
    let server = RedisServer::start();
    let scratch = Scratch::new();
    // Reading the lease needs PTTL.
    let url = acl_user(&server, "nopttl", &["on", ">pw", "~*", "&*", "+@all", "-pttl"]).await;
    let out = finish(&mut ferrolock(&server, &["--url", &url, "status", "perm"]));
    assert_eq!(out.code, 77, "{out:?}");
    assert!(out.stderr.starts_with("ferrolock: ") && out.stderr.contains("+pttl"), "{out:?}");

    // The lock scripts need HINCRBY: nothing is taken, CMD does not run.
    let url = acl_user(&server, "limited", &["on", ">pw", "~*", "&*", "+@all", "-hincrby"]).await;
    let marker = scratch.path("ran");
    let out = finish(ferrolock(&server, &["--url", &url, "run", "perm", "--", "sh", "-c"]).arg(format!("echo ran > {marker}")));
    assert_eq!(out.code, 77, "{out:?}");
    assert!(out.stderr.starts_with("ferrolock: ") && out.stderr.contains("+hincrby"), "{out:?}");
    assert!(out.stderr.contains("perm"), "the message names the lock: {out:?}");
    assert!(scratch.read("ran").is_none(), "CMD ran without the lock");
    assert_nothing_locked(&server).await;
}

#[tokio::test]
async fn release_refused_exits_74_and_says_the_lock_stays() {
    let server = RedisServer::start();
    let scratch = Scratch::new();
    let url = acl_user(&server, "runner", &["on", ">pw", "~*", "&*", "+@all"]).await;
    let mut cmd = run_cmd(&server, &["--url", &url], "refused", &scratch.holder_script(&[]));
    let running = Running::start(&mut cmd);
    scratch.wait_for("ready").await;
    // While CMD runs, the user loses EVALSHA: the release script is refused.
    acl_user(&server, "runner", &["-evalsha"]).await;
    scratch.stop();
    let out = running.finish(Duration::from_secs(30)).await;
    assert_eq!(out.code, 74, "{out:?}");
    assert!(out.stderr.contains("could not release lock \"refused\"") && out.stderr.contains("+evalsha"), "{out:?}");
    assert!(
        out.stderr.contains("lock \"refused\" may stay held until its lease ends, at most 30.0 s after ferrolock exits"),
        "{out:?}"
    );
    assert!(out.stderr.contains("the command's own exit status was 0"), "{out:?}");
    // Still held, until its watchdog lease runs out.
    let status = status_json(&server, "refused").await;
    assert_eq!(status["holders"].as_array().unwrap().len(), 1, "{status}");
    let left = status["remaining_lease_ms"].as_i64().unwrap();
    assert!(left > 0 && left <= 30_000, "{status}");
}

#[tokio::test]
async fn release_with_redis_down_exits_74_and_says_the_lock_stays() {
    let mut server = RedisServer::start();
    let scratch = Scratch::new();
    let running = Running::start(&mut run_cmd(&server, &["--lease", "60"], "down", &scratch.holder_script(&[])));
    scratch.wait_for("ready").await;
    server.kill();
    scratch.stop();
    // The release is retried for a few seconds (a reply may have been lost), then given up.
    let out = running.finish(Duration::from_secs(30)).await;
    assert_eq!(out.code, 74, "{out:?}");
    assert!(out.stderr.contains("could not release lock \"down\""), "{out:?}");
    assert!(out.stderr.contains("check that Redis is running"), "{out:?}");
    let line = out.stderr.lines().find(|l| l.contains("may stay held")).unwrap_or_else(|| panic!("{out:?}"));
    assert!(line.starts_with("ferrolock: lock \"down\" may stay held until its lease ends, at most "), "{out:?}");
    assert!(line.contains(" s from now (its --lease)") && line.ends_with("the command's own exit status was 0"), "{out:?}");
    // The --lease minus the time CMD and the release took (well under 30 s).
    let left: f64 = line.split("at most ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    assert!(left > 30.0 && left < 60.0, "{left} s left: {out:?}");
}

/// A Redlock over three masters, one shut down while CMD runs: the two live masters
/// released it, which is the quorum, so the run exits with CMD's status well within
/// the retry window the unreachable member spends on its own release (it used to
/// wait that out, about 12 s, and exit 74 saying the lock may stay held).
#[tokio::test]
async fn redlock_with_a_master_down_releases_on_the_majority_and_exits_with_cmds_status() {
    let mut masters: Vec<RedisServer> = (0..3).map(|_| RedisServer::start()).collect();
    let scratch = Scratch::new();
    let mut cmd = Command::new(target_binary("ferrolock"));
    for master in &masters {
        cmd.args(["--url", &master.url()]);
    }
    cmd.args(["run", "rl-down", "--"]).args(scratch.holder_script(&[])).stdin(Stdio::null());
    let running = Running::start(&mut cmd);
    scratch.wait_for("ready").await;
    masters[2].kill();
    let ended = Instant::now();
    scratch.stop();
    let out = running.finish(Duration::from_secs(30)).await;
    assert_eq!(out.code, 0, "{out:?}");
    assert!(!out.stderr.contains("may stay held"), "{out:?}");
    for master in &masters[..2] {
        assert_nothing_locked(master).await;
    }
    // Generous: the release alone used to take the retry window (5 s) and more.
    assert!(ended.elapsed() < Duration::from_secs(5), "took {:?}: {out:?}", ended.elapsed());
}

/// Whether process `pid` has ended (gone, or a zombie nobody reaped yet).
fn has_ended(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // "pid (comm) S ...": the state follows the last ')'.
        Ok(stat) => stat.rsplit_once(')').and_then(|(_, rest)| rest.trim_start().chars().next()) == Some('Z'),
        Err(_) => true,
    }
}

/// `kill -9` of ferrolock while CMD runs: nothing renews the lock any more, so CMD
/// gets SIGTERM, as when the lock is lost (the kernel's parent-death signal).
#[tokio::test]
async fn cmd_gets_sigterm_when_ferrolock_is_killed() {
    let server = RedisServer::start();
    let scratch = Scratch::new();
    let script = scratch.holder_script(&[("TERM", &format!("echo term > {}; exit 0", scratch.path("terminated")))]);
    let running = Running::start(&mut run_cmd(&server, &["--watchdog", "1"], "orphan-term", &script));
    scratch.wait_for("ready").await;
    running.signal("KILL");
    scratch.wait_for("terminated").await;
    assert_eq!(scratch.read("terminated").as_deref(), Some("term"));
}

/// A CMD that ignores SIGTERM still ends after --kill-after when ferrolock was
/// killed: a guard process started with CMD sends SIGKILL then.
#[tokio::test]
async fn cmd_ignoring_sigterm_is_killed_after_kill_after_when_ferrolock_is_killed() {
    let server = RedisServer::start();
    let scratch = Scratch::new();
    let script = format!(
        "trap '' TERM\n\
         echo $$ > {pid}\n\
         echo ready > {ready}\n\
         i=0\n\
         while [ ! -e {stop} ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done\n",
        pid = scratch.path("pid"),
        ready = scratch.path("ready"),
        stop = scratch.path("stop"),
    );
    let running = Running::start(&mut run_cmd(&server, &["--watchdog", "1", "--kill-after", "0.3"], "orphan-kill", &sh(&script)));
    scratch.wait_for("ready").await;
    let pid: u32 = scratch.read("pid").unwrap().parse().unwrap();
    assert!(!has_ended(pid));
    running.signal("KILL");
    eventually(Duration::from_secs(10), "CMD killed after --kill-after", || {
        let ended = has_ended(pid);
        async move { ended }
    })
    .await;
    assert!(!scratch.dir.join("stop").exists(), "ended by the guard, not by its own loop");
}

/// A pseudo-terminal that becomes the controlling terminal of one `ferrolock`, so
/// the tests can see what a user at a terminal sees and type Ctrl-C.
struct Terminal {
    master: std::fs::File,
    slave: PathBuf,
    screen: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
}

impl Terminal {
    fn open() -> Terminal {
        use std::os::fd::FromRawFd;
        // SAFETY: plain libc calls; the fd is owned by the File from here on.
        let (master, slave) = unsafe {
            let fd = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
            assert!(fd >= 0, "posix_openpt: {}", std::io::Error::last_os_error());
            assert_eq!(libc::grantpt(fd), 0);
            assert_eq!(libc::unlockpt(fd), 0);
            let mut name = [0 as libc::c_char; 128];
            assert_eq!(libc::ptsname_r(fd, name.as_mut_ptr(), name.len()), 0);
            let slave = std::ffi::CStr::from_ptr(name.as_ptr()).to_str().unwrap().to_string();
            (std::fs::File::from_raw_fd(fd), PathBuf::from(slave))
        };
        let screen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (mut reader, sink) = (master.try_clone().unwrap(), screen.clone());
        // Drains the terminal (a full one would block the writer); ends with EIO once
        // every process on the slave side is gone.
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = reader.read(&mut buf) {
                sink.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        Terminal { master, slave, screen }
    }

    /// Runs `cmd` as the session leader on this terminal (stdin, stdout and stderr).
    fn start(&self, cmd: &mut Command) -> Running {
        use std::os::unix::process::CommandExt;
        let tty = || std::fs::OpenOptions::new().read(true).write(true).open(&self.slave).unwrap();
        cmd.stdin(tty()).stdout(tty()).stderr(tty());
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY as _, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        Running { child: cmd.spawn().unwrap() }
    }

    fn screen(&self) -> String {
        String::from_utf8_lossy(&self.screen.lock().unwrap()).into_owned()
    }

    /// A terminal `columns` wide (a new pty has no size; ferrolock then assumes 80).
    fn with_width(self, columns: u16) -> Terminal {
        use std::os::fd::AsRawFd;
        let size = libc::winsize { ws_row: 24, ws_col: columns, ws_xpixel: 0, ws_ypixel: 0 };
        // SAFETY: TIOCSWINSZ reads a winsize from the pointer.
        assert_eq!(unsafe { libc::ioctl(self.master.as_raw_fd(), libc::TIOCSWINSZ, &size) }, 0);
        self
    }

    async fn wait_for_text(&self, text: &str) {
        eventually(Duration::from_secs(10), &format!("{text:?} on the terminal"), || {
            let shown = self.screen().contains(text);
            async move { shown }
        })
        .await;
    }

    /// Ctrl-C: the terminal sends SIGINT to its whole foreground process group.
    fn type_ctrl_c(&self) {
        use std::io::Write;
        (&self.master).write_all(b"\x03").unwrap();
    }
}

impl Running {
    /// Waits for the exit code only (the output went to a terminal).
    async fn exit_code(mut self, limit: Duration) -> i32 {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code().unwrap_or(-1);
            }
            assert!(Instant::now() < deadline, "ferrolock (pid {}) did not exit within {limit:?}", self.pid());
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

#[tokio::test]
async fn terminal_shows_the_holder_while_waiting() {
    let server = RedisServer::start();
    let scratch = Scratch::new();
    let holder = Running::start(&mut run_cmd(&server, &[], "tty", &scratch.holder_script(&[])));
    scratch.wait_for("ready").await;
    let owner = status_json(&server, "tty").await["holders"][0]["owner"].as_str().unwrap().to_string();

    let terminal = Terminal::open();
    let waiter = terminal.start(&mut run_cmd(&server, &[], "tty", &sh("echo acquired-now")));
    terminal.wait_for_text("waiting").await;
    terminal.wait_for_text("held, lease renewed").await;
    // The owner field may be cut to the terminal's width; its client id is shown.
    terminal.wait_for_text(&owner[..8]).await;
    scratch.stop();
    assert_eq!(holder.finish(Duration::from_secs(10)).await.code, 0);
    assert_eq!(waiter.exit_code(Duration::from_secs(10)).await, 0);
    terminal.wait_for_text("acquired-now").await;
    let screen = terminal.screen();
    let before = &screen[..screen.find("acquired-now").unwrap()];
    assert!(before.ends_with("\r\x1b[K"), "the waiting line is cleared before CMD runs: {screen:?}");

    // A busy lock with --wait: on a terminal, say who holds it.
    let scratch = Scratch::new();
    let holder = Running::start(&mut run_cmd(&server, &[], "tty", &scratch.holder_script(&[])));
    scratch.wait_for("ready").await;
    let terminal = Terminal::open();
    let waiter = terminal.start(&mut run_cmd(&server, &["--wait", "0.3"], "tty", &sh("true")));
    assert_eq!(waiter.exit_code(Duration::from_secs(10)).await, 1);
    terminal.wait_for_text("is busy (held by").await;
    scratch.stop();
    assert_eq!(holder.finish(Duration::from_secs(10)).await.code, 0);
    assert_nothing_locked(&server).await;
}

#[tokio::test]
async fn ctrl_c_reaches_cmd_once() {
    let server = RedisServer::start();
    let scratch = Scratch::new();
    let got = scratch.path("got");
    // CMD spins on shell builtins, so its traps run at once rather than after a
    // child exits, and a second SIGINT would run the trap again instead of merging
    // with the first. After its SIGINT it asks ferrolock to pass it a SIGUSR1;
    // ferrolock handles signals in order, so a forwarded SIGINT would come first.
    let script = sh(&format!(
        "trap 'echo INT >> {got}; kill -USR1 $PPID' INT\n\
         trap 'echo USR1 >> {got}; exit 5' USR1\n\
         echo ready > {ready}\n\
         i=0; while [ ! -e {stop} ] && [ $i -lt 3000000 ]; do i=$((i+1)); done",
        ready = scratch.path("ready"),
        stop = scratch.path("stop"),
    ));
    let terminal = Terminal::open();
    let running = terminal.start(&mut run_cmd(&server, &[], "ctrl-c", &script));
    scratch.wait_for("ready").await;
    terminal.type_ctrl_c();
    assert_eq!(running.exit_code(Duration::from_secs(10)).await, 5);
    assert_eq!(scratch.read("got").as_deref(), Some("INT\nUSR1"));
    assert_nothing_locked(&server).await;
}

#[tokio::test]
async fn dash_c_runs_a_shell_command_like_flock() {
    let server = RedisServer::start();
    let out = finish(&mut ferrolock(&server, &["run", "--fenced", "shell", "-c", "echo \"token $FERROLOCK_TOKEN\" | tr a-z A-Z; exit 3"]));
    assert_eq!((out.code, out.stdout.as_str(), out.stderr.as_str()), (3, "TOKEN 1\n", ""), "{out:?}");
    // Before NAME too, and with the long name.
    let out = finish(&mut ferrolock(&server, &["run", "-c", "echo \"$0\"", "shell"]));
    assert_eq!((out.code, out.stdout.as_str()), (0, "sh\n"), "{out:?}");
    let out = finish(&mut ferrolock(&server, &["run", "shell", "--command=kill -TERM $$"]));
    assert_eq!(out.code, 128 + 15, "{out:?}");
    assert_nothing_locked(&server).await;
}

#[tokio::test]
async fn status_check_exits_0_when_held_and_1_when_free() {
    let server = RedisServer::start();
    let scratch = Scratch::new();
    let out = finish(&mut ferrolock(&server, &["status", "checked", "--check"]));
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stdout.contains("free"), "the status is still printed: {out:?}");
    // Without --check: 0 either way, as before.
    assert_eq!(finish(&mut ferrolock(&server, &["status", "checked"])).code, 0);

    let holder = Running::start(&mut run_cmd(&server, &[], "checked", &scratch.holder_script(&[])));
    scratch.wait_for("ready").await;
    let out = finish(&mut ferrolock(&server, &["status", "checked", "--check", "--json"]));
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(serde_json::from_str::<serde_json::Value>(out.stdout.trim()).unwrap()["locked"], true, "{out:?}");
    // What a script does with it.
    let script = "if ferrolock status --check checked >/dev/null; then echo busy; else echo free; fi";
    let path = format!("{}:{}", target_binary("ferrolock").parent().unwrap().display(), std::env::var("PATH").unwrap());
    let out = finish(Command::new("sh").args(["-c", script]).env("PATH", &path).env("REDIS_URL", server.url()));
    assert_eq!(out.stdout, "busy\n", "{out:?}");

    scratch.stop();
    assert_eq!(holder.finish(Duration::from_secs(10)).await.code, 0);
    let out = finish(Command::new("sh").args(["-c", script]).env("PATH", &path).env("REDIS_URL", server.url()));
    assert_eq!(out.stdout, "free\n", "{out:?}");
    // A key that is not a lock: its own code, not "free".
    let mut conn = server.raw().await;
    let _: () = redis::cmd("SET").arg("checked").arg("x").query_async(&mut conn).await.unwrap();
    assert_eq!(finish(&mut ferrolock(&server, &["status", "checked", "--check"])).code, 65);
}

#[test]
fn help_documents_dash_c_and_status_check() {
    let bin = target_binary("ferrolock");
    let out = finish(Command::new(&bin).args(["run", "--help"]));
    assert!(out.stdout.contains("-c, --command <SHELL_COMMAND>") && out.stdout.contains("flock -c"), "{out:?}");
    let out = finish(Command::new(&bin).args(["status", "--help"]));
    assert!(out.stdout.contains("--check") && out.stdout.contains("0 when held and 1 when free"), "{out:?}");
    let out = finish(Command::new(&bin).arg("--help"));
    assert!(out.stdout.contains("status --check: 0 held") && out.stdout.contains("status --check: 1 free"), "{out:?}");
}

#[tokio::test]
async fn terminal_says_held_lease_renewed_instead_of_counting_down_a_renewed_lease() {
    let server = RedisServer::start();
    // A holder in another language, which stores no holder info: its renewals show as
    // a lease left that grew between two looks.
    let mut worker = Worker::start("rust", &server.url(), 600);
    assert_eq!(worker.call("acquire renewed plain"), "ok -");
    let terminal = Terminal::open();
    let waiter = terminal.start(&mut run_cmd(&server, &[], "renewed", &sh("echo acquired-now")));
    terminal.wait_for_text("held, lease renewed, by ").await;
    assert_eq!(worker.call("release renewed"), "ok");
    assert_eq!(waiter.exit_code(Duration::from_secs(10)).await, 0);
    terminal.wait_for_text("acquired-now").await;
    worker.quit();

    // An explicit lease is never renewed: it counts down.
    let scratch = Scratch::new();
    let holder = Running::start(&mut run_cmd(&server, &["--lease", "30"], "leased", &scratch.holder_script(&[])));
    scratch.wait_for("ready").await;
    let terminal = Terminal::open();
    let waiter = terminal.start(&mut run_cmd(&server, &[], "leased", &sh("true")));
    terminal.wait_for_text("s lease left, held by ").await;
    // Two seconds of looks later, still a countdown.
    terminal.wait_for_text(" 27.").await;
    assert!(!terminal.screen().contains("renewed"), "{:?}", terminal.screen());
    scratch.stop();
    assert_eq!(holder.finish(Duration::from_secs(10)).await.code, 0);
    assert_eq!(waiter.exit_code(Duration::from_secs(10)).await, 0);
    assert_nothing_locked(&server).await;
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap().trim().to_string()
}

/// The holder-info keys on `server` (`ferrolock_holder_info:...`).
async fn info_keys(server: &RedisServer) -> Vec<String> {
    let mut conn = server.raw().await;
    keys(&mut conn).await.into_iter().filter(|k| k.starts_with("ferrolock_holder_info:")).collect()
}

#[tokio::test]
async fn status_shows_a_ferrolock_run_holders_host_pid_and_command_while_it_holds() {
    let server = RedisServer::start();
    let scratch = Scratch::new();
    let script = format!(
        "echo ready > {ready}; i=0; while [ ! -e {stop} ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done",
        ready = scratch.path("ready"),
        stop = scratch.path("stop"),
    );
    // A short watchdog: renewed every 0.2 s, and the note's expiry with it.
    let holder = Running::start(&mut ferrolock(&server, &["run", "--watchdog", "0.6", "held-by", "-c", &script]));
    scratch.wait_for("ready").await;
    // Core's note: host, pid, kind, renewed, CMD and since when (the server's clock).
    let expected = serde_json::json!({"host": hostname(), "pid": holder.pid(), "cmd": script, "renewed": true, "kind": "reentrant"});
    let noted = |info: &serde_json::Value| {
        let mut info = info.clone();
        assert!(info["since"].as_u64().is_some_and(|ms| ms > 1_700_000_000_000), "{info}");
        info.as_object_mut().unwrap().remove("since");
        info
    };
    let held = status_json(&server, "held-by").await;
    assert_eq!(noted(&held["holders"][0]["info"]), expected, "{held}");
    assert!(held["holders"][0]["held_for_ms"].as_u64().is_some(), "{held}");
    let text = finish(&mut ferrolock(&server, &["status", "held-by"]));
    let shown = format!("{} pid {} for ", hostname(), holder.pid());
    assert!(text.stdout.contains(&shown) && text.stdout.contains(&format!(": {script}")), "{text:?}");

    // The info key lives only as long as the lease it was written with: it lasts
    // because it is written again after renewals. Seen written again three times
    // (its TTL went up instead of down), and still there.
    let key = info_keys(&server).await.pop().expect("an info key");
    let conn = server.raw().await;
    let pttl = || {
        let (mut conn, key) = (conn.clone(), key.clone());
        async move { (redis::cmd("PTTL").arg(&key).query_async::<i64>(&mut conn).await.unwrap(), Instant::now()) }
    };
    for round in 0..3 {
        let (first, at) = pttl().await;
        assert!(first > 0, "the info key has the lock's TTL: {first}");
        eventually(Duration::from_secs(10), &format!("the info key written again (round {round})"), || async {
            let (now, seen_at) = pttl().await;
            // Counted down, it would be `first` minus the time since; a rewrite puts it above.
            now > first - seen_at.duration_since(at).as_millis() as i64 + 50
        })
        .await;
    }
    assert_eq!(noted(&status_json(&server, "held-by").await["holders"][0]["info"]), expected);

    scratch.stop();
    assert_eq!(holder.finish(Duration::from_secs(10)).await.code, 0);
    let free = status_json(&server, "held-by").await;
    assert_eq!(free["holders"], serde_json::json!([]), "{free}");
    assert!(info_keys(&server).await.is_empty(), "the release removes the info");

    // CMD's words are quoted as a shell would need them; an explicit lease is not renewed.
    let scratch = Scratch::new();
    let holder = Running::start(&mut run_cmd(&server, &["--lease", "30"], "held-by", &scratch.holder_script(&[])));
    scratch.wait_for("ready").await;
    let info = status_json(&server, "held-by").await["holders"][0]["info"].clone();
    assert_eq!(info["renewed"], false, "{info}");
    assert!(info["cmd"].as_str().unwrap().starts_with("sh -c 'echo ready > "), "{info}");
    // A waiter on a terminal shows who is in the way.
    let terminal = Terminal::open().with_width(400);
    let waiter = terminal.start(&mut run_cmd(&server, &[], "held-by", &sh("true")));
    terminal.wait_for_text(&format!("({} pid {} for ", hostname(), holder.pid())).await;
    terminal.wait_for_text(": sh -c 'echo ready").await;
    scratch.stop();
    assert_eq!(holder.finish(Duration::from_secs(10)).await.code, 0);
    assert_eq!(waiter.exit_code(Duration::from_secs(10)).await, 0);
    assert_nothing_locked(&server).await;
}

#[tokio::test]
async fn rust_log_shows_core_events_on_stderr_and_nothing_without_it() {
    let server = RedisServer::start();
    for rust_log in [Some("info"), None] {
        let scratch = Scratch::new();
        let mut cmd = run_cmd(&server, &["--watchdog", "0.6"], "logged", &scratch.holder_script(&[]));
        match rust_log {
            Some(filter) => cmd.env("RUST_LOG", filter),
            None => cmd.env_remove("RUST_LOG"),
        };
        let holder = Running::start(&mut cmd);
        scratch.wait_for("ready").await;
        // Cut ferrolock's connections (not this one: SKIPME): its next renewal reconnects.
        let conn = server.raw().await;
        let mut c = conn.clone();
        let killed: i64 = redis::cmd("CLIENT").arg("KILL").arg("TYPE").arg("normal").query_async(&mut c).await.unwrap();
        assert!(killed >= 1, "no ferrolock connection to cut");
        // Renewed again after the cut: it has reconnected.
        let before: i64 = redis::cmd("PTTL").arg("logged").query_async(&mut c).await.unwrap();
        eventually(Duration::from_secs(10), "a renewal after the reconnect", || {
            let mut conn = conn.clone();
            async move { redis::cmd("PTTL").arg("logged").query_async::<i64>(&mut conn).await.unwrap() > before }
        })
        .await;
        scratch.stop();
        let out = holder.finish(Duration::from_secs(10)).await;
        assert_eq!(out.code, 0, "{out:?}");
        match rust_log {
            Some(_) => {
                let line = out.stderr.lines().find(|l| l.contains(" INFO ") && l.contains("connection")).unwrap_or_else(|| panic!("no INFO line about the reconnect: {out:?}"));
                assert!(line.contains("ferrolock"), "the target names ferrolock: {line:?}");
            }
            None => assert_eq!(out.stderr, "", "logs are off without RUST_LOG"),
        }
    }
    // A filter that does not parse: said once, and the command still runs.
    let out = finish(run_cmd(&server, &[], "logged", &sh("echo ran")).env("RUST_LOG", "ferrolock=loud"));
    assert_eq!((out.code, out.stdout.as_str()), (0, "ran\n"), "{out:?}");
    assert!(out.stderr.starts_with("ferrolock: RUST_LOG=\"ferrolock=loud\" is not a log filter"), "{out:?}");
}

#[tokio::test]
async fn app_name_names_every_connection_in_client_list() {
    let server = RedisServer::start();
    let scratch = Scratch::new();
    let conn = server.raw().await;
    let names = || {
        let mut conn = conn.clone();
        async move {
            let list: String = redis::cmd("CLIENT").arg("LIST").query_async(&mut conn).await.unwrap();
            list.lines().filter_map(|l| l.split(' ').find_map(|f| f.strip_prefix("name="))).filter(|n| !n.is_empty()).map(String::from).collect::<Vec<_>>()
        }
    };
    // --app-name, and FERROLOCK_APP_NAME for the waiter (which subscribes: a second connection).
    let holder = Running::start(&mut run_cmd(&server, &["--app-name", "billing.v2"], "named", &scratch.holder_script(&[])));
    scratch.wait_for("ready").await;
    let mut waiter_cmd = run_cmd(&server, &[], "named", &sh("true"));
    let waiter = Running::start(waiter_cmd.env("FERROLOCK_APP_NAME", "reports"));
    eventually(Duration::from_secs(10), "the waiter to subscribe", || {
        let mut conn = conn.clone();
        async move { numsub(&mut conn, &channel_of("named")).await == 1 }
    })
    .await;
    let owner = status_json(&server, "named").await["holders"][0]["owner"].as_str().unwrap().to_string();
    let client_id = owner.rsplit_once(':').unwrap().0.to_string();
    let seen = names().await;
    assert!(seen.iter().any(|n| *n == format!("ferrolock:{client_id}:billing.v2")), "the holder's connection: {seen:?}");
    let waiters: Vec<&String> = seen.iter().filter(|n| n.ends_with(":reports")).collect();
    assert!(waiters.len() >= 2 && waiters.iter().all(|n| n.starts_with("ferrolock:")), "the waiter's command and pub/sub connections: {seen:?}");
    scratch.stop();
    assert_eq!(holder.finish(Duration::from_secs(10)).await.code, 0);
    assert_eq!(waiter.finish(Duration::from_secs(10)).await.code, 0);
    // Without one: ferrolock:<client id>.
    let scratch = Scratch::new();
    let holder = Running::start(&mut run_cmd(&server, &[], "named", &scratch.holder_script(&[])));
    scratch.wait_for("ready").await;
    let owner = status_json(&server, "named").await["holders"][0]["owner"].as_str().unwrap().to_string();
    let client_id = owner.rsplit_once(':').unwrap().0.to_string();
    assert!(names().await.contains(&format!("ferrolock:{client_id}")), "{:?}", names().await);
    scratch.stop();
    assert_eq!(holder.finish(Duration::from_secs(10)).await.code, 0);
    // A bad name is a usage error before connecting.
    let out = finish(Command::new(target_binary("ferrolock")).args(["--app-name", "my app", "status", "x"]).env("REDIS_URL", "redis://127.0.0.1:1"));
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("--app-name \"my app\""), "{out:?}");
}


/// The options of other kinds that need one server are refused with several URLs,
/// before connecting (nothing listens on these ports).
#[test]
fn kinds_of_one_server_refuse_several_urls() {
    let bin = target_binary("ferrolock");
    let urls = ["--url", "redis://127.0.0.1:1", "--url", "redis://127.0.0.1:2"];
    let cases: &[(&[&str], &str)] = &[
        (&["run", "--shared", "name", "--", "true"], "--shared takes one URL, not 2"),
        (&["run", "--exclusive", "name", "--", "true"], "--exclusive takes one URL, not 2"),
        (&["run", "--fair", "name", "--", "true"], "--fair takes one URL, not 2"),
        (&["run", "--semaphore", "3", "name", "--", "true"], "--semaphore takes one URL, not 2"),
        (&["latch", "name", "--count-down"], "latch takes one URL, not 2"),
        (&["status", "name", "--kind", "semaphore"], "--kind other than lock takes one URL"),
    ];
    for (args, says) in cases {
        let out = finish(Command::new(&bin).args(urls).args(*args));
        assert_eq!(out.code, 2, "{args:?}: {out:?}");
        assert!(out.stderr.starts_with("ferrolock: ") && out.stderr.contains(says), "{args:?}: {out:?}");
    }
}

/// A cluster node given as redis:// is the cluster's seed: status reads a name served
/// by another node, as what its keys say or as --kind says.
#[tokio::test]
async fn status_through_a_cluster_node_reads_a_lock() {
    let cluster = ferrolock_harness::Cluster::start().await;
    let seed = cluster.seed_url();
    let seed_port: u16 = seed.rsplit(':').next().unwrap().parse().unwrap();
    // A name whose slot another node serves: the seed answers MOVED.
    let mut name = String::new();
    for i in 0.. {
        name = format!("elsewhere-{i}");
        if cluster.owner_of(name.as_bytes()).await != seed_port {
            break;
        }
    }
    let bin = target_binary("ferrolock");
    let out = finish(Command::new(&bin).args(["--url", &seed, "status", &name, "--json"]));
    assert_eq!(out.code, 0, "{out:?}");
    let status: serde_json::Value = serde_json::from_str(out.stdout.trim()).unwrap();
    assert_eq!((status["kind"].as_str(), status["locked"].as_bool()), (Some("lock"), Some(false)), "{status}");
    let out = finish(Command::new(&bin).args(["--url", &seed, "status", &name, "--kind", "semaphore", "--json"]));
    assert_eq!(out.code, 0, "{out:?}");
    let status: serde_json::Value = serde_json::from_str(out.stdout.trim()).unwrap();
    assert_eq!(status, serde_json::json!({"name": name, "kind": "semaphore", "free": 0, "waiters": 0, "eviction_policy": null}));
}

#[tokio::test]
async fn signals_reach_cmd_under_a_semaphore_and_the_permit_comes_back() {
    let server = RedisServer::start();
    let scratch = Scratch::new();
    let got = scratch.path("got");
    let script = scratch.holder_script(&[("TERM", &format!("echo TERM > {got}; exit 21"))]);
    let running = Running::start(&mut run_cmd(&server, &["--semaphore", "2"], "sig-sem", &script));
    scratch.wait_for("ready").await;
    running.signal("TERM");
    let out = running.finish(Duration::from_secs(10)).await;
    assert_eq!(out.code, 21, "{out:?}");
    assert_eq!(scratch.read("got").as_deref(), Some("TERM"));
    let mut conn = server.raw().await;
    let free: String = redis::cmd("GET").arg("sig-sem").query_async(&mut conn).await.unwrap();
    assert_eq!(free, "2");
}

#[tokio::test]
async fn permit_not_given_back_exits_74_and_says_the_semaphore_stays_short() {
    let server = RedisServer::start();
    let scratch = Scratch::new();
    let url = acl_user(&server, "sem-runner", &["on", ">pw", "~*", "&*", "+@all"]).await;
    let running = Running::start(&mut run_cmd(&server, &["--url", &url, "--semaphore", "2"], "short", &scratch.holder_script(&[])));
    scratch.wait_for("ready").await;
    // While CMD runs, the user loses EVALSHA: the release script is refused.
    acl_user(&server, "sem-runner", &["-evalsha"]).await;
    scratch.stop();
    let out = running.finish(Duration::from_secs(30)).await;
    assert_eq!(out.code, 74, "{out:?}");
    assert!(out.stderr.contains("could not give back the permit of semaphore \"short\"") && out.stderr.contains("+evalsha"), "{out:?}");
    assert!(
        out.stderr.contains("semaphore \"short\" stays one permit short until someone releases one (permits have no lease); the command's own exit status was 0"),
        "{out:?}"
    );
    let mut conn = server.raw().await;
    let free: String = redis::cmd("GET").arg("short").query_async(&mut conn).await.unwrap();
    assert_eq!(free, "1");
}

#[tokio::test]
async fn acl_refusals_of_latch_and_status_exit_77() {
    let server = RedisServer::start();
    let mut conn = server.raw().await;
    let _: () = redis::cmd("SET").arg("n").arg("2").query_async(&mut conn).await.unwrap();
    // Counting down runs a script.
    let url = acl_user(&server, "noscript", &["on", ">pw", "~*", "&*", "+@all", "-evalsha", "-eval"]).await;
    let out = finish(&mut ferrolock(&server, &["--url", &url, "latch", "n", "--count-down"]));
    assert_eq!(out.code, 77, "{out:?}");
    assert!(out.stderr.starts_with("ferrolock: ") && out.stderr.contains("+eval"), "{out:?}");
    // Telling a number's kind counts the subscribers of its channels.
    let url = acl_user(&server, "nopubsub", &["on", ">pw", "~*", "&*", "+@all", "-pubsub"]).await;
    let out = finish(&mut ferrolock(&server, &["--url", &url, "status", "n"]));
    assert_eq!(out.code, 77, "{out:?}");
    // Redis 7 names the subcommand (+pubsub|numsub); 6.2 only the command (+pubsub).
    assert!(out.stderr.starts_with("ferrolock: ") && out.stderr.contains("needs +pubsub"), "{out:?}");
    let left: String = redis::cmd("GET").arg("n").query_async(&mut conn).await.unwrap();
    assert_eq!(left, "2", "nothing counted down");
}

/// A script that writes `ready-TAG`, then holds until `stop` exists.
fn holder_tagged(scratch: &Scratch, tag: &str) -> Vec<String> {
    sh(&format!(
        "echo ready > {ready}; i=0; while [ ! -e {stop} ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done",
        ready = scratch.path(&format!("ready-{tag}")),
        stop = scratch.path("stop"),
    ))
}

#[tokio::test]
async fn shared_runs_hold_together_and_an_exclusive_run_alone() {
    let server = RedisServer::start();
    let scratch = Scratch::new();
    // Both readers inside at once: the second one's CMD starts while the first still holds.
    let r1 = Running::start(&mut run_cmd(&server, &["--shared"], "cfg", &holder_tagged(&scratch, "r1")));
    let r2 = Running::start(&mut run_cmd(&server, &["--shared"], "cfg", &holder_tagged(&scratch, "r2")));
    scratch.wait_for("ready-r1").await;
    scratch.wait_for("ready-r2").await;

    let status = status_json(&server, "cfg").await;
    assert_eq!(status["kind"], "read_write_lock", "{status}");
    assert_eq!(status["mode"], "read", "{status}");
    assert_eq!(status["holders"].as_array().unwrap().len(), 2, "{status}");
    let text = finish(&mut ferrolock(&server, &["status", "cfg"]));
    assert!(text.stdout.contains("read-write lock") && text.stdout.contains("mode:       read"), "{text:?}");

    // A writer cannot get in while they read.
    let out = finish(&mut run_cmd(&server, &["--exclusive", "-n"], "cfg", &sh("echo wrote")));
    assert_eq!((out.code, out.stdout.as_str()), (1, ""), "{out:?}");
    // A writer waiting on the read-write lock's channel counts as its waiter.
    let writer = Running::start(&mut run_cmd(&server, &["--exclusive"], "cfg", &sh("echo wrote")));
    let conn = server.raw().await;
    eventually(Duration::from_secs(10), "the writer to wait", || {
        let mut conn = conn.clone();
        async move { numsub(&mut conn, "redisson_rwlock:{cfg}").await == 1 }
    })
    .await;
    assert_eq!(status_json(&server, "cfg").await["waiters"], 1);
    scratch.stop();
    assert_eq!(r1.finish(Duration::from_secs(10)).await.code, 0);
    assert_eq!(r2.finish(Duration::from_secs(10)).await.code, 0);
    let wrote = writer.finish(Duration::from_secs(10)).await;
    assert_eq!((wrote.code, wrote.stdout.as_str()), (0, "wrote\n"), "{wrote:?}");

    // While a writer holds, a reader cannot get in.
    std::fs::remove_file(scratch.dir.join("stop")).unwrap();
    let w = Running::start(&mut run_cmd(&server, &["--exclusive"], "cfg", &holder_tagged(&scratch, "w")));
    scratch.wait_for("ready-w").await;
    assert_eq!(status_json(&server, "cfg").await["mode"], "write");
    let out = finish(&mut run_cmd(&server, &["--shared", "-n"], "cfg", &sh("echo read")));
    assert_eq!((out.code, out.stdout.as_str()), (1, ""), "{out:?}");
    scratch.stop();
    assert_eq!(w.finish(Duration::from_secs(10)).await.code, 0);
    assert_nothing_locked(&server).await;
}

#[tokio::test]
async fn fair_runs_get_the_lock_in_the_order_they_came() {
    let server = RedisServer::start();
    let scratch = Scratch::new();
    let conn = server.raw().await;
    let holder = Running::start(&mut run_cmd(&server, &["--fair"], "jobs", &holder_tagged(&scratch, "h")));
    scratch.wait_for("ready-h").await;
    let order = scratch.path("order");
    let mut waiters = Vec::new();
    for (i, tag) in ["first", "second", "third"].iter().enumerate() {
        waiters.push(Running::start(&mut run_cmd(&server, &["--fair"], "jobs", &sh(&format!("echo {tag} >> {order}")))));
        // Queued one after another: each is in the queue before the next starts.
        eventually(Duration::from_secs(10), &format!("{tag} to queue"), || {
            let mut conn = conn.clone();
            async move {
                let n: usize = redis::cmd("LLEN").arg("redisson_lock_queue:{jobs}").query_async(&mut conn).await.unwrap();
                n == i + 1
            }
        })
        .await;
    }
    let status = status_json(&server, "jobs").await;
    assert_eq!(status["kind"], "fair_lock", "{status}");
    assert_eq!(status["locked"], true, "{status}");
    assert_eq!(status["waiters"], 3, "{status}");
    assert_eq!(status["queue"].as_array().unwrap().len(), 3, "{status}");
    let text = finish(&mut ferrolock(&server, &["status", "jobs"]));
    assert!(text.stdout.contains("fair lock") && text.stdout.contains("3 in the queue") && text.stdout.contains("  3:"), "{text:?}");
    let check = finish(&mut ferrolock(&server, &["status", "--check", "jobs"]));
    assert_eq!(check.code, 0, "{check:?}");

    scratch.stop();
    assert_eq!(holder.finish(Duration::from_secs(10)).await.code, 0);
    for waiter in waiters {
        assert_eq!(waiter.finish(Duration::from_secs(10)).await.code, 0);
    }
    assert_eq!(scratch.read("order").unwrap(), "first\nsecond\nthird");
    assert_nothing_locked(&server).await;
}

#[tokio::test]
async fn semaphore_runs_at_most_n_at_once_and_keeps_an_existing_count() {
    let server = RedisServer::start();
    let scratch = Scratch::new();
    let mut conn = server.raw().await;
    let a = Running::start(&mut run_cmd(&server, &["--semaphore", "2"], "gpu", &holder_tagged(&scratch, "a")));
    let b = Running::start(&mut run_cmd(&server, &["--semaphore", "2"], "gpu", &holder_tagged(&scratch, "b")));
    scratch.wait_for("ready-a").await;
    scratch.wait_for("ready-b").await;
    // Both permits out: a third cannot start.
    let out = finish(&mut run_cmd(&server, &["--semaphore", "2", "-n"], "gpu", &sh("echo in")));
    assert_eq!((out.code, out.stdout.as_str()), (1, ""), "{out:?}");
    // A semaphore at 0 cannot be a latch (a latch at 0 is deleted): told without --kind.
    let status = status_json(&server, "gpu").await;
    assert_eq!(status, serde_json::json!({"name": "gpu", "kind": "semaphore", "free": 0, "waiters": 0, "eviction_policy": null}));

    let waiting = Running::start(&mut run_cmd(&server, &["--semaphore", "2"], "gpu", &sh("echo in")));
    eventually(Duration::from_secs(10), "a run to wait for a permit", || {
        let mut conn = conn.clone();
        async move { numsub(&mut conn, "redisson_sc:{gpu}").await == 1 }
    })
    .await;
    let text = finish(&mut ferrolock(&server, &["status", "gpu", "--kind", "semaphore"]));
    assert!(text.stdout.contains("free:       0 permits") && text.stdout.contains("waiters:    1"), "{text:?}");
    scratch.stop();
    assert_eq!(a.finish(Duration::from_secs(10)).await.code, 0);
    assert_eq!(b.finish(Duration::from_secs(10)).await.code, 0);
    let ran = waiting.finish(Duration::from_secs(10)).await;
    assert_eq!((ran.code, ran.stdout.as_str()), (0, "in\n"), "{ran:?}");
    let free: String = redis::cmd("GET").arg("gpu").query_async(&mut conn).await.unwrap();
    assert_eq!(free, "2", "every permit is back");

    // Another N is reported and not applied; CMD's status passes through.
    let out = finish(&mut run_cmd(&server, &["--semaphore", "1"], "gpu", &sh("exit 3")));
    assert_eq!(out.code, 3, "{out:?}");
    assert!(out.stderr.contains("2 free permits, more than --semaphore 1"), "{out:?}");
    let out = finish(&mut run_cmd(&server, &["--semaphore", "5"], "gpu", &sh("true")));
    assert_eq!((out.code, out.stderr.as_str()), (0, ""), "{out:?}");
    let free: String = redis::cmd("GET").arg("gpu").query_async(&mut conn).await.unwrap();
    assert_eq!(free, "2");
}

#[tokio::test]
async fn a_signal_while_waiting_for_a_permit_takes_none() {
    let server = RedisServer::start();
    let mut conn = server.raw().await;
    let _: () = redis::cmd("SET").arg("busy").arg("0").query_async(&mut conn).await.unwrap();
    let waiting = Running::start(&mut run_cmd(&server, &["--semaphore", "1"], "busy", &sh("echo in")));
    eventually(Duration::from_secs(10), "the run to wait", || {
        let mut conn = conn.clone();
        async move { numsub(&mut conn, "redisson_sc:{busy}").await == 1 }
    })
    .await;
    waiting.signal("TERM");
    let out = waiting.finish(Duration::from_secs(10)).await;
    assert_eq!((out.code, out.stdout.as_str()), (128 + 15, ""), "{out:?}");
    assert!(out.stderr.contains("stopped waiting for a permit"), "{out:?}");
    let _: () = redis::cmd("INCR").arg("busy").query_async(&mut conn).await.unwrap();
    let free: String = redis::cmd("GET").arg("busy").query_async(&mut conn).await.unwrap();
    assert_eq!(free, "1", "the run that gave up took no permit");
}

#[tokio::test]
async fn latch_sets_counts_down_and_wakes_a_waiting_script() {
    let server = RedisServer::start();
    let conn = server.raw().await;
    let out = finish(&mut ferrolock(&server, &["latch", "ready", "--wait"]));
    assert_eq!((out.code, out.stdout.as_str()), (0, "open\n"), "an open latch: {out:?}");
    let out = finish(&mut ferrolock(&server, &["latch", "ready", "--count", "2"]));
    assert_eq!((out.code, out.stdout.as_str()), (0, "set ready to 2\n"), "{out:?}");
    let out = finish(&mut ferrolock(&server, &["latch", "ready", "--count", "5"]));
    assert_eq!((out.code, out.stdout.as_str()), (1, ""), "{out:?}");
    assert!(out.stderr.contains("still counting down (2 left)"), "{out:?}");
    let out = finish(&mut ferrolock(&server, &["latch", "ready", "--wait", "--timeout", "0.2"]));
    assert_eq!((out.code, out.stdout.as_str()), (1, ""), "{out:?}");
    assert!(out.stderr.contains("still counting down (2 left) after 0.2 s"), "{out:?}");

    let waiter = Running::start(&mut ferrolock(&server, &["latch", "ready", "--wait"]));
    eventually(Duration::from_secs(10), "the waiter to subscribe", || {
        let mut conn = conn.clone();
        async move { numsub(&mut conn, "redisson_countdownlatch__channel__{ready}").await == 1 }
    })
    .await;
    // Its waiter tells the number apart from a semaphore's.
    let status = status_json(&server, "ready").await;
    assert_eq!(status, serde_json::json!({"name": "ready", "kind": "count_down_latch", "count": 2, "open": false, "waiters": 1, "eviction_policy": null}));
    let out = finish(&mut ferrolock(&server, &["latch", "ready", "--count-down"]));
    assert_eq!((out.code, out.stdout.as_str()), (0, "1\n"), "{out:?}");
    let opened = Instant::now();
    let out = finish(&mut ferrolock(&server, &["latch", "ready", "--count-down"]));
    assert_eq!((out.code, out.stdout.as_str()), (0, "0\n"), "{out:?}");
    let woke = waiter.finish(Duration::from_secs(10)).await;
    assert_eq!((woke.code, woke.stdout.as_str()), (0, "open\n"), "{woke:?}");
    assert!(opened.elapsed() < Duration::from_secs(5), "woken after {:?}", opened.elapsed());
    let text = finish(&mut ferrolock(&server, &["status", "ready", "--kind", "latch"]));
    assert!(text.stdout.contains("count:      0 (open)"), "{text:?}");
    let mut conn = conn.clone();
    assert_eq!(keys(&mut conn).await, Vec::<String>::new());
}

#[tokio::test]
async fn status_tells_every_kind_apart() {
    let server = RedisServer::start();
    let mut conn = server.raw().await;
    // A number nothing waits on: a semaphore or a latch, said as such, or read as --kind says.
    let _: () = redis::cmd("SET").arg("n").arg("3").query_async(&mut conn).await.unwrap();
    assert_eq!(status_json(&server, "n").await, serde_json::json!({"name": "n", "kind": "semaphore_or_latch", "value": 3, "eviction_policy": null}));
    let text = finish(&mut ferrolock(&server, &["status", "n"]));
    assert!(text.stdout.contains("give --kind"), "{text:?}");
    let out = finish(&mut ferrolock(&server, &["status", "n", "--kind", "semaphore", "--json"]));
    assert_eq!(out.stdout.trim(), r#"{"name":"n","kind":"semaphore","free":3,"waiters":0,"eviction_policy":null}"#, "{out:?}");
    let out = finish(&mut ferrolock(&server, &["status", "n", "--kind", "latch", "--json"]));
    assert_eq!(out.stdout.trim(), r#"{"name":"n","kind":"count_down_latch","count":3,"open":false,"waiters":0,"eviction_policy":null}"#, "{out:?}");

    // --check is for locks.
    let out = finish(&mut ferrolock(&server, &["status", "n", "--check"]));
    assert_eq!((out.code, out.stdout.as_str()), (2, ""), "{out:?}");
    assert!(out.stderr.contains("not a lock"), "{out:?}");

    // A kind forced on a key of another type is refused (65), as is a number that is not one.
    let _: () = redis::cmd("HSET").arg("h").arg("owner:1").arg("1").query_async(&mut conn).await.unwrap();
    let _: () = redis::cmd("SET").arg("word").arg("hello").query_async(&mut conn).await.unwrap();
    for (args, says) in [
        (&["status", "h", "--kind", "latch"][..], "holds a hash, not a count-down latch"),
        (&["status", "n", "--kind", "fair"], "holds a string, not a fair lock"),
        (&["status", "word"], "not a number"),
        (&["latch", "h", "--count-down"], "WRONGTYPE"),
        (&["run", "--semaphore", "1", "h", "--", "true"], "WRONGTYPE"),
    ] {
        let out = finish(&mut ferrolock(&server, args));
        assert_eq!(out.code, 65, "{args:?}: {out:?}");
        assert!(out.stderr.contains(says), "{args:?} should say {says}: {out:?}");
    }

    // A permit-expirable semaphore: its permits out, with or without a lease.
    let mut worker = Worker::start("rust", &server.url(), 30_000);
    assert_eq!(worker.call("permit_set p 3"), "ok true");
    let leased = worker.call("permit_acquire p - 60000");
    let forever = worker.call("permit_acquire p");
    let (leased, forever) = (leased.strip_prefix("ok ").unwrap(), forever.strip_prefix("ok ").unwrap());
    let status = status_json(&server, "p").await;
    assert_eq!(status["kind"], "permit_expirable_semaphore", "{status}");
    assert_eq!(status["free"], 1, "{status}");
    let out = status["out"].as_array().unwrap();
    let lease_of = |id: &str| out.iter().find(|p| p["id"] == id).unwrap_or_else(|| panic!("{id} not in {status}"))["lease_left_ms"].clone();
    let left = lease_of(leased).as_i64().unwrap();
    assert!(left > 0 && left <= 60_000, "{status}");
    assert_eq!(lease_of(forever), serde_json::Value::Null);
    let text = finish(&mut ferrolock(&server, &["status", "p"]));
    assert!(text.stdout.contains(&format!("{forever} (no lease)")) && text.stdout.contains("s left"), "{text:?}");
    worker.quit();

    // A lock's status is unchanged by all this.
    assert_eq!(status_json(&server, "free-lock").await["kind"], "lock");
}

#[test]
fn latch_against_no_server_exits_69() {
    let out = finish(
        Command::new(target_binary("ferrolock")).args(["latch", "x", "--count-down"]).env("REDIS_URL", format!("redis://127.0.0.1:{}", free_port())),
    );
    assert_eq!(out.code, 69, "{out:?}");
}

#[tokio::test]
async fn a_signal_stops_a_latch_wait_and_leaves_no_subscription() {
    let server = RedisServer::start();
    let conn = server.raw().await;
    let out = finish(&mut ferrolock(&server, &["latch", "gate", "--count", "1"]));
    assert_eq!(out.code, 0, "{out:?}");
    let waiter = Running::start(&mut ferrolock(&server, &["latch", "gate", "--wait"]));
    let channel = "redisson_countdownlatch__channel__{gate}";
    eventually(Duration::from_secs(10), "the waiter to subscribe", || {
        let mut conn = conn.clone();
        async move { numsub(&mut conn, channel).await == 1 }
    })
    .await;
    waiter.signal("TERM");
    let out = waiter.finish(Duration::from_secs(10)).await;
    assert_eq!((out.code, out.stdout.as_str()), (128 + 15, ""), "{out:?}");
    assert!(out.stderr.contains("stopped waiting for latch \"gate\""), "{out:?}");
    let mut conn = conn.clone();
    assert_eq!(numsub(&mut conn, channel).await, 0);
    let count: String = redis::cmd("GET").arg("gate").query_async(&mut conn).await.unwrap();
    assert_eq!(count, "1", "the count is untouched");
}

/// Several URLs in REDIS_URL, separated by commas, are a Redlock's masters: the run
/// holds the lock on each (docs/site/guides/operating.md, "URLs").
#[tokio::test]
async fn comma_separated_redis_url_is_a_redlock() {
    let servers = [RedisServer::start(), RedisServer::start(), RedisServer::start()];
    let urls: Vec<String> = servers.iter().map(|s| s.url()).collect();
    let mut raws = Vec::new();
    for s in &servers {
        raws.push(s.raw().await);
    }
    let check = "redis-cli -p {port} exists jobs";
    let script = servers
        .iter()
        .map(|s| check.replace("{port}", &s.port.to_string()))
        .collect::<Vec<_>>()
        .join(" && ");
    let out = finish(
        Command::new(target_binary("ferrolock"))
            .args(["run", "jobs", "--", "sh", "-c", &script])
            .env("REDIS_URL", urls.join(","))
            .stdin(Stdio::null()),
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout.lines().collect::<Vec<_>>(), ["1", "1", "1"], "held on every master: {out:?}");
    for raw in &mut raws {
        assert!(keys(raw).await.is_empty(), "released on every master");
    }
}

/// `unix:///path` and `redis+unix:///path?db=N` reach a server on its Unix socket.
#[tokio::test]
async fn unix_socket_urls() {
    let dir = ferrolock_harness::ScratchDir::new("unix-url").unwrap();
    let socket = dir.join("redis.sock").display().to_string();
    let server = RedisServer::start_with(&["--unixsocket", &socket, "--unixsocketperm", "700"]);
    let mut raw = server.raw().await;
    for url in [format!("unix://{socket}"), format!("redis+unix://{socket}?db=0")] {
        let out = finish(
            Command::new(target_binary("ferrolock"))
                .args(["--url", &url, "run", "over-socket", "--", "redis-cli", "-s", &socket, "exists", "over-socket"])
                .env_remove("REDIS_URL")
                .stdin(Stdio::null()),
        );
        assert_eq!((out.code, out.stdout.trim()), (0, "1"), "{url}: {out:?}");
    }
    assert!(keys(&mut raw).await.is_empty());
}

// ---- elect, leader, run --min-hold (issue 42: leader election and cron on many hosts)

/// A CMD for `ferrolock elect` as candidate `tag`: appends its term and lock to
/// `<tag>-terms`, then exits at once while fewer than `exits` runs are recorded;
/// otherwise writes `<tag>-ready` and holds until `<tag>-stop` exists (writing
/// `<tag>-got` and exiting 12 on SIGTERM).
fn candidate_script(scratch: &Scratch, tag: &str, exits: usize) -> Vec<String> {
    let (terms, ready, stop, got) =
        (scratch.path(&format!("{tag}-terms")), scratch.path(&format!("{tag}-ready")), scratch.path(&format!("{tag}-stop")), scratch.path(&format!("{tag}-got")));
    sh(&format!(
        "echo \"$FERROLOCK_TERM $FERROLOCK_LOCK $FERROLOCK_TOKEN\" >> {terms}\n\
         if [ $(wc -l < {terms}) -le {exits} ]; then exit 0; fi\n\
         trap 'echo TERM >> {got}; exit 12' TERM\n\
         echo ready > {ready}\n\
         i=0\n\
         while [ ! -e {stop} ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done\n"
    ))
}

/// The terms `candidate_script` recorded (each line's first word), checking its other words.
fn recorded_terms(scratch: &Scratch, tag: &str, name: &str) -> Vec<u64> {
    let text = scratch.read(&format!("{tag}-terms")).unwrap_or_default();
    text.lines()
        .map(|line| {
            let words: Vec<&str> = line.split(' ').collect();
            assert_eq!(&words[1..], [name, words[0]], "FERROLOCK_LOCK and FERROLOCK_TOKEN beside the term: {line:?}");
            words[0].parse().unwrap()
        })
        .collect()
}

fn elect_cmd(server: &RedisServer, options: &[&str], name: &str, command: &[String]) -> Command {
    let mut cmd = ferrolock(server, &["elect"]);
    cmd.args(options).arg(name).arg("--").args(command);
    cmd
}

async fn wait_for_terms(scratch: &Scratch, tag: &str, name: &str, n: usize) -> Vec<u64> {
    eventually(Duration::from_secs(10), &format!("{n} terms of {tag}"), || {
        let count = recorded_terms(scratch, tag, name).len();
        async move { count >= n }
    })
    .await;
    recorded_terms(scratch, tag, name)
}

#[tokio::test]
async fn elect_runs_cmd_while_leading_and_sigterm_resigns_to_the_next_candidate() {
    let server = RedisServer::start();
    let scratch = Scratch::new();
    let first = Running::start(&mut elect_cmd(&server, &[], "sched", &candidate_script(&scratch, "a", 0)));
    scratch.wait_for("a-ready").await;
    let term = wait_for_terms(&scratch, "a", "sched", 1).await[0];
    // `leader` answers at once with the leader's own note (its pid: ferrolock's).
    let out = finish(&mut ferrolock(&server, &["leader", "sched", "--json"]));
    assert_eq!(out.code, 0, "{out:?}");
    let shown: serde_json::Value = serde_json::from_str(out.stdout.trim()).unwrap();
    assert_eq!(shown["leader"]["term"], term, "{shown}");
    assert_eq!(shown["leader"]["info"]["pid"], first.pid(), "{shown}");
    assert!(shown["leader"]["info"]["cmd"].as_str().is_some_and(|c| c.starts_with("sh -c")), "{shown}");
    let out = finish(&mut ferrolock(&server, &["leader", "sched"]));
    assert!(out.stdout.starts_with(&format!("term {term}: ")) && out.stdout.contains(&format!("pid {}", first.pid())), "{out:?}");

    let second = Running::start(&mut elect_cmd(&server, &["--once"], "sched", &candidate_script(&scratch, "b", 0)));
    let conn = server.raw().await;
    eventually(Duration::from_secs(10), "the second candidate to wait", || {
        let mut conn = conn.clone();
        async move { numsub(&mut conn, &channel_of("sched")).await == 1 }
    })
    .await;
    // SIGTERM: CMD gets it, ends, and ferrolock resigns (the next leads at once) and
    // exits with CMD's status.
    first.signal("TERM");
    let out = first.finish(Duration::from_secs(10)).await;
    assert_eq!(out.code, 12, "{out:?}");
    assert_eq!(scratch.read("a-got").as_deref(), Some("TERM"));
    scratch.wait_for("b-ready").await;
    let next = recorded_terms(&scratch, "b", "sched");
    assert!(next.len() == 1 && next[0] > term, "{next:?} after {term}");
    std::fs::write(scratch.path("b-stop"), "").unwrap();
    let out = second.finish(Duration::from_secs(10)).await;
    assert_eq!(out.code, 0, "--once: CMD's status: {out:?}");
    assert_nothing_locked(&server).await;
    let out = finish(&mut ferrolock(&server, &["leader", "sched"]));
    assert_eq!((out.code, out.stdout.as_str()), (0, "no leader\n"), "{out:?}");
}

#[tokio::test]
async fn elect_campaigns_again_when_cmd_ends_and_when_leadership_is_lost() {
    let server = RedisServer::start();
    let scratch = Scratch::new();
    // The first two runs of CMD exit at once: each time ferrolock resigns and leads again.
    let running = Running::start(&mut elect_cmd(&server, &["--watchdog", "0.3", "--restart-delay", "0"], "again", &candidate_script(&scratch, "c", 2)));
    scratch.wait_for("c-ready").await;
    let terms = recorded_terms(&scratch, "c", "again");
    assert!(terms.len() == 3 && terms.windows(2).all(|w| w[0] < w[1]), "{terms:?}");
    // Lost while CMD runs: CMD gets SIGTERM, then ferrolock campaigns and leads again.
    std::fs::remove_file(scratch.path("c-ready")).unwrap();
    let out = finish(&mut ferrolock(&server, &["unlock", "--force", "again"]));
    assert_eq!(out.code, 0, "{out:?}");
    scratch.wait_for("c-ready").await;
    let terms = wait_for_terms(&scratch, "c", "again", 4).await;
    assert!(terms[3] > terms[2], "{terms:?}");
    assert_eq!(scratch.read("c-got").as_deref(), Some("TERM"));
    running.signal("TERM");
    let out = running.finish(Duration::from_secs(10)).await;
    assert_eq!(out.code, 12, "{out:?}");
    assert!(out.stderr.contains("lost"), "{out:?}");
    assert_nothing_locked(&server).await;

    // --once: a lost leadership ends it with 75.
    let once = Running::start(&mut elect_cmd(&server, &["--once", "--watchdog", "0.3"], "once", &candidate_script(&scratch, "d", 0)));
    scratch.wait_for("d-ready").await;
    finish(&mut ferrolock(&server, &["unlock", "--force", "once"]));
    let out = once.finish(Duration::from_secs(10)).await;
    assert_eq!(out.code, 75, "{out:?}");
    assert_eq!(scratch.read("d-got").as_deref(), Some("TERM"));
    assert_nothing_locked(&server).await;
}

#[tokio::test]
async fn leader_watch_prints_each_change_and_a_signal_stops_a_campaign() {
    let server = RedisServer::start();
    let scratch = Scratch::new();
    let log = scratch.path("watch.log");
    let mut watch = ferrolock(&server, &["leader", "w", "--watch"]);
    watch.stdout(std::fs::File::create(&log).unwrap());
    let mut watch = Running { child: watch.stderr(Stdio::piped()).spawn().unwrap() };
    let lines = |n: usize| {
        let log = log.clone();
        async move { std::fs::read_to_string(&log).unwrap_or_default().lines().count() >= n }
    };
    eventually(Duration::from_secs(10), "the first line", || lines(1)).await;
    let leader = Running::start(&mut elect_cmd(&server, &["--once"], "w", &candidate_script(&scratch, "e", 0)));
    scratch.wait_for("e-ready").await;
    let term = recorded_terms(&scratch, "e", "w")[0];
    // A second candidate waits; SIGINT stops its campaign with nothing held.
    let waiting = Running::start(&mut elect_cmd(&server, &[], "w", &candidate_script(&scratch, "f", 0)));
    let conn = server.raw().await;
    // The watch listens on the lock's channel too.
    eventually(Duration::from_secs(10), "the second candidate to wait", || {
        let mut conn = conn.clone();
        async move { numsub(&mut conn, &channel_of("w")).await == 2 }
    })
    .await;
    waiting.signal("INT");
    let out = waiting.finish(Duration::from_secs(10)).await;
    assert_eq!(out.code, 130, "{out:?}");
    assert!(out.stderr.contains("stopped campaigning") && out.stderr.contains("nothing is held"), "{out:?}");
    std::fs::write(scratch.path("e-stop"), "").unwrap();
    assert_eq!(leader.finish(Duration::from_secs(10)).await.code, 0);
    eventually(Duration::from_secs(10), "three lines", || lines(3)).await;
    assert!(!watch.has_exited());
    let text = std::fs::read_to_string(&log).unwrap();
    let shown: Vec<&str> = text.lines().collect();
    assert_eq!(shown[0], "no leader", "{text}");
    assert!(shown[1].starts_with(&format!("term {term}: ")) && shown[1].contains(&format!("pid {}", leader_pid(&shown[1]))), "{text}");
    assert_eq!(&shown[2..], ["no leader"], "{text}");
    assert!(scratch.read("f-terms").is_none(), "the stopped candidate never led");
    watch.signal("TERM");
    let _ = watch.child.wait();
    assert_nothing_locked(&server).await;
}

/// The pid a `leader` line names.
fn leader_pid(line: &str) -> u32 {
    line.split("pid ").nth(1).and_then(|rest| rest.split(' ').next()).and_then(|pid| pid.trim_end_matches(':').parse().ok()).unwrap_or_else(|| panic!("no pid in {line:?}"))
}

#[tokio::test]
async fn min_hold_keeps_the_lock_after_a_short_cmd_and_no_process_is_left() {
    let server = RedisServer::start();
    let scratch = Scratch::new();
    let started = Instant::now();
    let marker = scratch.path("lock-name");
    let out = finish(&mut run_cmd(&server, &["-n", "--min-hold", "1.5"], "tick", &sh(&format!("echo $FERROLOCK_LOCK > {marker}"))));
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(scratch.read("lock-name").as_deref(), Some("tick"), "CMD gets FERROLOCK_LOCK");
    // Its process is gone (finish waited for it); the lock stays, on a fixed lease.
    let mut conn = server.raw().await;
    let pttl: i64 = redis::cmd("PTTL").arg("tick").query_async(&mut conn).await.unwrap();
    assert!((1..=1500).contains(&pttl), "pttl {pttl}");
    let out = finish(&mut run_cmd(&server, &["-n"], "tick", &sh("echo ran")));
    assert_eq!((out.code, out.stdout.as_str()), (1, ""), "a second host skips: {out:?}");
    let status = status_json(&server, "tick").await;
    assert_eq!(status["holders"][0]["info"]["cmd"], format!("sh -c 'echo $FERROLOCK_LOCK > {marker}'"), "{status}");
    eventually(Duration::from_secs(10), "the minimum hold to end", || async {
        keys(&mut server.raw().await).await.is_empty()
    })
    .await;
    assert!(started.elapsed() >= Duration::from_millis(1500), "free {:?} after the first run started", started.elapsed());
    let out = finish(&mut run_cmd(&server, &["-n"], "tick", &sh("echo ran")));
    assert_eq!((out.code, out.stdout.as_str()), (0, "ran\n"), "{out:?}");
    // A CMD longer than the minimum: released at its end as usual.
    let out = finish(&mut run_cmd(&server, &["-n", "--min-hold", "0.1"], "tick", &sh("sleep 0.3")));
    assert_eq!(out.code, 0, "{out:?}");
    assert_nothing_locked(&server).await;
    for (args, needle) in [
        (&["run", "--min-hold", "1", "--semaphore", "2", "x", "--", "true"][..], "--semaphore"),
        (&["run", "--min-hold", "0", "x", "--", "true"], "--min-hold"),
        (&["--url", "redis://a:1", "--url", "redis://b:1", "run", "--min-hold", "1", "x", "--", "true"], "--min-hold takes one URL"),
        (&["--url", "redis://a:1", "--url", "redis://b:1", "elect", "x", "--", "true"], "one URL"),
        (&["elect", "x"], "<CMD>"),
        (&["elect", "--once", "--restart-delay", "1", "x", "--", "true"], "--restart-delay"),
    ] {
        let out = finish(&mut ferrolock(&server, args));
        assert_eq!(out.code, 2, "{args:?}: {out:?}");
        assert!(out.stderr.contains(needle), "{args:?}: {out:?}");
    }
}
