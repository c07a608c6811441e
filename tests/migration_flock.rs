//! docs/site/migration/flock.md, row by row: flock(1) from util-linux (the version the
//! page names) on a lock file and `ferrolock run` on a redis-server this test starts,
//! on the same scenario. Build the CLI first (`cargo build -p ferrolock-cli`).
//!
//! Each test names the rows it backs with `// row: flock/ID`; the last test checks that
//! every row of the page has one and that every one named is on the page (the page's
//! rows are also checked, with every migration page's, by scripts/docs/check_rows.py).
//! Holding commands are small sh scripts that write `ready` and hold until `stop`
//! exists: the tests wait on those files and on Redis, never on sleeps.

use std::borrow::BorrowMut;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ferrolock_harness::{eventually, finish, repo_root, target_binary, Finished, RedisServer, ScratchDir};

/// One test's world: a redis-server, a scratch directory and its lock file.
struct Scene {
    server: RedisServer,
    dir: ScratchDir,
}

impl Scene {
    fn new() -> Scene {
        Scene { server: RedisServer::start(), dir: ScratchDir::new("flock-migration").unwrap() }
    }

    fn path(&self, file: &str) -> String {
        self.dir.join(file).display().to_string()
    }

    /// The lock file flock(1) locks.
    fn file(&self) -> String {
        self.path("job.lock")
    }

    /// `flock ARGS`.
    fn flock(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new("flock");
        cmd.args(args).stdin(Stdio::null());
        cmd
    }

    /// `ferrolock ARGS` on this scene's server.
    fn ferrolock(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(target_binary("ferrolock"));
        cmd.args(args).env("REDIS_URL", self.server.url()).env_remove("RUST_LOG").stdin(Stdio::null());
        cmd
    }

    /// A shell script that writes `<tag>.ready` (with its pid) and holds until `<tag>.stop` exists.
    fn holder(&self, tag: &str) -> String {
        format!(
            "echo $$ > {ready}; i=0; while [ ! -e {stop} ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done",
            ready = self.path(&format!("{tag}.ready")),
            stop = self.path(&format!("{tag}.stop")),
        )
    }

    /// Starts `cmd` in the background and returns once its holder `tag` wrote `ready`.
    /// Its output goes nowhere: a holder that outlives `cmd` would keep a pipe open.
    async fn hold(&self, mut cmd: Command, tag: &str) -> Child {
        let child = cmd.stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
        self.wait_for(&format!("{tag}.ready")).await;
        child
    }

    async fn wait_for(&self, file: &str) {
        let path = self.dir.join(file);
        eventually(Duration::from_secs(20), &format!("{file} to be written"), || {
            let exists = path.exists();
            async move { exists }
        })
        .await;
    }

    fn stop(&self, tag: &str) {
        std::fs::write(self.dir.join(format!("{tag}.stop")), "").unwrap();
    }

    fn pid_of(&self, tag: &str) -> u32 {
        std::fs::read_to_string(self.dir.join(format!("{tag}.ready"))).unwrap().trim().parse().unwrap()
    }

    /// `flock -n FILE true`'s exit code: 0 free, 1 held.
    fn flock_free(&self) -> bool {
        done(self.flock(&["-n", &self.file(), "true"])).code == 0
    }

    /// `ferrolock status --check NAME`: true when held.
    fn held(&self, name: &str) -> bool {
        let out = done(self.ferrolock(&["status", "--check", name]));
        assert!(out.code == 0 || out.code == 1, "{out:?}");
        out.code == 0
    }
}

impl Drop for Scene {
    fn drop(&mut self) {
        for entry in std::fs::read_dir(self.dir.path()).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(tag) = name.strip_suffix(".ready") {
                let _ = std::fs::write(self.dir.join(format!("{tag}.stop")), "");
            }
        }
    }
}

/// Runs a command to its end (one built here, or borrowed).
fn done(mut cmd: impl BorrowMut<Command>) -> Finished {
    finish(cmd.borrow_mut())
}

/// Waits for a background command to end (bounded) and returns how it ended.
async fn ended(mut child: Child) -> Finished {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap().into();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the command did not end within 30 s");
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn kill(pid: u32, signal: &str) {
    assert!(Command::new("kill").args(["-s", signal, &pid.to_string()]).status().unwrap().success());
}

fn alive(pid: u32) -> bool {
    Command::new("kill").args(["-0", &pid.to_string()]).stderr(Stdio::null()).status().unwrap().success()
}

// row: flock/version
#[test]
fn version() {
    let out = done(Command::new("flock").arg("--version"));
    assert_eq!(out.stdout.trim(), "flock from util-linux 2.38.1");
    // --fcntl (util-linux 2.39) is not in this version.
    assert_eq!(done(Command::new("flock").args(["--fcntl", "/tmp", "true"])).code, 64);
}

// row: flock/run
#[tokio::test]
async fn command_exit_code() {
    let s = Scene::new();
    assert_eq!(done(s.flock(&[&s.file(), "sh", "-c", "exit 3"])).code, 3);
    assert_eq!(done(s.ferrolock(&["run", "job", "--", "sh", "-c", "exit 3"])).code, 3);
}

// row: flock/nonblock
#[tokio::test]
async fn nonblock() {
    let s = Scene::new();
    let theirs = s.hold(s.flock(&[&s.file(), "sh", "-c", &s.holder("theirs")]), "theirs").await;
    let ours = s.hold(s.ferrolock(&["run", "job", "--", "sh", "-c", &s.holder("ours")]), "ours").await;
    assert_eq!(done(s.flock(&["-n", &s.file(), "true"])).code, 1);
    assert_eq!(done(s.ferrolock(&["run", "-n", "job", "--", "true"])).code, 1);
    assert_eq!(done(s.ferrolock(&["run", "--wait", "0", "job", "--", "true"])).code, 1);
    s.stop("theirs");
    s.stop("ours");
    assert_eq!(ended(theirs).await.code, 0);
    assert_eq!(ended(ours).await.code, 0);
}

// row: flock/timeout
#[tokio::test]
async fn timeout() {
    let s = Scene::new();
    let theirs = s.hold(s.flock(&[&s.file(), "sh", "-c", &s.holder("theirs")]), "theirs").await;
    let ours = s.hold(s.ferrolock(&["run", "job", "--", "sh", "-c", &s.holder("ours")]), "ours").await;
    assert_eq!(done(s.flock(&["-w", "0.3", &s.file(), "true"])).code, 1);
    assert_eq!(done(s.ferrolock(&["run", "-w", "0.3", "job", "--", "true"])).code, 1);
    // A waiter gets it once the holder ends.
    let flock_waiter = s.flock(&["-w", "30", &s.file(), "true"]).spawn().unwrap();
    let ferrolock_waiter = s.ferrolock(&["run", "--wait", "30", "job", "--", "true"]).spawn().unwrap();
    s.stop("theirs");
    s.stop("ours");
    assert_eq!(ended(flock_waiter).await.code, 0);
    assert_eq!(ended(ferrolock_waiter).await.code, 0);
    ended(theirs).await;
    ended(ours).await;
}

// row: flock/conflict-exit-code
#[tokio::test]
async fn conflict_exit_code() {
    let s = Scene::new();
    let theirs = s.hold(s.flock(&[&s.file(), "sh", "-c", &s.holder("theirs")]), "theirs").await;
    let ours = s.hold(s.ferrolock(&["run", "job", "--", "sh", "-c", &s.holder("ours")]), "ours").await;
    assert_eq!(done(s.flock(&["-E", "9", "-n", &s.file(), "true"])).code, 9);
    assert_eq!(done(s.ferrolock(&["run", "-E", "9", "-n", "job", "--", "true"])).code, 9);
    assert_eq!(done(s.ferrolock(&["run", "--conflict-exit-code", "9", "--wait", "0", "job", "--", "true"])).code, 9);
    s.stop("theirs");
    s.stop("ours");
    ended(theirs).await;
    ended(ours).await;
}

// row: flock/command
#[tokio::test]
async fn shell_command() {
    let s = Scene::new();
    assert_eq!(done(s.flock(&[&s.file(), "-c", "test -n \"$0\" && exit 4"])).code, 4);
    assert_eq!(done(s.ferrolock(&["run", "job", "-c", "test -n \"$0\" && exit 4"])).code, 4);
    // -c before the file is a usage error for flock (64); `run NAME -c` and `run -c ... NAME` both work.
    assert_eq!(done(s.flock(&["-c", "exit 4", &s.file()])).code, 64);
    assert_eq!(done(s.ferrolock(&["run", "-c", "exit 4", "job"])).code, 4);
}

// row: flock/shared
#[tokio::test]
async fn shared() {
    let s = Scene::new();
    let theirs = s.hold(s.flock(&["-s", &s.file(), "sh", "-c", &s.holder("theirs")]), "theirs").await;
    let ours = s.hold(s.ferrolock(&["run", "--shared", "cfg", "--", "sh", "-c", &s.holder("ours")]), "ours").await;
    assert_eq!(done(s.flock(&["-s", "-n", &s.file(), "true"])).code, 0, "two readers at once");
    assert_eq!(done(s.ferrolock(&["run", "--shared", "-n", "cfg", "--", "true"])).code, 0, "two readers at once");
    s.stop("theirs");
    s.stop("ours");
    ended(theirs).await;
    ended(ours).await;
}

// row: flock/exclusive
#[tokio::test]
async fn exclusive() {
    let s = Scene::new();
    let theirs = s.hold(s.flock(&["-s", &s.file(), "sh", "-c", &s.holder("theirs")]), "theirs").await;
    let ours = s.hold(s.ferrolock(&["run", "--shared", "cfg", "--", "sh", "-c", &s.holder("ours")]), "ours").await;
    assert_eq!(done(s.flock(&["-x", "-n", &s.file(), "true"])).code, 1, "a reader keeps the writer out");
    assert_eq!(done(s.ferrolock(&["run", "--exclusive", "-n", "cfg", "--", "true"])).code, 1);
    // flock's default is -x, which a reader keeps out. ferrolock's plain run is another
    // kind of lock (Redisson's RLock) on the same hash: a reader keeps it out too...
    assert_eq!(done(s.flock(&["-n", &s.file(), "true"])).code, 1);
    assert_eq!(done(s.ferrolock(&["run", "-n", "cfg", "--", "true"])).code, 1);
    s.stop("theirs");
    s.stop("ours");
    ended(theirs).await;
    ended(ours).await;
    // ...but a plain run does not keep a reader out: the kinds must not be mixed on a name.
    let plain = s.hold(s.ferrolock(&["run", "cfg", "--", "sh", "-c", &s.holder("plain")]), "plain").await;
    assert_eq!(done(s.ferrolock(&["run", "--shared", "-n", "cfg", "--", "true"])).code, 0);
    s.stop("plain");
    ended(plain).await;
}

// row: flock/unlock
// row: flock/lost
#[tokio::test]
async fn unlock() {
    let s = Scene::new();
    // flock -u drops the caller's own lock on a descriptor.
    let script = format!("exec 9>{f}; flock 9; flock -u 9; flock -n {f} true", f = s.file());
    assert_eq!(done(Command::new("sh").args(["-c", &script])).code, 0);
    // ferrolock unlock --force breaks whoever holds it: that run's command gets SIGTERM, exit 75.
    let ours = s.hold(s.ferrolock(&["run", "job", "--", "sh", "-c", &s.holder("ours")]), "ours").await;
    let out = done(s.ferrolock(&["unlock", "--force", "job"]));
    assert_eq!(out.code, 0, "{out:?}");
    let holder = ended(ours).await;
    assert_eq!(holder.code, 75, "{holder:?}");
    assert!(!s.held("job"));
}

// row: flock/descriptor
#[tokio::test]
async fn script_locks_itself() {
    let s = Scene::new();
    let script = s.path("job.sh");
    std::fs::write(&script, format!("exec 9>{f}\nflock -n 9 || exit 1\necho inside\n", f = s.file())).unwrap();
    let theirs = s.hold(s.flock(&[&s.file(), "sh", "-c", &s.holder("theirs")]), "theirs").await;
    assert_eq!(done(Command::new("sh").arg(&script)).code, 1);
    s.stop("theirs");
    ended(theirs).await;
    assert_eq!(done(Command::new("sh").arg(&script)).stdout.trim(), "inside");
    let plain = s.path("plain.sh");
    std::fs::write(&plain, "echo inside\n").unwrap();
    let ours = s.hold(s.ferrolock(&["run", "job", "--", "sh", "-c", &s.holder("ours")]), "ours").await;
    assert_eq!(done(s.ferrolock(&["run", "job", "--wait", "0", "--", "sh", &plain])).code, 1);
    s.stop("ours");
    ended(ours).await;
    assert_eq!(done(s.ferrolock(&["run", "job", "--wait", "0", "--", "sh", &plain])).stdout.trim(), "inside");
}

// row: flock/close
#[tokio::test]
async fn no_descriptor_reaches_the_command() {
    let s = Scene::new();
    let fds = "ls -l /proc/$$/fd | grep -c -e job.lock -e socket || true";
    assert_eq!(done(s.flock(&[&s.file(), "sh", "-c", fds])).stdout.trim(), "1", "flock passes its lock file");
    assert_eq!(done(s.flock(&["-o", &s.file(), "sh", "-c", fds])).stdout.trim(), "0");
    assert_eq!(done(s.ferrolock(&["run", "job", "--", "sh", "-c", fds])).stdout.trim(), "0", "no Redis socket");
}

// row: flock/child-keeps-lock
#[tokio::test]
async fn background_child() {
    let s = Scene::new();
    // The command starts a child in the background and exits at once.
    let spawn = |tag: &str| format!("sh -c '{}' >/dev/null 2>&1 &", s.holder(tag));
    assert_eq!(done(s.flock(&[&s.file(), "sh", "-c", &spawn("theirs")])).code, 0);
    s.wait_for("theirs.ready").await;
    assert!(!s.flock_free(), "flock: the child inherited the descriptor, so the lock outlives the command");
    assert_eq!(done(s.ferrolock(&["run", "job", "--", "sh", "-c", &spawn("ours")])).code, 0);
    s.wait_for("ours.ready").await;
    assert!(alive(s.pid_of("ours")));
    assert!(!s.held("job"), "ferrolock: the lock ends with the command, not with its children");
    s.stop("theirs");
    s.stop("ours");
    eventually(Duration::from_secs(20), "the flock child to end", || {
        let free = s.flock_free();
        async move { free }
    })
    .await;
}

// row: flock/no-fork
#[tokio::test]
async fn no_fork() {
    let s = Scene::new();
    let theirs = s.flock(&["-F", &s.file(), "sh", "-c", "echo $$"]).stdout(Stdio::piped()).spawn().unwrap();
    let flock_pid = theirs.id();
    assert_eq!(ended(theirs).await.stdout.trim(), flock_pid.to_string(), "-F: the command is flock's process");
    let ours = s.ferrolock(&["run", "job", "--", "sh", "-c", "echo $$ $PPID"]).stdout(Stdio::piped()).spawn().unwrap();
    let ferrolock_pid = ours.id();
    let out = ended(ours).await.stdout;
    let pids: Vec<u32> = out.split_whitespace().map(|p| p.parse().unwrap()).collect();
    assert_ne!(pids[0], ferrolock_pid);
    assert_eq!(pids[1], ferrolock_pid, "ferrolock stays the command's parent");
}

// row: flock/verbose
#[tokio::test]
async fn verbose() {
    let s = Scene::new();
    let theirs = done(s.flock(&["--verbose", &s.file(), "true"]));
    assert!(theirs.stdout.contains("getting lock took"), "{theirs:?}");
    let quiet = done(s.ferrolock(&["run", "job", "--", "true"]));
    assert_eq!(quiet.stderr, "", "{quiet:?}");
    let logged = done(s.ferrolock(&["run", "job", "--", "true"]).env("RUST_LOG", "ferrolock=debug"));
    assert_eq!(logged.code, 0);
    assert!(!logged.stderr.is_empty(), "RUST_LOG makes it talk: {logged:?}");
}

// row: flock/process-death
#[tokio::test]
async fn killed_holder() {
    let s = Scene::new();
    let theirs = s.hold(s.flock(&[&s.file(), "sh", "-c", &s.holder("theirs")]), "theirs").await;
    let flock_pid = theirs.id();
    kill(flock_pid, "KILL");
    ended(theirs).await;
    assert!(!s.flock_free(), "flock killed: its command still holds the descriptor");
    s.stop("theirs");
    eventually(Duration::from_secs(20), "flock's command to end", || {
        let free = s.flock_free();
        async move { free }
    })
    .await;
    // ferrolock killed: the lock stays until its lease (here a 1 s watchdog lease) runs out.
    let ours = s.hold(s.ferrolock(&["run", "--watchdog", "1", "job", "--", "sh", "-c", &s.holder("ours")]), "ours").await;
    kill(ours.id(), "KILL");
    ended(ours).await;
    let killed = Instant::now();
    assert!(s.held("job"), "still held right after the kill");
    eventually(Duration::from_secs(10), "the lease to run out", || {
        let held = s.held("job");
        async move { !held }
    })
    .await;
    assert!(killed.elapsed() < Duration::from_secs(10));
    s.stop("ours");
}

// row: flock/signals
#[tokio::test]
async fn signals() {
    let s = Scene::new();
    let trap = |tag: &str| format!("trap 'echo term > {}; exit 0' TERM; {}", s.path(&format!("{tag}.term")), s.holder(tag));
    let theirs = s.hold(s.flock(&[&s.file(), "sh", "-c", &trap("theirs")]), "theirs").await;
    kill(theirs.id(), "TERM");
    let out = ended(theirs).await;
    assert_eq!(out.code, -1, "flock dies of the signal: {out:?}");
    assert!(!s.dir.join("theirs.term").exists(), "flock does not pass SIGTERM to its command");
    assert!(!s.flock_free(), "and the command still holds the lock");
    s.stop("theirs");
    let ours = s.hold(s.ferrolock(&["run", "job", "--", "sh", "-c", &trap("ours")]), "ours").await;
    kill(ours.id(), "TERM");
    let out = ended(ours).await;
    assert_eq!(out.code, 0, "the command's own status: {out:?}");
    assert!(s.dir.join("ours.term").exists(), "ferrolock passed SIGTERM to its command");
    assert!(!s.held("job"));
}

// row: flock/lslocks
#[tokio::test]
async fn who_holds() {
    let s = Scene::new();
    let theirs = s.hold(s.flock(&[&s.file(), "sh", "-c", &s.holder("theirs")]), "theirs").await;
    let listing = done(Command::new("lslocks").args(["-n", "-o", "PID,PATH"]));
    assert!(
        listing.stdout.lines().any(|l| l.contains(&s.file()) && l.trim().starts_with(&theirs.id().to_string())),
        "{listing:?}"
    );
    s.stop("theirs");
    ended(theirs).await;
    let ours = s.hold(s.ferrolock(&["run", "job", "--", "sh", "-c", &s.holder("ours")]), "ours").await;
    let status = done(s.ferrolock(&["status", "job", "--json"]));
    let json: serde_json::Value = serde_json::from_str(&status.stdout).unwrap();
    assert_eq!(json["holders"][0]["info"]["pid"], serde_json::json!(ours.id()), "{json}");
    s.stop("ours");
    ended(ours).await;
}

/// Every row of the page is named by a test above, and every name is a row.
#[test]
fn every_row_has_a_test() {
    let page = std::fs::read_to_string(repo_root().join("docs/site/migration/flock.md")).unwrap();
    let on_page: Vec<&str> = page.split("<!-- row: ").skip(1).filter_map(|r| r.split(" -->").next()).collect();
    let source = include_str!("migration_flock.rs");
    let named: Vec<&str> = source
        .lines()
        .filter_map(|l| l.strip_prefix("// row: "))
        .map(str::trim)
        .collect();
    let missing: Vec<_> = on_page.iter().filter(|r| !named.contains(r)).collect();
    let unknown: Vec<_> = named.iter().filter(|r| !on_page.contains(r)).collect();
    assert!(missing.is_empty(), "rows of flock.md without a test: {missing:?}");
    assert!(unknown.is_empty(), "tests name rows flock.md lacks: {unknown:?}");
    assert!(!on_page.is_empty());
}
