//! Cross-language suite: workers in Rust, Python, Node and C (tests/workers, one
//! line protocol) and `ferrolock run` share lock names on one real redis-server;
//! the exclusion and wake-up checks run again behind Sentinel and on a Cluster.
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
