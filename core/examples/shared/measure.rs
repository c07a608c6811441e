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

/// PING round-trip p50 on `raw` and the mean acquire+release cycle of `lock`
/// (after a warm-up), in rounds that take turns: this VM's speed drifts within
/// seconds, so a PING measured once before all the cycles is compared with a
/// different machine. Answers the round whose cycle / PING ratio is the median.
pub async fn uncontended(raw: &mut redis::aio::MultiplexedConnection, lock: &Lock) -> (Duration, Duration) {
    let (rtt, cycle, _) = rounds(raw, lock, None).await;
    (rtt, cycle)
}

/// The same, with a third turn per round: the protocol's floor, core's own acquire and
/// release scripts sent on `raw` by redis-rs alone (keys and arguments as core sends
/// them, on a lock named `floor_name`), the cycle no client of this protocol can beat
/// by more than its own overhead.
pub async fn uncontended_with_floor(
    raw: &mut redis::aio::MultiplexedConnection,
    lock: &Lock,
    floor_name: &str,
) -> (Duration, Duration, Duration) {
    let (rtt, cycle, floor) = rounds(raw, lock, Some(floor_name)).await;
    (rtt, cycle, floor.unwrap())
}

async fn rounds(
    raw: &mut redis::aio::MultiplexedConnection,
    lock: &Lock,
    floor_name: Option<&str>,
) -> (Duration, Duration, Option<Duration>) {
    const ROUNDS: usize = 9;
    const PER_ROUND: u32 = 600;
    let mut floor = floor_name.map(Floor::new);
    for _ in 0..500 {
        lock.acquire().await.unwrap().release().await.unwrap();
        let _: String = redis::cmd("PING").query_async(raw).await.unwrap();
        if let Some(floor) = floor.as_mut() {
            floor.cycle(raw).await;
        }
    }
    let mut rounds = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let mut pings = Vec::with_capacity(PER_ROUND as usize);
        for _ in 0..PER_ROUND {
            let t = Instant::now();
            let _: String = redis::cmd("PING").query_async(raw).await.unwrap();
            pings.push(t.elapsed());
        }
        pings.sort();
        let t = Instant::now();
        for _ in 0..PER_ROUND {
            lock.acquire().await.unwrap().release().await.unwrap();
        }
        let cycle = t.elapsed() / PER_ROUND;
        let mut floor_cycle = None;
        if let Some(floor) = floor.as_mut() {
            let t = Instant::now();
            for _ in 0..PER_ROUND {
                floor.cycle(raw).await;
            }
            floor_cycle = Some(t.elapsed() / PER_ROUND);
            floor.delete_latches(raw).await;
        }
        rounds.push((percentile(&pings, 0.5), cycle, floor_cycle));
    }
    rounds.sort_by(|a, b| (a.1.as_secs_f64() / a.0.as_secs_f64()).total_cmp(&(b.1.as_secs_f64() / b.0.as_secs_f64())));
    rounds[ROUNDS / 2]
}

/// Core's RLock scripts driven by hand (see `uncontended_with_floor`).
struct Floor {
    acquire: redis::Script,
    release: redis::Script,
    name: String,
    channel: String,
    owner: String,
    requests: u64,
    latches: Vec<String>,
}

impl Floor {
    fn new(name: &str) -> Floor {
        Floor {
            acquire: redis::Script::new(include_str!("../../src/scripts/lock/acquire.lua")),
            release: redis::Script::new(include_str!("../../src/scripts/lock/release.lua")),
            name: name.to_string(),
            channel: format!("redisson_lock__channel:{{{name}}}"),
            owner: "00000000-0000-4000-8000-000000000000:1".to_string(),
            requests: 0,
            latches: Vec::new(),
        }
    }

    async fn cycle(&mut self, raw: &mut redis::aio::MultiplexedConnection) {
        let count: i64 = self.acquire.key(&self.name).arg(30_000).arg(&self.owner).invoke_async(raw).await.unwrap();
        assert_eq!(count, 1, "the floor's lock {} is not free", self.name);
        self.requests += 1;
        let latch = format!("redisson_unlock_latch:{{{}}}:{}:{}", self.name, self.owner, self.requests);
        let released: i64 = self
            .release
            .key(&self.name)
            .key(&self.channel)
            .key(&latch)
            .arg(&self.owner)
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
