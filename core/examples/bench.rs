//! ferrolock's benchmark: every figure is a ratio against the same run's Redis
//! round-trip, measured on one server in one run.
//!
//! cargo run --release -p ferrolock --example bench -- --url URL [--seconds N]

#[path = "shared/family.rs"]
mod family;
#[path = "shared/measure.rs"]
mod measure;

use std::time::Duration;

use ferrolock::{Client, Lock};
use measure::{contended, ms, run_for, script_calls, uncontended};

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
    let lock = client.lock("bench:uncontended").unwrap();
    let (rtt, cycle) = uncontended(&mut raw, &lock).await;
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

    // 5. The rest of the family: fair order, readers together, permits in use.
    family::fair(&url).await;
    family::read_write(&url, window).await;
    family::semaphore(&url, window).await;
}
