//! Measurements shared by the benchmark programs (bench.rs, topology_bench.rs).
#![allow(dead_code)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ferrolock::Lock;

pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

pub fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

pub async fn script_calls(conn: &mut redis::aio::MultiplexedConnection) -> u64 {
    let info: String = redis::cmd("INFO").arg("commandstats").query_async(conn).await.unwrap();
    info.lines()
        .filter(|l| l.starts_with("cmdstat_evalsha:") || l.starts_with("cmdstat_eval:"))
        .filter_map(|l| l.split("calls=").nth(1)?.split(',').next()?.parse::<u64>().ok())
        .sum()
}

/// redis-server's CPU seconds so far (user + system, all its threads).
pub async fn server_cpu(conn: &mut redis::aio::MultiplexedConnection) -> f64 {
    let info: String = redis::cmd("INFO").arg("cpu").query_async(conn).await.unwrap();
    let field = |name: &str| -> f64 {
        info.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(':')?.trim().parse().ok()).unwrap_or(0.0)
    };
    field("used_cpu_user") + field("used_cpu_sys")
}

/// This process's CPU seconds so far (user + system, all threads); Linux only.
pub fn process_cpu() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (in parentheses, which may hold spaces): utime and stime are 14 and 15.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0) // USER_HZ is 100 on Linux
}

/// PING round-trip p50 on `raw` and the acquire+release cycle p50 of `lock` (after a
/// warm-up), in rounds that take turns: this VM's speed drifts within seconds, so a
/// PING measured once before all the cycles is compared with a different machine.
/// Answers the round whose cycle / PING ratio is the median. (Medians on both sides: a
/// mean cycle against a median PING counted every scheduling hiccup against the cycle.)
pub async fn uncontended(raw: &mut redis::aio::MultiplexedConnection, lock: &Lock) -> (Duration, Duration) {
    let round = rounds(raw, lock, None, None).await;
    (round.rtt, round.cycle)
}

/// One round of [`uncontended_with_floor`]: p50s.
#[derive(Debug, Clone, Copy)]
pub struct Round {
    pub rtt: Duration,
    pub cycle: Duration,
    /// Core's own acquire and release scripts sent on `raw` by redis-rs alone (keys and
    /// arguments as core sends them): the protocol's floor with redis-rs's overhead.
    pub floor: Option<Duration>,
    /// A PING and the same two scripts on a bare socket (write the request, read the
    /// reply line; no client can do less): the least any client of this protocol can reach.
    pub bare_rtt: Option<Duration>,
    pub bare_cycle: Option<Duration>,
}

/// [`uncontended`] with the floors of [`Round`] measured in the same rounds, the bare
/// one against the server of `url` (plain `redis://host:port`).
pub async fn uncontended_with_floor(raw: &mut redis::aio::MultiplexedConnection, lock: &Lock, floor_name: &str, url: &str) -> Round {
    let bare = Bare::connect(url, &format!("{floor_name}:bare")).await;
    rounds(raw, lock, Some(floor_name), Some(bare)).await
}

fn p50(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    percentile(&samples, 0.5)
}

async fn rounds(raw: &mut redis::aio::MultiplexedConnection, lock: &Lock, floor_name: Option<&str>, mut bare: Option<Bare>) -> Round {
    const ROUNDS: usize = 9;
    const PER_ROUND: usize = 600;
    let mut floor = floor_name.map(Floor::new);
    for _ in 0..500 {
        lock.acquire().await.unwrap().release().await.unwrap();
        let _: String = redis::cmd("PING").query_async(raw).await.unwrap();
        if let Some(floor) = floor.as_mut() {
            floor.cycle(raw).await;
        }
        if let Some(bare) = bare.as_mut() {
            bare.ping().await;
            bare.cycle().await;
        }
    }
    // Each sample timed alone, so that p50s compare with the PING's.
    let mut rounds = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let (mut pings, mut cycles) = (Vec::with_capacity(PER_ROUND), Vec::with_capacity(PER_ROUND));
        for _ in 0..PER_ROUND {
            let t = Instant::now();
            let _: String = redis::cmd("PING").query_async(raw).await.unwrap();
            pings.push(t.elapsed());
        }
        for _ in 0..PER_ROUND {
            let t = Instant::now();
            lock.acquire().await.unwrap().release().await.unwrap();
            cycles.push(t.elapsed());
        }
        let mut round = Round { rtt: p50(pings), cycle: p50(cycles), floor: None, bare_rtt: None, bare_cycle: None };
        if let Some(floor) = floor.as_mut() {
            let mut samples = Vec::with_capacity(PER_ROUND);
            for _ in 0..PER_ROUND {
                let t = Instant::now();
                floor.cycle(raw).await;
                samples.push(t.elapsed());
            }
            round.floor = Some(p50(samples));
            floor.delete_latches(raw).await;
        }
        if let Some(bare) = bare.as_mut() {
            let (mut pings, mut cycles) = (Vec::with_capacity(PER_ROUND), Vec::with_capacity(PER_ROUND));
            for _ in 0..PER_ROUND {
                let t = Instant::now();
                bare.ping().await;
                pings.push(t.elapsed());
                let t = Instant::now();
                bare.cycle().await;
                cycles.push(t.elapsed());
            }
            round.bare_rtt = Some(p50(pings));
            round.bare_cycle = Some(p50(cycles));
            bare.delete_latches().await;
        }
        rounds.push(round);
    }
    rounds.sort_by(|a, b| (a.cycle.as_secs_f64() / a.rtt.as_secs_f64()).total_cmp(&(b.cycle.as_secs_f64() / b.rtt.as_secs_f64())));
    rounds[ROUNDS / 2]
}

const ACQUIRE_LUA: &str = include_str!("../../src/scripts/lock/acquire.lua");
const RELEASE_LUA: &str = include_str!("../../src/scripts/lock/release.lua");
const FLOOR_OWNER: &str = "00000000-0000-4000-8000-000000000000:1";

/// Core's RLock scripts driven by hand (see [`Round::floor`]).
struct Floor {
    acquire: redis::Script,
    release: redis::Script,
    name: String,
    channel: String,
    requests: u64,
    latches: Vec<String>,
}

impl Floor {
    fn new(name: &str) -> Floor {
        Floor {
            acquire: redis::Script::new(ACQUIRE_LUA),
            release: redis::Script::new(RELEASE_LUA),
            name: name.to_string(),
            channel: format!("redisson_lock__channel:{{{name}}}"),
            requests: 0,
            latches: Vec::new(),
        }
    }

    async fn cycle(&mut self, raw: &mut redis::aio::MultiplexedConnection) {
        let count: i64 = self.acquire.key(&self.name).arg(30_000).arg(FLOOR_OWNER).invoke_async(raw).await.unwrap();
        assert_eq!(count, 1, "the floor's lock {} is not free", self.name);
        self.requests += 1;
        let latch = format!("redisson_unlock_latch:{{{}}}:{}:{}", self.name, FLOOR_OWNER, self.requests);
        let released: i64 = self
            .release
            .key(&self.name)
            .key(&self.channel)
            .key(&latch)
            .arg(FLOOR_OWNER)
            .arg(30_000)
            .arg("publish")
            .arg(5_000)
            .arg(1)
            .invoke_async(raw)
            .await
            .unwrap();
        assert_eq!(released, 1);
        self.latches.push(latch);
    }

    /// Core deletes its latches in the background; here between rounds, untimed.
    async fn delete_latches(&mut self, raw: &mut redis::aio::MultiplexedConnection) {
        if !self.latches.is_empty() {
            let _: i64 = redis::cmd("UNLINK").arg(&self.latches).query_async(raw).await.unwrap();
            self.latches.clear();
        }
    }
}

/// The same scripts on a bare socket (see [`Round::bare_cycle`]): requests written as
/// bytes, replies read as one line each (every reply here is one line).
struct Bare {
    socket: tokio::net::TcpStream,
    floor: Floor,
    acquire_sha: String,
    release_sha: String,
    buf: Vec<u8>,
}

impl Bare {
    async fn connect(url: &str, name: &str) -> Bare {
        let client = redis::Client::open(url).unwrap();
        let redis::ConnectionAddr::Tcp(host, port) = client.get_connection_info().addr().clone() else {
            panic!("the bare floor needs a redis://host:port URL")
        };
        // The scripts are loaded by redis-rs; the bare socket only calls them.
        let mut conn = client.get_multiplexed_async_connection().await.unwrap();
        let floor = Floor::new(name);
        floor.acquire.load_async(&mut conn).await.unwrap();
        floor.release.load_async(&mut conn).await.unwrap();
        let socket = tokio::net::TcpStream::connect((host.as_str(), port)).await.unwrap();
        socket.set_nodelay(true).unwrap();
        let (acquire_sha, release_sha) = (floor.acquire.get_hash().to_string(), floor.release.get_hash().to_string());
        Bare { socket, floor, acquire_sha, release_sha, buf: Vec::with_capacity(64) }
    }

    async fn request(&mut self, args: &[&[u8]]) -> Vec<u8> {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for arg in args {
            out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
            out.extend_from_slice(arg);
            out.extend_from_slice(b"\r\n");
        }
        self.socket.write_all(&out).await.unwrap();
        self.buf.clear();
        while !self.buf.ends_with(b"\r\n") {
            let mut chunk = [0u8; 64];
            let n = self.socket.read(&mut chunk).await.unwrap();
            assert!(n > 0, "the server closed the bare floor's connection");
            self.buf.extend_from_slice(&chunk[..n]);
        }
        self.buf.clone()
    }

    async fn ping(&mut self) {
        assert_eq!(self.request(&[b"PING"]).await, b"+PONG\r\n");
    }

    async fn cycle(&mut self) {
        let f = &mut self.floor;
        f.requests += 1;
        let (name, channel) = (f.name.clone(), f.channel.clone());
        let latch = format!("redisson_unlock_latch:{{{}}}:{}:{}", name, FLOOR_OWNER, f.requests);
        f.latches.push(latch.clone());
        let (acquire_sha, release_sha) = (self.acquire_sha.clone(), self.release_sha.clone());
        let got = self.request(&[b"EVALSHA", acquire_sha.as_bytes(), b"1", name.as_bytes(), b"30000", FLOOR_OWNER.as_bytes()]).await;
        assert_eq!(got, b":1\r\n", "the bare floor's lock {name} is not free");
        let args: [&[u8]; 11] = [
            b"EVALSHA", release_sha.as_bytes(), b"3", name.as_bytes(), channel.as_bytes(), latch.as_bytes(),
            FLOOR_OWNER.as_bytes(), b"30000", b"publish", b"5000", b"1",
        ];
        assert_eq!(self.request(&args).await, b":1\r\n");
    }

    async fn delete_latches(&mut self) {
        let latches = std::mem::take(&mut self.floor.latches);
        if !latches.is_empty() {
            let mut args: Vec<&[u8]> = vec![b"UNLINK"];
            args.extend(latches.iter().map(|l| l.as_bytes()));
            self.request(&args).await;
        }
    }
}

/// 8 holders x 200 critical sections of 1 ms on `locks`: efficiency, hand-off
/// times, script calls per section (counted on `raw`, the lock's server), lost updates.
pub async fn contended(raw: &mut redis::aio::MultiplexedConnection, locks: &[Lock], clients: usize) {
    const SECTIONS: usize = 200;
    let last_release: Arc<Mutex<Option<Instant>>> = Arc::new(Mutex::new(None));
    let handoffs = Arc::new(Mutex::new(Vec::new()));
    let waits = Arc::new(Mutex::new(Vec::new()));
    let held_time = Arc::new(Mutex::new(Duration::ZERO));
    let counter = Arc::new(Mutex::new((0u64, 0u64))); // (value seen, lost updates)
    let before = script_calls(raw).await;
    let start = Instant::now();
    let tasks: Vec<_> = locks
        .iter()
        .cloned()
        .map(|lock| {
            let (last_release, handoffs, waits, held_time, counter) =
                (last_release.clone(), handoffs.clone(), waits.clone(), held_time.clone(), counter.clone());
            tokio::spawn(async move {
                for _ in 0..SECTIONS {
                    let asked = Instant::now();
                    let guard = lock.acquire().await.unwrap();
                    let got = Instant::now();
                    waits.lock().unwrap().push(got - asked);
                    if let Some(released) = last_release.lock().unwrap().take() {
                        handoffs.lock().unwrap().push(got.saturating_duration_since(released));
                    }
                    // Non-atomic increment: a lost update would show as a mismatch.
                    let seen = counter.lock().unwrap().0;
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    {
                        let mut c = counter.lock().unwrap();
                        if c.0 != seen {
                            c.1 += 1;
                        }
                        c.0 = seen + 1;
                    }
                    *held_time.lock().unwrap() += got.elapsed();
                    *last_release.lock().unwrap() = Some(Instant::now());
                    guard.release().await.unwrap();
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let wall = start.elapsed();
    let calls = script_calls(raw).await - before;
    let mut h = handoffs.lock().unwrap().clone();
    h.sort();
    let longest = waits.lock().unwrap().iter().max().copied().unwrap_or_default();
    let sections = (locks.len() * SECTIONS) as f64;
    let (count, lost) = *counter.lock().unwrap();
    println!("== 8 holders x {SECTIONS} critical sections of 1 ms, {clients} client(s)");
    println!("efficiency (held / wall)        {:.3}   (target >= 0.9)", held_time.lock().unwrap().as_secs_f64() / wall.as_secs_f64());
    println!("hand-off p50 / p99              {} / {}   (target p50 <= 0.3 ms, p99 <= 2 ms)", ms(percentile(&h, 0.5)), ms(percentile(&h, 0.99)));
    println!("longest single wait             {}", ms(longest));
    println!("script calls per section        {:.2}{}", calls as f64 / sections, if clients == 1 { "   (target <= 3)" } else { "" });
    println!("count {count}, lost updates {lost}");
    // On one server only: the floor's keys are not placed for a cluster's slots.
    let info: String = redis::cmd("INFO").arg("cluster").query_async(raw).await.unwrap();
    if clients > 1 && !info.contains("cluster_enabled:1") {
        let (efficiency, p50) = contended_floor(raw, clients).await;
        println!(
            "protocol floor                  efficiency {efficiency:.3}, hand-off p50 {}: the same sections with our scripts sent by redis-rs alone, {clients} connections each with its own subscription (every release wakes each waiting one: Redisson's rule)",
            ms(p50)
        );
    }
}

/// [`contended`]'s sections with core's RLock scripts driven by hand, one connection
/// and one subscription per holder (each its own client): what any client of this
/// protocol reaches on this machine across clients, beside ours.
async fn contended_floor(raw: &mut redis::aio::MultiplexedConnection, holders: usize) -> (f64, Duration) {
    const SECTIONS: usize = 200;
    const NAME: &str = "bench:contended:floor";
    let info: String = redis::cmd("CLIENT").arg("INFO").query_async(raw).await.unwrap();
    let server = info.split_whitespace().find_map(|f| f.strip_prefix("laddr=")).expect("CLIENT INFO names the server's address").to_string();
    let client = redis::Client::open(format!("redis://{server}")).unwrap();
    let channel = format!("redisson_lock__channel:{{{NAME}}}");
    let (acquire, release) = (redis::Script::new(ACQUIRE_LUA), redis::Script::new(RELEASE_LUA));
    let last_release: Arc<Mutex<Option<Instant>>> = Arc::default();
    let handoffs: Arc<Mutex<Vec<Duration>>> = Arc::default();
    let held: Arc<Mutex<Duration>> = Arc::default();
    let mut tasks = Vec::new();
    let start = Instant::now();
    for i in 0..holders {
        let (mut conn, mut messages) = subscribed(&client, &channel).await;
        let (acquire, release, channel) = (acquire.clone(), release.clone(), channel.clone());
        let (last_release, handoffs, held) = (last_release.clone(), handoffs.clone(), held.clone());
        tasks.push(tokio::spawn(async move {
            let owner = format!("00000000-0000-4000-8000-{i:012}:1");
            for section in 0..SECTIONS {
                loop {
                    let reply: redis::Value = acquire.key(NAME).arg(30_000).arg(&owner).invoke_async(&mut conn).await.unwrap();
                    if matches!(reply, redis::Value::Int(_)) {
                        break;
                    }
                    woken(&mut messages, Duration::from_secs(30)).await;
                }
                let got = Instant::now();
                if let Some(released) = last_release.lock().unwrap().take() {
                    handoffs.lock().unwrap().push(got.saturating_duration_since(released));
                }
                tokio::time::sleep(Duration::from_millis(1)).await;
                *held.lock().unwrap() += got.elapsed();
                *last_release.lock().unwrap() = Some(Instant::now());
                floor_release(&mut conn, &release, &[NAME, &channel], &owner, section).await;
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let wall = start.elapsed();
    let mut h = handoffs.lock().unwrap().clone();
    h.sort();
    let held = *held.lock().unwrap();
    (held.as_secs_f64() / wall.as_secs_f64(), percentile(&h, 0.5))
}

/// A floor's own connection for its scripts and its subscription to `channel`, as
/// each client of the protocol has.
pub async fn subscribed(client: &redis::Client, channel: &str) -> (redis::aio::MultiplexedConnection, impl futures_util::Stream<Item = redis::Msg> + Unpin + Send) {
    let conn = client.get_multiplexed_async_connection().await.unwrap();
    let mut pubsub = client.get_async_pubsub().await.unwrap();
    pubsub.subscribe(channel).await.unwrap();
    (conn, pubsub.into_on_message())
}

/// A floor's release by `owner` of one level, its `section`-th: `script` is a release
/// script whose keys are `keys` (the lock's name first) then the unlock latch.
pub async fn floor_release(conn: &mut redis::aio::MultiplexedConnection, script: &redis::Script, keys: &[&str], owner: &str, section: usize) {
    let latch = format!("redisson_unlock_latch:{{{}}}:{owner}:{section}", keys[0]);
    let mut call = script.prepare_invoke();
    for key in keys {
        call.key(*key);
    }
    let released: i64 = call.key(&latch).arg(owner).arg(30_000).arg("publish").arg(5_000).arg(1).invoke_async(conn).await.unwrap();
    assert_eq!(released, 1);
}

/// A floor's waiter after a failed try: messages that came while it held or tried
/// wake it once, as a client's wake flag does; else the next one, or `at_most` (the
/// wait the script answered).
pub async fn woken(messages: &mut (impl futures_util::Stream<Item = redis::Msg> + Unpin), at_most: Duration) {
    use futures_util::{FutureExt, StreamExt};
    let mut stale = false;
    while let Some(Some(_)) = messages.next().now_or_never() {
        stale = true;
    }
    if !stale {
        let _ = tokio::time::timeout(at_most, messages.next()).await;
    }
}

/// Runs each op in its own task, in a loop, for `window`; returns ops per second.
pub async fn run_for<Op, Fut>(window: Duration, ops: Vec<Op>) -> f64
where
    Op: FnMut() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = u64> + Send,
{
    let start = Instant::now();
    let stop = start + window;
    let tasks: Vec<_> = ops
        .into_iter()
        .map(|mut op| {
            tokio::spawn(async move {
                let mut n = 0;
                while Instant::now() < stop {
                    n += op().await;
                }
                n
            })
        })
        .collect();
    let mut total = 0;
    for t in tasks {
        total += t.await.unwrap();
    }
    total as f64 / start.elapsed().as_secs_f64()
}
