//! `ferrolock` over several independent masters (several `--url`, or comma-separated
//! URLs in `REDIS_URL`): `run` takes a Redlock (a majority) or with `--all` a
//! MultiLock (every master), one client per URL; `status` shows each server; a master
//! down counts against the quorum. Against three redis-servers started here. The
//! commands run under the lock are sh scripts that write files: the tests
//! synchronise on those files and on Redis state, never on sleeps.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use ferrolock_harness::{eventually, finish, keys, Finished, RedisServer, ScratchDir};


/// `ferrolock ARGS` with no inherited REDIS_URL or Sentinel password.
fn ferrolock(args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ferrolock"));
    cmd.args(args)
        .env_remove("REDIS_URL")
        .env_remove("FERROLOCK_SENTINEL_PASSWORD")
        .stdin(Stdio::null());
    cmd
}


/// `--url U` for each server's URL.
fn url_args(urls: &[String]) -> Vec<String> {
    urls.iter().flat_map(|u| ["--url".to_string(), u.clone()]).collect()
}

fn start_three() -> Vec<RedisServer> {
    (0..3).map(|_| RedisServer::start()).collect()
}

/// Whether key `name` exists on `server`.
async fn has_key(server: &RedisServer, name: &str) -> bool {
    let mut conn = server.raw().await;
    keys(&mut conn).await.iter().any(|k| k == name)
}

/// On how many of `servers` (the running ones) key `name` exists.
async fn held_on(servers: &[RedisServer], name: &str) -> usize {
    let mut n = 0;
    for server in servers.iter().filter(|s| s.is_running()) {
        if has_key(server, name).await {
            n += 1;
        }
    }
    n
}

/// A holder: `ferrolock ARGS run OPTIONS NAME -- sh -c '<write ready; wait for stop>'`.
struct Holder {
    child: Option<Child>,
    dir: ScratchDir,
}

impl Holder {
    fn start(connection: &[String], options: &[&str], name: &str) -> Holder {
        let dir = ScratchDir::new("cli-redlock").unwrap();
        let script = format!(
            "echo ready > {ready}\n\
             i=0\n\
             while [ ! -e {stop} ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done\n",
            ready = dir.join("ready").display(),
            stop = dir.join("stop").display(),
        );
        let mut cmd = ferrolock(&[]);
        cmd.args(connection).arg("run").args(options).args([name, "--", "sh", "-c", &script]);
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        Holder { child: Some(cmd.spawn().unwrap()), dir }
    }

    async fn wait_ready(&mut self) {
        let ready = self.dir.join("ready");
        let mut exited = None;
        eventually(Duration::from_secs(15), "the command under the lock to start", || {
            let done = ready.exists() || {
                exited = self.child.as_mut().unwrap().try_wait().unwrap();
                exited.is_some()
            };
            async move { done }
        })
        .await;
        assert!(exited.is_none(), "the holder exited before its command ran: {exited:?}");
    }

    fn stop(mut self) -> Finished {
        std::fs::write(self.dir.join("stop"), "").unwrap();
        self.child.take().unwrap().wait_with_output().unwrap().into()
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = std::fs::write(self.dir.join("stop"), "");
    }
}

#[tokio::test]
async fn a_redlock_over_three_masters_holds_on_each_and_excludes_a_second_run() {
    let servers = start_three();
    let urls: Vec<String> = servers.iter().map(RedisServer::url).collect();
    let mut holder = Holder::start(&url_args(&urls), &[], "jobs");
    holder.wait_ready().await;
    // All three answer, so it holds on all three (at least the majority).
    assert_eq!(held_on(&servers, "jobs").await, 3);

    // A second run, the URLs comma-separated in REDIS_URL: busy, exit 1, CMD not run.
    let scratch = ScratchDir::new("cli-redlock-second").unwrap();
    let ran = scratch.join("ran");
    let touch = format!("touch {}", ran.display());
    let out = finish(ferrolock(&["run", "--wait", "0", "jobs", "--", "sh", "-c", &touch]).env("REDIS_URL", urls.join(",")));
    assert_eq!(out.code, 1, "{out:?}");
    assert!(!ran.exists(), "the second run ran its command: {out:?}");
    // --url before and after the subcommand add up (all three servers, so busy too).
    let out = finish(&mut ferrolock(&["--url", &urls[0], "run", "-n", "--url", &urls[1], "--url", &urls[2], "jobs", "--", "sh", "-c", &touch]));
    assert_eq!(out.code, 1, "{out:?}");
    assert!(!ran.exists(), "{out:?}");
    // A plain lock on one of the servers is busy as well.
    let out = finish(&mut ferrolock(&["--url", &urls[1], "run", "-n", "jobs", "--", "sh", "-c", &touch]));
    assert_eq!(out.code, 1, "{out:?}");

    // status lists each server.
    let out = finish(ferrolock(&["status", "jobs"]).env("REDIS_URL", urls.join(",")));
    assert_eq!(out.code, 0, "{out:?}");
    for url in &urls {
        assert!(out.stdout.contains(&format!("server:     {url}\n")), "status lacks {url}: {out:?}");
    }
    assert_eq!(out.stdout.matches("state:      held").count(), 3, "{out:?}");
    assert!(out.stdout.contains("held on 3"), "{out:?}");
    let mut args = url_args(&urls);
    args.extend(["status".into(), "jobs".into(), "--json".into()]);
    let out = finish(&mut ferrolock(&args.iter().map(String::as_str).collect::<Vec<_>>()));
    assert_eq!(out.code, 0, "{out:?}");
    let json: serde_json::Value = serde_json::from_str(out.stdout.trim()).unwrap();
    assert_eq!(json["locked_on"], 3, "{out:?}");
    let listed: Vec<&str> = json["servers"].as_array().unwrap().iter().map(|s| s["url"].as_str().unwrap()).collect();
    assert_eq!(listed, urls.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(json["servers"].as_array().unwrap().iter().all(|s| s["locked"] == true), "{out:?}");

    let out = holder.stop();
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stderr.is_empty(), "{out:?}");
    assert_eq!(held_on(&servers, "jobs").await, 0);

    // Free again: the next run gets it.
    let out = finish(ferrolock(&["run", "-n", "jobs", "--", "sh", "-c", &touch]).env("REDIS_URL", urls.join(",")));
    assert_eq!(out.code, 0, "{out:?}");
    assert!(ran.exists(), "{out:?}");
}

#[tokio::test]
async fn one_master_down_still_runs_two_down_exit_69() {
    let mut servers = start_three();
    let urls: Vec<String> = servers.iter().map(RedisServer::url).collect();
    servers[0].kill();
    let scratch = ScratchDir::new("cli-redlock-down").unwrap();
    let ran = scratch.join("ran");

    // 1 of 3 down: the majority (2) is held on the other two while CMD runs.
    let mut holder = Holder::start(&url_args(&urls), &[], "jobs");
    holder.wait_ready().await;
    assert_eq!(held_on(&servers, "jobs").await, 2);
    let out = holder.stop();
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stderr.contains("warning") && out.stderr.contains(&urls[0]), "{out:?}");
    assert_eq!(held_on(&servers, "jobs").await, 0);

    // --all needs every master: with one down it fails at once, nothing held.
    let touch = format!("touch {}", ran.display());
    let mut args = url_args(&urls);
    args.extend(["run".into(), "--all".into(), "jobs".into(), "--".into(), "sh".into(), "-c".into(), touch.clone()]);
    let out = finish(&mut ferrolock(&args.iter().map(String::as_str).collect::<Vec<_>>()));
    assert_eq!(out.code, 69, "{out:?}");
    assert!(out.stderr.contains("--all") && out.stderr.contains(&urls[0]), "{out:?}");
    assert!(!ran.exists(), "{out:?}");
    assert_eq!(held_on(&servers, "jobs").await, 0);

    // 2 of 3 down (one of them with a password in its URL): exit 69, CMD not run,
    // nothing left on the live one, the password not shown.
    servers[2].kill();
    let secret_url = urls[2].replace("redis://", "redis://:s3cret-pw@");
    let list = format!("{},{},{}", urls[0], urls[1], secret_url);
    let started = std::time::Instant::now();
    let out = finish(ferrolock(&["run", "--wait", "10", "jobs", "--", "sh", "-c", &touch]).env("REDIS_URL", &list));
    assert_eq!(out.code, 69, "{out:?}");
    assert!(started.elapsed() < Duration::from_secs(8), "took {:?}", started.elapsed());
    assert!(!ran.exists(), "{out:?}");
    assert!(out.stderr.starts_with("ferrolock: ") && out.stderr.contains("needs 2"), "{out:?}");
    assert!(out.stderr.contains(&urls[0]) && out.stderr.contains(":***@127.0.0.1"), "{out:?}");
    assert!(!out.stderr.contains("s3cret"), "{out:?}");
    assert!(!has_key(&servers[1], "jobs").await);

    // status: each server, the dead ones with their error (masked), exit 69.
    let out = finish(ferrolock(&["status", "jobs"]).env("REDIS_URL", &list));
    assert_eq!(out.code, 69, "{out:?}");
    assert!(out.stdout.contains(&format!("server:     {}\n", urls[1])), "{out:?}");
    assert!(out.stdout.contains("state:      free"), "{out:?}");
    assert_eq!(out.stdout.matches("error:").count(), 2, "{out:?}");
    assert!(out.stdout.contains(":***@127.0.0.1") && !out.stdout.contains("s3cret") && !out.stderr.contains("s3cret"), "{out:?}");
}

#[test]
fn several_urls_usage_errors_exit_2() {
    // No server needed: usage errors come before any connection.
    let urls = ["redis://127.0.0.1:1".to_string(), "redis://127.0.0.1:2".to_string()];
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec!["run".into(), "--fenced".into(), "x".into(), "--".into(), "true".into()], "--fenced"),
        (vec!["run".into(), "--all".into(), "--fenced".into(), "x".into(), "--".into(), "true".into()], "--fenced"),
    ];
    for (args, mentions) in cases {
        let mut all = url_args(&urls);
        all.extend(args);
        let out = finish(&mut ferrolock(&all.iter().map(String::as_str).collect::<Vec<_>>()));
        assert_eq!(out.code, 2, "{all:?}: {out:?}");
        assert!(out.stderr.starts_with("ferrolock: ") && out.stderr.contains(mentions), "{all:?}: {out:?}");
    }
    // A URL given twice would count twice towards the quorum.
    let out = finish(ferrolock(&["status", "x"]).env("REDIS_URL", "redis://:s3cret@127.0.0.1:1,redis://:s3cret@127.0.0.1:1"));
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("twice") && !out.stderr.contains("s3cret"), "{out:?}");
    // The help says how.
    let out = finish(&mut ferrolock(&["run", "--help"]));
    assert!(out.stdout.contains("--all") && out.stdout.contains("Redlock") && out.stdout.contains("persistence"), "{out:?}");
}

/// A `ferrolock run` holding a Redlock over 5 masters keeps another Redlock out;
/// killed with SIGKILL (no release), its hold ends with its lease and the other
/// gets the lock then — not before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_holder_keeps_the_redlock_until_its_lease_ends() {
    use ferrolock::{AcquireOptions, Client, Lock, Quorum};
    let servers: Vec<RedisServer> = (0..5).map(|_| RedisServer::start()).collect();
    let urls: Vec<String> = servers.iter().map(RedisServer::url).collect();
    let mut holder = Holder::start(&url_args(&urls), &["--watchdog", "2"], "rl:killed");
    holder.wait_ready().await;
    assert!(held_on(&servers, "rl:killed").await >= 3);
    let mut members = Vec::new();
    for url in &urls {
        members.push(Client::connect(url.clone()).await.unwrap().lock("rl:killed").unwrap());
    }
    let other = Lock::multi(members, Quorum::Majority).unwrap();
    assert!(other.try_acquire().await.unwrap().is_none(), "no majority while the holder runs");
    let mut child = holder.child.take().unwrap();
    child.kill().unwrap(); // SIGKILL: no release, no watchdog from here on
    child.wait().unwrap();
    let killed = std::time::Instant::now();
    let guard = other.acquire_with(AcquireOptions::wait(Duration::from_secs(20))).await.unwrap();
    let waited = killed.elapsed();
    assert!(guard.is_some(), "acquired once the killed holder's lease ran out");
    // The lease was 2 s, renewed every 0.67 s: at least ~1.3 s of it was left.
    assert!(waited >= Duration::from_millis(1_000), "not before the lease ended: {waited:?}");
    guard.unwrap().release().await.unwrap();
}

/// `status --check` over several masters: 0 when held on a majority, 1 when enough are
/// free that no majority can hold it, the error's code when the answers cannot tell.
#[tokio::test]
async fn status_check_over_three_masters_needs_a_majority_either_way() {
    let mut servers = start_three();
    let urls: Vec<String> = servers.iter().map(RedisServer::url).collect();
    let check = || finish(ferrolock(&["status", "checked", "--check"]).env("REDIS_URL", urls.join(",")));
    assert_eq!(check().code, 1, "{:?}", check());

    let mut holder = Holder::start(&url_args(&urls), &[], "checked");
    holder.wait_ready().await;
    let out = check();
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("held on 3"), "{out:?}");
    // Each server shows who holds it there: the ferrolock run, its pid and command.
    let pid = holder.child.as_ref().unwrap().id();
    assert_eq!(out.stdout.matches(&format!(" pid {pid} for ")).count(), 3, "{out:?}");
    assert_eq!(out.stdout.matches(": sh -c 'echo ready > ").count(), 3, "{out:?}");
    assert_eq!(holder.stop().code, 0);
    for server in &servers {
        let mut conn = server.raw().await;
        let left: Vec<String> = keys(&mut conn).await.into_iter().filter(|k| k.starts_with("ferrolock_holder_info:")).collect();
        assert!(left.is_empty(), "the release removes the info on each server: {left:?}");
    }
    assert_eq!(check().code, 1);

    // Held on one server (a hash as Redisson writes it), free on one, one down: a
    // Redlock may or may not hold it, so the unreachable server's code decides.
    let mut conn = servers[1].raw().await;
    let _: () = redis::cmd("HSET").arg("checked").arg("someone:1").arg(1).query_async(&mut conn).await.unwrap();
    servers[0].kill();
    let out = check();
    assert_eq!(out.code, 69, "{out:?}");
    // Held on the two that answer: held, whatever the third would say.
    let mut conn = servers[2].raw().await;
    let _: () = redis::cmd("HSET").arg("checked").arg("someone:1").arg(1).query_async(&mut conn).await.unwrap();
    let out = check();
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stderr.contains("cannot connect"), "the unreachable server is still reported: {out:?}");
}
