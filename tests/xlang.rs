//! Cross-language suite: workers in Rust, Python, Node and C (tests/workers, one
//! line protocol) and `ferrolock run` share lock names on one real redis-server;
//! the exclusion and wake-up checks run again behind Sentinel and on a Cluster.
//! The family (fair lock, read-write lock, semaphores, latch), on one server: the
//! limit of each primitive across the languages and the CLI, read from the logs'
//! intervals; wake-up by message across every ordered pair of languages (and the
//! CLI as a waiter); and the fair lock's order across languages and the CLI.
//! Build first: `bash scripts/build.sh` (scripts/test.sh does).

use std::collections::BTreeSet;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ferrolock_harness::{
    channel_of, eventually, keys, numsub, read_log, target_binary, Cluster, RedisServer, ScratchDir, SentinelSet, Worker,
    LANGUAGES,
};
use redis::aio::MultiplexedConnection;

/// Where a check runs: one server, a master behind Sentinel, or a Cluster.
enum Deployment {
    Single(RedisServer),
    Sentinel(SentinelSet),
    Cluster(Cluster),
}

impl Deployment {
    async fn single() -> Deployment {
        Deployment::Single(RedisServer::start())
    }

    async fn sentinel() -> Deployment {
        Deployment::Sentinel(SentinelSet::start().await)
    }

    async fn cluster() -> Deployment {
        Deployment::Cluster(Cluster::start().await)
    }

    fn url(&self) -> String {
        match self {
            Deployment::Single(server) => server.url(),
            Deployment::Sentinel(set) => set.url(),
            Deployment::Cluster(cluster) => cluster.url(),
        }
    }

    /// A raw connection to the node that serves lock `name` (every key of a lock is there).
    async fn raw_for(&self, name: &str) -> MultiplexedConnection {
        match self {
            Deployment::Single(server) => server.raw().await,
            Deployment::Sentinel(set) => set.raw_master().await,
            Deployment::Cluster(cluster) => cluster.raw(cluster.owner_of(name.as_bytes()).await).await,
        }
    }

    /// Subscribers of a lock channel on `raw` (sharded ones on a cluster).
    async fn subscribers(&self, raw: &mut MultiplexedConnection, channel: &str) -> i64 {
        match self {
            Deployment::Cluster(_) => {
                let (_, n): (String, i64) =
                    redis::cmd("PUBSUB").arg("SHARDNUMSUB").arg(channel).query_async(raw).await.unwrap();
                n
            }
            _ => numsub(raw, channel).await,
        }
    }

    async fn wait_for_subscribers(&self, raw: &mut MultiplexedConnection, channel: &str, n: i64) {
        eventually(Duration::from_secs(10), &format!("a waiter subscribed to {channel}"), || {
            let mut raw = raw.clone();
            async move { self.subscribers(&mut raw, channel).await >= n }
        })
        .await;
    }

    /// Until nobody is subscribed to `channel`: a client stays subscribed 100 ms after
    /// its last waiter left, so before a waiter starts, a count of at least one could
    /// still be the previous waiter's (and a release then would not test a wake-up).
    async fn wait_for_no_subscribers(&self, raw: &mut MultiplexedConnection, channel: &str) {
        eventually(Duration::from_secs(10), &format!("the previous waiter's subscription to {channel} to go"), || {
            let mut raw = raw.clone();
            async move { self.subscribers(&mut raw, channel).await == 0 }
        })
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_exclusion_across_languages() {
    exclusion(Deployment::single().await, 200).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_exclusion_across_languages_behind_sentinel() {
    exclusion(Deployment::sentinel().await, 40).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_exclusion_across_languages_on_a_cluster() {
    exclusion(Deployment::cluster().await, 40).await;
}

/// 5 languages x 2 processes x `PER_PROCESS` non-atomic increments of one counter file under one
/// fenced lock: the count is exact and the tokens follow the order of the critical sections.
async fn exclusion(deployment: Deployment, per_process: u64) {
    let dir = ScratchDir::new("xlang-exclusion").unwrap();
    let counter = dir.join("counter");
    let name = "xlang:exclusion";

    let mut workers = Vec::new();
    for lang in LANGUAGES {
        for i in 0..2 {
            workers.push((Worker::start(lang, &deployment.url(), 30_000), dir.join(format!("{lang}-{i}.log"))));
        }
    }
    // Two shell loops, each running `ferrolock run` once per increment.
    let cli_loops: Vec<Child> = (0..2)
        .map(|i| {
            let script = format!(
                "for i in $(seq {per_process}); do \"$FERROLOCK_BIN\" --url \"$URL\" run {name} --fenced -- \
                 sh -c 'n=$(cat \"$COUNTER\" 2>/dev/null); echo $(( ${{n:-0}} + 1 )) > \"$COUNTER\"; echo $FERROLOCK_TOKEN >> \"$TOKENS\"' \
                 || exit 1; done"
            );
            Command::new("sh")
                .arg("-c")
                .arg(script)
                .env("FERROLOCK_BIN", target_binary("ferrolock"))
                .env("URL", deployment.url())
                .env("COUNTER", &counter)
                .env("TOKENS", dir.join(format!("cli-{i}.tokens")))
                .spawn()
                .unwrap()
        })
        .collect();
    for (worker, log) in &mut workers {
        worker.send(&format!("count {name} {} {} {per_process} 0 0", counter.display(), log.display()));
    }
    for (worker, _) in &mut workers {
        assert_eq!(worker.reply(Duration::from_secs(120)), format!("ok {per_process}"), "{} worker", worker.lang);
    }
    for mut cli in cli_loops {
        assert!(cli.wait().unwrap().success(), "a `ferrolock run` loop failed");
    }

    let total: u64 = std::fs::read_to_string(&counter).unwrap().trim().parse().unwrap();
    assert_eq!(total, 5 * 2 * per_process, "lost updates: the lock let two sections overlap");

    // Fencing: in the order the sections ran, tokens strictly increase; no token twice.
    let mut sections = Vec::new();
    for (worker, log) in &workers {
        let entries = read_log(log);
        assert_eq!(entries.len() as u64, per_process, "{} log", worker.lang);
        sections.extend(entries);
    }
    sections.sort_by_key(|s| s.acquired_ns);
    for pair in sections.windows(2) {
        assert!(pair[0].token < pair[1].token, "tokens out of order: {:?} then {:?}", pair[0], pair[1]);
        assert!(pair[0].released_ns <= pair[1].acquired_ns, "sections overlap: {:?} and {:?}", pair[0], pair[1]);
    }
    let mut all_tokens: BTreeSet<u64> = sections.iter().map(|s| s.token).collect();
    for i in 0..2 {
        for line in std::fs::read_to_string(dir.join(format!("cli-{i}.tokens"))).unwrap().lines() {
            assert!(all_tokens.insert(line.parse().unwrap()), "token {line} handed out twice");
        }
    }
    assert_eq!(all_tokens.len() as u64, 5 * 2 * per_process);

    for (worker, _) in workers {
        worker.quit();
    }
    let mut raw = deployment.raw_for(name).await;
    assert_eq!(keys(&mut raw).await, vec![format!("redisson_lock_token:{{{name}}}")]);
    assert_eq!(deployment.subscribers(&mut raw, &channel_of(name)).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wake_up_across_languages() {
    wake_up(Deployment::single().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wake_up_across_languages_behind_sentinel() {
    wake_up(Deployment::sentinel().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wake_up_across_languages_on_a_cluster() {
    wake_up(Deployment::cluster().await).await;
}

/// For every ordered pair of languages: a waiter in one is woken by the release
/// message of a holder in the other, far sooner than the lock's PTTL (30 s).
async fn wake_up(deployment: Deployment) {
    let name = "xlang:wake";
    let url = deployment.url();
    let mut raw = deployment.raw_for(name).await;
    let mut workers: Vec<Worker> = LANGUAGES.iter().map(|lang| Worker::start(lang, &url, 30_000)).collect();
    let channel = channel_of(name);
    let mut slowest = Duration::ZERO;
    for h in 0..workers.len() {
        for w in 0..workers.len() {
            if h == w {
                continue;
            }
            assert_eq!(workers[h].call(&format!("acquire {name} plain")), "ok -");
            deployment.wait_for_no_subscribers(&mut raw, &channel).await;
            workers[w].send(&format!("acquire {name} plain"));
            deployment.wait_for_subscribers(&mut raw, &channel, 1).await;
            let released = Instant::now();
            assert_eq!(workers[h].call(&format!("release {name}")), "ok");
            let reply = workers[w].reply(Duration::from_secs(10));
            let woke = released.elapsed();
            assert_eq!(reply, "ok -", "{} waiter after {} released", workers[w].lang, workers[h].lang);
            let pttl: i64 = redis::cmd("PTTL").arg(name).query_async(&mut raw).await.unwrap();
            assert!(pttl > 25_000, "the waiter holds it with a fresh watchdog lease, PTTL {pttl}");
            assert!(
                woke < Duration::from_secs(2),
                "{} waiter took {woke:?} after {} released (PTTL was ~30 s: not woken by message?)",
                workers[w].lang,
                workers[h].lang
            );
            slowest = slowest.max(woke);
            assert_eq!(workers[w].call(&format!("release {name}")), "ok");
        }
    }
    eprintln!("slowest cross-language wake-up: {slowest:?}");

    // `ferrolock run` as waiter (woken by each language) and as holder (waking each).
    let dir = ScratchDir::new("xlang-wake-cli").unwrap();
    for worker in &mut workers {
        assert_eq!(worker.call(&format!("acquire {name} plain")), "ok -");
        let started = dir.join(format!("started-{}", worker.lang));
        deployment.wait_for_no_subscribers(&mut raw, &channel).await;
        let mut cli = cli_run(&url, name, &format!("touch '{}'", started.display()));
        deployment.wait_for_subscribers(&mut raw, &channel, 1).await;
        let released = Instant::now();
        assert_eq!(worker.call(&format!("release {name}")), "ok");
        assert!(cli.wait().unwrap().success());
        assert!(started.exists());
        assert!(released.elapsed() < Duration::from_secs(5), "ferrolock run woken after {:?}", released.elapsed());

        // CLI holds until its CMD reads a line; the worker waits.
        let mut cli = Command::new(target_binary("ferrolock"))
            .args(["--url", &url, "run", name, "--", "sh", "-c", "echo held; read line"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut out = std::io::BufReader::new(cli.stdout.take().unwrap());
        let mut line = String::new();
        std::io::BufRead::read_line(&mut out, &mut line).unwrap();
        assert_eq!(line, "held\n");
        deployment.wait_for_no_subscribers(&mut raw, &channel).await;
        worker.send(&format!("acquire {name} plain"));
        deployment.wait_for_subscribers(&mut raw, &channel, 1).await;
        let released = Instant::now();
        std::io::Write::write_all(cli.stdin.as_mut().unwrap(), b"go\n").unwrap();
        assert_eq!(worker.reply(Duration::from_secs(10)), "ok -", "{} waiter after ferrolock run", worker.lang);
        assert!(released.elapsed() < Duration::from_secs(5), "{} woken after {:?}", worker.lang, released.elapsed());
        assert!(cli.wait().unwrap().success());
        assert_eq!(worker.call(&format!("release {name}")), "ok");
    }
    for worker in workers {
        worker.quit();
    }
    assert_eq!(keys(&mut raw).await, Vec::<String>::new());
    assert_eq!(deployment.subscribers(&mut raw, &channel).await, 0);
}

/// A hold taken in one language cannot be released from any other (NOT_OWNER everywhere);
/// a force unlock from any language (and from the CLI) is reported as lost by the holder.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identity_and_force_unlock_across_languages() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    // A short watchdog lease: the holder's next renewal (every 0.5 s) finds the hold gone.
    let mut workers: Vec<Worker> = LANGUAGES.iter().map(|lang| Worker::start(lang, &server.url(), 1500)).collect();
    let name = "xlang:identity";
    for h in 0..workers.len() {
        assert_eq!(workers[h].call(&format!("acquire {name} plain")), "ok -");
        for o in 0..workers.len() {
            if o != h {
                let reply = workers[o].call(&format!("release {name}"));
                assert!(
                    reply.starts_with("err ERR_NOT_OWNER "),
                    "{} released {}'s hold: {reply}",
                    workers[o].lang,
                    workers[h].lang
                );
            }
        }
        let fields: Vec<String> = redis::cmd("HKEYS").arg(name).query_async(&mut raw).await.unwrap();
        assert_eq!(fields.len(), 1, "the hold is intact after the foreign releases");

        // Force unlock from the next language (the CLI for the last holder).
        let unlocked = Instant::now();
        let by = if h + 1 < workers.len() {
            let f = h + 1;
            assert_eq!(workers[f].call(&format!("force_unlock {name}")), "ok true");
            workers[f].lang.to_string()
        } else {
            let out = Command::new(target_binary("ferrolock"))
                .args(["--url", &server.url(), "unlock", "--force", name])
                .output()
                .unwrap();
            assert!(out.status.success(), "ferrolock unlock --force: {out:?}");
            "ferrolock unlock --force".to_string()
        };
        workers[h].send(&format!("lost {name}"));
        assert_eq!(workers[h].reply(Duration::from_secs(5)), "lost", "{} holder after force unlock by {by}", workers[h].lang);
        assert!(unlocked.elapsed() < Duration::from_secs(3), "loss reported after {:?}", unlocked.elapsed());
        let reply = workers[h].call(&format!("release {name}"));
        assert!(reply.starts_with("err ERR_LOCK_LOST "), "{} release after loss: {reply}", workers[h].lang);
    }
    for worker in workers {
        worker.quit();
    }
    assert_eq!(keys(&mut raw).await, Vec::<String>::new());
}

/// Fencing tokens strictly increase whichever language (or the CLI) acquires next.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fencing_tokens_increase_across_languages() {
    let server = RedisServer::start();
    let mut workers: Vec<Worker> = LANGUAGES.iter().map(|lang| Worker::start(lang, &server.url(), 30_000)).collect();
    let name = "xlang:fenced";
    let mut last = 0u64;
    for round in 0..3 {
        for worker in &mut workers {
            let reply = worker.call(&format!("acquire {name} fenced"));
            let token: u64 = reply.strip_prefix("ok ").and_then(|t| t.parse().ok()).unwrap_or_else(|| {
                panic!("{} fenced acquire: {reply}", worker.lang);
            });
            assert!(token > last, "round {round}: {} got token {token} after {last}", worker.lang);
            last = token;
            assert_eq!(worker.call(&format!("release {name}")), "ok");
        }
        let out = Command::new(target_binary("ferrolock"))
            .args(["--url", &server.url(), "run", name, "--fenced", "--", "sh", "-c", "echo $FERROLOCK_TOKEN"])
            .output()
            .unwrap();
        assert!(out.status.success());
        let token: u64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
        assert!(token > last, "ferrolock run got token {token} after {last}");
        last = token;
    }
    for worker in workers {
        worker.quit();
    }
}

fn cli_run(url: &str, name: &str, script: &str) -> Child {
    Command::new(target_binary("ferrolock")).args(["--url", url, "run", name, "--", "sh", "-c", script]).spawn().unwrap()
}

// ---- The family (issue 17): every primitive across the four languages and the CLI ----


/// One primitive's limit check: what each worker process counts with (its `count`
/// KIND, by process index within its language), what each `ferrolock run` loop runs
/// with (its options, by loop index), and how many sections may overlap.
struct LimitCase {
    name: &'static str,
    worker_kinds: [&'static str; 2],
    cli_options: [&'static [&'static str]; 2],
    /// At most this many sections at once (a writer always alone: see `writer_kind`).
    limit: usize,
    /// Sections of this kind overlap no other section (the write side).
    writer_kind: Option<&'static str>,
    /// The sections are exclusive: the shared counter is exact.
    exclusive: bool,
}

/// A section in a log, with what took it (the worker's KIND, or the CLI loop's options).
#[derive(Debug, Clone)]
struct Timed {
    by: String,
    kind: &'static str,
    from: u64,
    to: u64,
}

/// The most sections inside at any one moment (T1..T2 intervals, from the logs).
fn most_at_once(sections: &[Timed]) -> usize {
    let mut events: Vec<(u64, i32)> = sections.iter().flat_map(|s| [(s.from, 1), (s.to, -1)]).collect();
    // At one instant, a leaving section is counted out before an arriving one.
    events.sort();
    let (mut inside, mut most) = (0i32, 0i32);
    for (_, delta) in events {
        inside += delta;
        most = most.max(inside);
    }
    most as usize
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_of_every_primitive_across_languages_and_the_cli() {
    let cases = [
        LimitCase {
            name: "xlang:limit:fair",
            worker_kinds: ["fair", "fair"],
            cli_options: [&["--fair"], &["--fair"]],
            limit: 1,
            writer_kind: None,
            exclusive: true,
        },
        LimitCase {
            name: "xlang:limit:write",
            worker_kinds: ["write", "write"],
            cli_options: [&["--exclusive"], &["--exclusive"]],
            limit: 1,
            writer_kind: None,
            exclusive: true,
        },
        LimitCase {
            name: "xlang:limit:rw",
            worker_kinds: ["read", "write"],
            cli_options: [&["--shared"], &["--exclusive"]],
            limit: usize::MAX,
            writer_kind: Some("write"),
            exclusive: false,
        },
        LimitCase {
            name: "xlang:limit:sem",
            worker_kinds: ["sem:3", "sem:3"],
            cli_options: [&["--semaphore", "3"], &["--semaphore", "3"]],
            limit: 3,
            writer_kind: None,
            exclusive: false,
        },
    ];
    let server = RedisServer::start();
    let url = server.url();
    let mut workers: Vec<Worker> = Vec::new();
    for lang in LANGUAGES {
        for _ in 0..2 {
            workers.push(Worker::start(lang, &url, 30_000));
        }
    }
    for case in &cases {
        limit(&server, &mut workers, case, 25, 8).await;
    }
    for worker in workers {
        worker.quit();
    }
}

/// Every worker process runs `per_process` sections of `case`, two `ferrolock run` loops
/// `per_cli` each, all at once; then the logs say how many were inside together.
async fn limit(server: &RedisServer, workers: &mut [Worker], case: &LimitCase, per_process: u64, per_cli: u64) {
    let dir = ScratchDir::new("xlang-limit").unwrap();
    let name = case.name;
    let shared_counter = dir.join("counter");
    // Counters only mean something under exclusion; elsewhere each process has its own.
    let counter_of = |who: &str| if case.exclusive { shared_counter.clone() } else { dir.join(format!("counter-{who}")) };
    // The CLI's sections are timed by CMD itself (CLOCK_MONOTONIC, like the workers'
    // logs): inside the hold, so an overlap seen there is an overlap of holds.
    let section = "import sys, time\n\
                   t1 = time.monotonic_ns()\n\
                   counter, log = sys.argv[1], sys.argv[2]\n\
                   try:\n    n = int(open(counter).read().strip() or 0)\n\
                   except FileNotFoundError:\n    n = 0\n\
                   open(counter, 'w').write(str(n + 1))\n\
                   time.sleep(0.002)\n\
                   t2 = time.monotonic_ns()\n\
                   with open(log, 'a') as f:\n    f.write(f'0 {t1} {t1} {t2}\\n')\n";
    let cli_loops: Vec<Child> = (0..2)
        .map(|i| {
            let options = case.cli_options[i].join(" ");
            let script = format!(
                "for i in $(seq {per_cli}); do \"$FERROLOCK_BIN\" --url \"$URL\" run {name} {options} -- \
                 python3 -c \"$SECTION\" \"$COUNTER\" \"$LOG\" || exit 1; done"
            );
            Command::new("sh")
                .arg("-c")
                .arg(script)
                .env("FERROLOCK_BIN", target_binary("ferrolock"))
                .env("URL", server.url())
                .env("SECTION", section)
                .env("COUNTER", counter_of(&format!("cli-{i}")))
                .env("LOG", dir.join(format!("cli-{i}.log")))
                .spawn()
                .unwrap()
        })
        .collect();
    let hold_us = 2000;
    for (i, worker) in workers.iter_mut().enumerate() {
        let kind = case.worker_kinds[i % 2];
        let (counter, log) = (counter_of(&format!("w{i}")), dir.join(format!("w{i}.log")));
        worker.send(&format!("count {name} {} {} {per_process} 0 {hold_us} {kind}", counter.display(), log.display()));
    }
    for worker in workers.iter_mut() {
        assert_eq!(worker.reply(Duration::from_secs(180)), format!("ok {per_process}"), "{name}: {} worker", worker.lang);
    }
    for mut cli in cli_loops {
        assert!(cli.wait().unwrap().success(), "{name}: a `ferrolock run` loop failed");
    }

    let mut sections: Vec<Timed> = Vec::new();
    for (i, worker) in workers.iter().enumerate() {
        let entries = read_log(&dir.join(format!("w{i}.log")));
        assert_eq!(entries.len() as u64, per_process, "{name}: {} log", worker.lang);
        let (by, kind) = (format!("{} worker {i}", worker.lang), case.worker_kinds[i % 2]);
        sections.extend(entries.iter().map(|s| Timed { by: by.clone(), kind, from: s.acquired_ns, to: s.released_ns }));
    }
    for i in 0..2 {
        let entries = read_log(&dir.join(format!("cli-{i}.log")));
        assert_eq!(entries.len() as u64, per_cli, "{name}: ferrolock run loop {i}");
        // The CLI loops mirror the workers' kinds: loop i runs what worker processes i % 2 run.
        let (by, kind) = (format!("ferrolock run {}", case.cli_options[i].join(" ")), case.worker_kinds[i]);
        sections.extend(entries.iter().map(|s| Timed { by: by.clone(), kind, from: s.acquired_ns, to: s.released_ns }));
    }
    let total = workers.len() as u64 * per_process + 2 * per_cli;
    assert_eq!(sections.len() as u64, total);

    let most = most_at_once(&sections);
    assert!(most <= case.limit, "{name}: {most} sections inside at once, more than {}", case.limit);
    if let Some(writer) = case.writer_kind {
        for w in sections.iter().filter(|s| s.kind == writer) {
            let other = sections.iter().find(|s| !std::ptr::eq(*s, w) && s.from < w.to && w.from < s.to);
            assert!(other.is_none(), "{name}: a writer ({}) overlapped {:?}", w.by, other);
        }
    }
    if case.exclusive {
        let counted: u64 = std::fs::read_to_string(&shared_counter).unwrap().trim().parse().unwrap();
        assert_eq!(counted, total, "{name}: lost updates: two sections overlapped");
    }
    eprintln!("{name}: {total} sections, at most {most} inside at once");

    // Nothing held or waiting afterwards; a semaphore has its permits back.
    let mut raw = server.raw().await;
    match name {
        "xlang:limit:sem" => {
            let free: String = redis::cmd("GET").arg(name).query_async(&mut raw).await.unwrap();
            assert_eq!(free, "3", "{name}: every permit is back");
            let _: () = redis::cmd("DEL").arg(name).query_async(&mut raw).await.unwrap();
        }
        _ => {
            let exists: bool = redis::cmd("EXISTS").arg(name).query_async(&mut raw).await.unwrap();
            assert!(!exists, "{name} is still held");
        }
    }
    assert_eq!(lasting_keys(&mut raw).await, Vec::<String>::new(), "{name}: keys left behind");
}

/// Every key but the reply latches of recent calls, which go by themselves (checked:
/// each has a TTL).
async fn lasting_keys(raw: &mut MultiplexedConnection) -> Vec<String> {
    let mut lasting = Vec::new();
    for key in keys(raw).await {
        if key.starts_with("redisson_unlock_latch:") || key.starts_with("ferrolock_reply:") {
            // -2: removed since KEYS listed it (the client removes them once answered).
            let pttl: i64 = redis::cmd("PTTL").arg(&key).query_async(raw).await.unwrap();
            assert!(pttl != -1, "reply latch {key} has no TTL");
        } else {
            lasting.push(key);
        }
    }
    lasting
}

/// One primitive's wake-up: `hold` makes the holder take it, `wait` is the waiter's
/// command (sent, not answered until woken), `channel` the one the waiter
/// subscribes to, `give` the holder's command that wakes it and `after` the
/// waiter's clean-up; `woken` is the waiter's expected reply (a prefix). Every
/// ordered pair of languages, then the CLI as the waiter of each language.
struct WakeCase {
    what: &'static str,
    setup: &'static [&'static str],
    hold: &'static str,
    wait: &'static str,
    channel: &'static str,
    give: &'static str,
    woken: &'static str,
    after: &'static str,
    /// The CLI as a waiter, woken by each language (None: the CLI has no such command).
    cli_wait: Option<&'static [&'static str]>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wake_up_of_every_primitive_across_languages() {
    let cases = [
        WakeCase {
            what: "fair lock",
            setup: &[],
            hold: "acquire xw:fair fair",
            wait: "acquire xw:fair fair",
            // Each fair waiter listens on a channel of its own: the queue says it is there.
            channel: "",
            give: "release xw:fair fair",
            woken: "ok -",
            after: "release xw:fair fair",
            cli_wait: Some(&["run", "xw:fair", "--fair", "--", "true"]),
        },
        WakeCase {
            what: "read-write lock (write release -> read waiter)",
            setup: &[],
            hold: "acquire xw:rw write",
            wait: "acquire xw:rw read",
            channel: "redisson_rwlock:{xw:rw}",
            give: "release xw:rw write",
            woken: "ok -",
            after: "release xw:rw read",
            cli_wait: Some(&["run", "xw:rw", "--shared", "--", "true"]),
        },
        WakeCase {
            what: "semaphore",
            setup: &["sem_set xw:sem 1"],
            hold: "sem_acquire xw:sem 1",
            wait: "sem_acquire xw:sem 1",
            channel: "redisson_sc:{xw:sem}",
            give: "sem_release xw:sem 1",
            woken: "ok",
            after: "sem_release xw:sem 1",
            cli_wait: Some(&["run", "xw:sem", "--semaphore", "1", "--", "true"]),
        },
        WakeCase {
            what: "permit-expirable semaphore",
            setup: &["permit_set xw:permits 1"],
            hold: "permit_acquire xw:permits",
            wait: "permit_acquire xw:permits",
            channel: "redisson_sc:{xw:permits}",
            give: "permit_release xw:permits ID",
            woken: "ok ",
            after: "permit_release xw:permits ID",
            cli_wait: None,
        },
        WakeCase {
            what: "count-down latch",
            setup: &[],
            hold: "latch_set xw:latch 1",
            wait: "latch_wait xw:latch",
            channel: "redisson_countdownlatch__channel__{xw:latch}",
            give: "latch_down xw:latch",
            woken: "ok open",
            after: "",
            cli_wait: Some(&["latch", "xw:latch", "--wait"]),
        },
    ];
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    let mut workers: Vec<Worker> = LANGUAGES.iter().map(|lang| Worker::start(lang, &server.url(), 30_000)).collect();
    for case in &cases {
        for setup in case.setup {
            assert_eq!(workers[0].call(setup), "ok true", "{}: {setup}", case.what);
        }
        let mut slowest = Duration::ZERO;
        for h in 0..workers.len() {
            for w in 0..workers.len() {
                if h == w {
                    continue;
                }
                let pair = format!("{}: {} waiter, {} holder", case.what, workers[w].lang, workers[h].lang);
                let held = workers[h].call(case.hold);
                assert!(held.starts_with("ok"), "{pair}: {} -> {held}", case.hold);
                // The holder's permit id, for releasing it by id.
                let held_id = held.strip_prefix("ok ").unwrap_or("").to_string();
                wait_for_no_subscriber(&mut raw, case.channel).await;
                workers[w].send(case.wait);
                if case.channel.is_empty() {
                    wait_for_fair_waiters(&mut raw, "xw:fair", 1).await;
                } else {
                    wait_for_subscriber(&mut raw, case.channel).await;
                }
                let given = Instant::now();
                let reply = workers[h].call(&case.give.replace("ID", &held_id));
                assert!(reply.starts_with("ok"), "{pair}: {} -> {reply}", case.give);
                let woken = workers[w].reply(Duration::from_secs(10));
                let took = given.elapsed();
                assert!(woken.starts_with(case.woken), "{pair}: {woken}");
                assert!(took < Duration::from_secs(2), "{pair}: woken after {took:?} (not by message?)");
                slowest = slowest.max(took);
                if !case.after.is_empty() {
                    let waiter_id = woken.strip_prefix("ok ").unwrap_or("");
                    let reply = workers[w].call(&case.after.replace("ID", waiter_id));
                    assert!(reply.starts_with("ok"), "{pair}: {} -> {reply}", case.after);
                }
            }
        }
        // `ferrolock run` / `ferrolock latch` waiting, woken by each language.
        for holder in workers.iter_mut() {
            let Some(args) = case.cli_wait else { break };
            let held = holder.call(case.hold);
            assert!(held.starts_with("ok"), "{}: {} -> {held}", case.what, case.hold);
            let held_id = held.strip_prefix("ok ").unwrap_or("").to_string();
            wait_for_no_subscriber(&mut raw, case.channel).await;
            let mut cli =
                Command::new(target_binary("ferrolock")).args(["--url", &server.url()]).args(args).stdout(Stdio::null()).spawn().unwrap();
            if case.channel.is_empty() {
                wait_for_fair_waiters(&mut raw, "xw:fair", 1).await;
            } else {
                wait_for_subscriber(&mut raw, case.channel).await;
            }
            let given = Instant::now();
            let reply = holder.call(&case.give.replace("ID", &held_id));
            assert!(reply.starts_with("ok"), "{}: {} -> {reply}", case.what, case.give);
            let status = cli.wait().unwrap();
            let took = given.elapsed();
            assert!(status.success(), "{}: ferrolock {args:?} after {} gave: {status}", case.what, holder.lang);
            assert!(took < Duration::from_secs(5), "{}: ferrolock woken after {took:?} by {}", case.what, holder.lang);
        }
        eprintln!("{}: slowest cross-language wake-up {slowest:?}", case.what);
    }
    for worker in workers {
        worker.quit();
    }
    // What is left is what the primitives keep between uses: the semaphores' permits.
    assert_eq!(lasting_keys(&mut raw).await, vec!["xw:permits".to_string(), "xw:sem".to_string()]);
}

/// Until nobody is subscribed to `channel` ("": to any fair waiter's own channel of
/// "xw:fair"): a client stays subscribed 100 ms after its last waiter left, so before
/// the next waiter starts, a subscriber could still be the previous waiter (or this
/// one's previous wait), and the check after it would not show the new waiter there.
async fn wait_for_no_subscriber(raw: &mut MultiplexedConnection, channel: &str) {
    let pattern = if channel.is_empty() { format!("{}:*", channel_of("xw:fair")) } else { channel.to_string() };
    wait_for_no_channel(raw, &pattern).await;
}

/// Until no channel matching `pattern` (PUBSUB CHANNELS's glob) has a subscriber.
async fn wait_for_no_channel(raw: &mut MultiplexedConnection, pattern: &str) {
    eventually(Duration::from_secs(10), &format!("no subscriber left on {pattern}"), || {
        let mut raw = raw.clone();
        async move {
            let channels: Vec<String> = redis::cmd("PUBSUB").arg("CHANNELS").arg(pattern).query_async(&mut raw).await.unwrap();
            channels.is_empty()
        }
    })
    .await;
}

async fn wait_for_subscriber(raw: &mut MultiplexedConnection, channel: &str) {
    eventually(Duration::from_secs(10), &format!("a waiter subscribed to {channel}"), || {
        let mut raw = raw.clone();
        async move { numsub(&mut raw, channel).await >= 1 }
    })
    .await;
}

/// Waits until `n` waiters are in the fair lock's queue, each subscribed to its own channel.
async fn wait_for_fair_waiters(raw: &mut MultiplexedConnection, name: &str, n: usize) {
    eventually(Duration::from_secs(10), &format!("{n} waiters queued on the fair lock {name}"), || {
        let mut raw = raw.clone();
        async move {
            let queue: Vec<String> =
                redis::cmd("LRANGE").arg(format!("redisson_lock_queue:{{{name}}}")).arg(0).arg(-1).query_async(&mut raw).await.unwrap();
            let mut subscribed = 0;
            for owner in &queue {
                subscribed += numsub(&mut raw, &format!("{}:{owner}", channel_of(name))).await.min(1) as usize;
            }
            queue.len() == n && subscribed == n
        }
    })
    .await;
}

/// Waiters queued one after another on a fair lock, from every language and the
/// CLI, get it in that order; twice, the second time in the reverse order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fair_lock_order_across_languages_and_the_cli() {
    let server = RedisServer::start();
    let url = server.url();
    let mut raw = server.raw().await;
    let name = "xlang:fifo";
    let mut holder = Worker::start("rust", &url, 30_000);
    let mut workers: Vec<Worker> = LANGUAGES.iter().map(|lang| Worker::start(lang, &url, 30_000)).collect();
    for round in 0..2 {
        assert_eq!(holder.call(&format!("acquire {name} fair")), "ok -");
        // A waiter of round 0 stays subscribed to its own channel 100 ms after it got the
        // lock: wait_for_fair_waiters would count it subscribed before it is, in round 1.
        wait_for_no_channel(&mut raw, &format!("{}:*", channel_of(name))).await;
        // Worker indexes, and None for the CLI, in the order they queue up.
        let mut order: Vec<Option<usize>> = (0..workers.len()).map(Some).collect();
        order.insert(order.len() / 2, None);
        if round == 1 {
            order.reverse();
        }
        let mut cli: Option<(Child, std::io::BufReader<std::process::ChildStdout>)> = None;
        for (queued, who) in order.iter().enumerate() {
            match who {
                Some(i) => workers[*i].send(&format!("acquire {name} fair")),
                None => {
                    let mut child = Command::new(target_binary("ferrolock"))
                        .args(["--url", &url, "run", name, "--fair", "--", "sh", "-c", "echo held; read line"])
                        .stdin(Stdio::piped())
                        .stdout(Stdio::piped())
                        .spawn()
                        .unwrap();
                    let out = std::io::BufReader::new(child.stdout.take().unwrap());
                    cli = Some((child, out));
                }
            }
            wait_for_fair_waiters(&mut raw, name, queued + 1).await;
        }
        assert_eq!(holder.call(&format!("release {name}")), "ok");
        for (k, who) in order.iter().enumerate() {
            let shown = match who {
                Some(i) => workers[*i].lang.to_string(),
                None => "ferrolock run --fair".to_string(),
            };
            // The k-th waiter gets it now; none after it has it yet.
            match who {
                Some(i) => assert_eq!(workers[*i].reply(Duration::from_secs(10)), "ok -", "round {round}: waiter {k} ({shown})"),
                None => {
                    let (_, out) = cli.as_mut().unwrap();
                    let mut line = String::new();
                    std::io::BufRead::read_line(out, &mut line).unwrap();
                    assert_eq!(line, "held\n", "round {round}: waiter {k} ({shown})");
                }
            }
            for later in order[k + 1..].iter().flatten() {
                let early = workers[*later].try_reply(Duration::ZERO);
                assert!(early.is_err(), "round {round}: {} got it before {shown}: {early:?}", workers[*later].lang);
            }
            match who {
                Some(i) => assert_eq!(workers[*i].call(&format!("release {name}")), "ok"),
                None => {
                    let (mut child, _) = cli.take().unwrap();
                    std::io::Write::write_all(child.stdin.as_mut().unwrap(), b"go\n").unwrap();
                    assert!(child.wait().unwrap().success());
                }
            }
        }
    }
    holder.quit();
    for worker in workers {
        worker.quit();
    }
    assert_eq!(lasting_keys(&mut raw).await, Vec::<String>::new());
}

// ---- Who holds it (issue 31): holder notes from every client, waiters that name the holder ----

/// A Python worker, a Node worker, a C worker and a `ferrolock run` each hold a lock
/// while a waiter in another language times out on it: every waiter's result names
/// the holder (app, host, pid, thread or command) and logged the slow-wait line
/// first; `ferrolock status` and `ferrolock top --once` show all four notes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_name_the_holder_across_languages_and_the_cli() {
    let server = RedisServer::start();
    let url = server.url();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap().trim().to_string();
    // Notes at the holders' first watchdog look (every 250 ms with a 3 s watchdog).
    let holder_env = |app: &'static str| [("FERROLOCK_WORKER_APP", app), ("FERROLOCK_WORKER_NOTE_AFTER_MS", "0")];
    let mut holders: Vec<Worker> = ["python", "node", "c"]
        .into_iter()
        .map(|lang| Worker::start_with_env(lang, &url, 3000, &holder_env(app_of(lang))))
        .collect();
    for holder in &mut holders {
        let name = format!("xlang:who:{}", holder.lang);
        assert_eq!(holder.call(&format!("label {name} holder-{}", holder.lang)), "ok");
        assert_eq!(holder.call(&format!("acquire {name} plain")), "ok -", "{}", holder.lang);
    }
    let dir = ScratchDir::new("xlang-who").unwrap();
    let (ready, stop) = (dir.join("ready"), dir.join("stop"));
    let script = format!("echo ready > {}; while [ ! -e {} ]; do sleep 0.05; done", ready.display(), stop.display());
    let mut cli = Command::new(target_binary("ferrolock"))
        .args(["--url", &url, "--app-name", "app-cli", "run", "xlang:who:cli", "--", "sh", "-c", &script])
        .spawn()
        .unwrap();
    eventually(Duration::from_secs(30), "the ferrolock run to hold", || async { ready.exists() }).await;

    let client = ferrolock::Client::connect(url.as_str()).await.unwrap();
    let holder_langs = ["python", "node", "c", "cli"];
    for lang in holder_langs {
        let lock = client.lock(format!("xlang:who:{lang}")).unwrap();
        eventually(Duration::from_secs(20), &format!("the {lang} holder's note"), || async {
            lock.status().await.unwrap().holders.first().is_some_and(|h| h.note.is_some())
        })
        .await;
    }

    // Each waiter in another language: a 2 s wait that logs after 300 ms, then times out.
    let waiter_env = [("FERROLOCK_WORKER_SLOW_WAIT_MS", "300")];
    let pairs = [("rust", "python"), ("python", "node"), ("node", "c"), ("c", "cli")];
    let mut waiters: Vec<Worker> = pairs.iter().map(|(lang, _)| Worker::start_with_env(lang, &url, 3000, &waiter_env)).collect();
    for (waiter, (_, held_by)) in waiters.iter_mut().zip(pairs) {
        waiter.send(&format!("acquire xlang:who:{held_by} plain 2000"));
    }
    let pid_of = |lang: &str| match lang {
        "cli" => cli.id(),
        _ => holders.iter().find(|h| h.lang == lang).unwrap().pid,
    };
    for (waiter, (lang, held_by)) in waiters.iter_mut().zip(pairs) {
        assert_eq!(waiter.reply(Duration::from_secs(30)), "timeout", "{lang} waiting on {held_by}");
        let name = format!("xlang:who:{held_by}");
        let who = format!("{} on {host} pid {}", app_of(held_by), pid_of(held_by));
        let thread = match held_by {
            "cli" => format!(": sh -c '{script}'"),
            // C adds the OS thread id to its label.
            lang => format!("(thread holder-{lang}"),
        };
        let reply = waiter.call(&format!("holder {name}"));
        assert!(reply.starts_with(&format!("ok {who}")) && reply.contains(&thread), "{lang} waiter's holder of {held_by}: {reply}");
        let line = waiter.call(&format!("waitlog {name}"));
        // The latest line: after 300 ms, 600 ms or 1.2 s of waiting.
        assert!(line.starts_with("ok waiting ") && line.contains(&format!(" for lock \"{name}\": held by {who}")), "{lang} waiter's log: {line}");
        assert!(line.contains(&thread), "{lang} waiter's log: {line}");
    }
    // The CLI as a waiter: its --wait runs out and it says who was in the way.
    let out = Command::new(target_binary("ferrolock"))
        .args(["--url", &url, "run", "--wait", "0.5", "xlang:who:python", "--", "true"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let python = format!("held by app-python on {host} pid {} (thread holder-python) for ", pid_of("python"));
    assert!(stderr.contains(&python) && stderr.contains("not acquired within 0.5 s"), "{stderr}");

    // Operators see all four.
    for lang in holder_langs {
        let out = Command::new(target_binary("ferrolock")).args(["--url", &url, "status", &format!("xlang:who:{lang}")]).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains(&format!("{} on {host} pid {}", app_of(lang), pid_of(lang))), "status of {lang}: {stdout}");
    }
    let out = Command::new(target_binary("ferrolock")).args(["--url", &url, "top", "xlang:who:", "--once"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    for lang in holder_langs {
        assert!(stdout.contains(&format!("{} on {host} pid {}", app_of(lang), pid_of(lang))), "top shows {lang}'s holder: {stdout}");
    }

    std::fs::write(&stop, "").unwrap();
    assert!(cli.wait().unwrap().success());
    for worker in holders.into_iter().chain(waiters) {
        worker.quit();
    }
    client.shutdown().await.unwrap();
}

fn app_of(lang: &str) -> &'static str {
    match lang {
        "python" => "app-python",
        "node" => "app-node",
        "c" => "app-c",
        _ => "app-cli",
    }
}
