//! ferrolock's benchmark: every figure is a ratio against the same run's Redis
//! round-trip, measured on one server in one run.
//!
//! cargo run --release -p ferrolock --example bench -- --url URL [--seconds N]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ferrolock::{Client, Lock};

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

async fn script_calls(conn: &mut redis::aio::MultiplexedConnection) -> u64 {
    let info: String = redis::cmd("INFO").arg("commandstats").query_async(conn).await.unwrap();
    info.lines()
        .filter(|l| l.starts_with("cmdstat_evalsha:") || l.starts_with("cmdstat_eval:"))
        .filter_map(|l| l.split("calls=").nth(1)?.split(',').next()?.parse::<u64>().ok())
        .sum()
}

#[tokio::main]
async fn main() {
    let mut url = String::new();
    let mut seconds = 5u64;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--url" => url = args.next().expect("--url URL"),
            "--seconds" => seconds = args.next().and_then(|s| s.parse().ok()).expect("--seconds N"),
            other => panic!("unknown argument {other}"),
        }
    }
    assert!(!url.is_empty(), "usage: bench --url URL [--seconds N]");
    let mut raw = redis::Client::open(url.as_str()).unwrap().get_multiplexed_async_connection().await.unwrap();
    let client = Client::connect(url.clone()).await.unwrap();

    // 1. Round-trip and uncontended cycle.
    let mut pings = Vec::with_capacity(5000);
    for _ in 0..5000 {
        let t = Instant::now();
        let _: String = redis::cmd("PING").query_async(&mut raw).await.unwrap();
        pings.push(t.elapsed());
    }
    pings.sort();
    let rtt = percentile(&pings, 0.5);
    let lock = client.lock("bench:uncontended").unwrap();
    for _ in 0..500 {
        lock.acquire().await.unwrap().release().await.unwrap();
    }
    let cycles = 5000;
    let t = Instant::now();
    for _ in 0..cycles {
        lock.acquire().await.unwrap().release().await.unwrap();
    }
    let cycle = t.elapsed() / cycles;
    println!("== uncontended, one holder");
    println!("PING round-trip p50             {}", ms(rtt));
    println!("acquire+release cycle           {}  ({:.0} cycles/s)", ms(cycle), 1.0 / cycle.as_secs_f64());
    println!("cycle / (2 x PING p50)          {:.2}   (target <= 1.25)", cycle.as_secs_f64() / (2.0 * rtt.as_secs_f64()));

    // 2. Contention: 8 holders x 200 critical sections of 1 ms.
    for clients in [1usize, 8] {
        let pool: Vec<Client> = if clients == 1 {
            vec![client.clone()]
        } else {
            let mut v = Vec::new();
            for _ in 0..clients {
                v.push(Client::connect(url.clone()).await.unwrap());
            }
            v
        };
        let locks: Vec<Lock> = (0..8).map(|i| pool[i % pool.len()].lock("bench:contended").unwrap()).collect();
        contended(&mut raw, &locks, clients).await;
        if clients > 1 {
            for c in pool {
                c.shutdown().await.unwrap();
            }
        }
    }

    // 3. Throughput: 256 tasks, own lock names, one client, vs PING from 256 tasks.
    let window = Duration::from_secs(seconds);
    let pingers: Vec<_> = (0..256)
        .map(|_| {
            let conn = raw.clone();
            move || {
                let mut conn = conn.clone();
                async move {
                    let _: String = redis::cmd("PING").query_async(&mut conn).await.unwrap();
                    1
                }
            }
        })
        .collect();
    let ping_ops = run_for(window, pingers).await;
    let lockers: Vec<_> = (0..256)
        .map(|i| {
            let lock = client.lock(format!("bench:own:{i}")).unwrap();
            move || {
                let lock = lock.clone();
                async move {
                    lock.acquire().await.unwrap().release().await.unwrap();
                    2 // one acquire and one release command
                }
            }
        })
        .collect();
    let lock_ops = run_for(window, lockers).await;
    println!("== 256 tasks, own lock names, one client, {seconds} s each");
    println!("PING ops/s                      {:.0}", ping_ops);
    println!("lock ops/s (acquire + release)  {:.0}  ({:.0} cycles/s)", lock_ops, lock_ops / 2.0);
    println!("lock ops/s / PING ops/s         {:.2}   (target >= 0.5)", lock_ops / ping_ops);

    // 4. Watchdog: 10 000 held locks, one renewal round.
    let mut held = Vec::with_capacity(10_000);
    let mut batch = Vec::new();
    for i in 0..10_000 {
        let lock = client.lock(format!("bench:held:{i}")).unwrap();
        batch.push(async move {
            let hold = lock.acquire().await.unwrap().into_hold();
            (lock, hold)
        });
        if batch.len() == 500 {
            held.extend(futures_util::future::join_all(std::mem::take(&mut batch)).await);
        }
    }
    held.extend(futures_util::future::join_all(batch).await);
    client.renew_held_locks().await.unwrap(); // loads the script (NOSCRIPT once per batch)
    let before = script_calls(&mut raw).await;
    let report = client.renew_held_locks().await.unwrap();
    let calls = script_calls(&mut raw).await - before;
    println!("== watchdog, {} held locks", held.len());
    println!("renewed {} in {} script calls (server counted {}), tick {}", report.renewed, report.script_calls, calls, ms(report.duration));
    println!("tick / PING p50                 {:.1}", report.duration.as_secs_f64() / rtt.as_secs_f64());
    client.shutdown().await.unwrap();
}

async fn contended(raw: &mut redis::aio::MultiplexedConnection, locks: &[Lock], clients: usize) {
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
async fn run_for<Op, Fut>(window: Duration, ops: Vec<Op>) -> f64
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
