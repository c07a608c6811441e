//! ferrolock's benchmark: every figure is a ratio against the same run's Redis
//! round-trip (or the same run's server CPU), measured on one server in one run.
//!
//! cargo run --release -p ferrolock --example bench -- --url URL [--seconds N] [--only SECTION]
//!
//! Sections: uncontended, contended, throughput, watchdog, family, redlock, memory (all by
//! default; `--only` runs one, e.g. under a profiler). BENCH_HOLDS (default 20000) sets how
//! many locks the memory section holds at once.

#[path = "shared/family.rs"]
mod family;
#[path = "shared/measure.rs"]
mod measure;
#[path = "shared/memory.rs"]
mod memory;
#[path = "shared/redlock.rs"]
mod redlock;

use std::time::Duration;

use ferrolock::{Client, Lock};
use measure::{contended, ms, process_cpu, run_for, script_calls, server_cpu, uncontended_with_floor};

const SECTIONS: [&str; 7] = ["uncontended", "contended", "throughput", "watchdog", "family", "redlock", "memory"];

#[tokio::main]
async fn main() {
    let mut url = String::new();
    let mut seconds = 5u64;
    let mut only: Option<String> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--url" => url = args.next().expect("--url URL"),
            "--seconds" => seconds = args.next().and_then(|s| s.parse().ok()).expect("--seconds N"),
            "--only" => only = Some(args.next().filter(|s| SECTIONS.contains(&s.as_str())).expect("--only one of {SECTIONS:?}")),
            other => panic!("unknown argument {other}"),
        }
    }
    assert!(!url.is_empty(), "usage: bench --url URL [--seconds N] [--only SECTION]");
    let run = |section: &str| only.as_deref().is_none_or(|o| o == section);
    let mut raw = redis::Client::open(url.as_str()).unwrap().get_multiplexed_async_connection().await.unwrap();
    let client = Client::connect(url.clone()).await.unwrap();
    let window = Duration::from_secs(seconds);

    // Every section compares with the PING round-trip of this run.
    let lock = client.lock("bench:uncontended").unwrap();
    let round = uncontended_with_floor(&mut raw, &lock, "bench:uncontended:floor", &url).await;
    let (rtt, cycle) = (round.rtt, round.cycle);
    if run("uncontended") {
        let (floor, bare_rtt, bare_cycle) = (round.floor.unwrap(), round.bare_rtt.unwrap(), round.bare_cycle.unwrap());
        let per_ping = |d: Duration, ping: Duration| d.as_secs_f64() / (2.0 * ping.as_secs_f64());
        println!("== uncontended, one holder (p50s of the median of 9 rounds, PINGs and cycles taking turns)");
        println!("PING round-trip p50             {}", ms(rtt));
        println!("acquire+release cycle p50       {}  ({:.0} cycles/s)", ms(cycle), 1.0 / cycle.as_secs_f64());
        println!("cycle / (2 x PING p50)          {:.2}   (target <= 1.25)", per_ping(cycle, rtt));
        println!(
            "protocol floor cycle            {}  = {:.2} x 2 PING; ferrolock / floor {:.2} (our scripts sent by redis-rs alone)",
            ms(floor),
            per_ping(floor, rtt),
            cycle.as_secs_f64() / floor.as_secs_f64()
        );
        println!(
            "bare floor                      {} = {:.2} x 2 bare PING ({}): our scripts on a bare socket, the least any client of this protocol can reach",
            ms(bare_cycle),
            per_ping(bare_cycle, bare_rtt),
            ms(bare_rtt)
        );
    }
    if run("contended") {
        contention(&url, &client, &mut raw).await;
    }
    if run("throughput") {
        throughput(&client, &mut raw, window).await;
    }
    if run("watchdog") {
        watchdog(&client, &mut raw, rtt).await;
    }
    if run("memory") {
        let holds = std::env::var("BENCH_HOLDS").ok().and_then(|n| n.parse().ok()).unwrap_or(20_000);
        memory::section(&client, holds).await;
    }
    client.shutdown().await.unwrap();
    if run("family") {
        family::fair(&url).await;
        family::read_write(&url, window).await;
        family::semaphore(&url, window).await;
    }
    if run("redlock") {
        redlock::section().await;
    }
}

/// 8 holders x 200 critical sections of 1 ms, on one client and on 8.
async fn contention(url: &str, client: &Client, raw: &mut redis::aio::MultiplexedConnection) {
    for clients in [1usize, 8] {
        let pool: Vec<Client> = if clients == 1 {
            vec![client.clone()]
        } else {
            let mut v = Vec::new();
            for _ in 0..clients {
                v.push(Client::connect(url.to_string()).await.unwrap());
            }
            v
        };
        let locks: Vec<Lock> = (0..8).map(|i| pool[i % pool.len()].lock("bench:contended").unwrap()).collect();
        contended(raw, &locks, clients).await;
        if clients > 1 {
            for c in pool {
                c.shutdown().await.unwrap();
            }
        }
    }
}

/// 256 tasks on their own lock names on one client, against PING from 256 tasks,
/// and against what the server could serve at the CPU it spent per cycle.
async fn throughput(client: &Client, raw: &mut redis::aio::MultiplexedConnection, window: Duration) {
    let seconds = window.as_secs_f64();
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
    let server0 = server_cpu(raw).await;
    let client0 = process_cpu();
    let lock_ops = run_for(window, lockers).await;
    let client_cpu = process_cpu().zip(client0).map(|(after, before)| after - before);
    let server = server_cpu(raw).await - server0;
    let cycles_per_s = lock_ops / 2.0;
    let cycles = cycles_per_s * seconds;
    let server_per_cycle = server / cycles;
    let bound = 1.0 / server_per_cycle;
    println!("== 256 tasks, own lock names, one client, {seconds} s each");
    println!("PING ops/s                      {:.0}", ping_ops);
    println!("lock ops/s (acquire + release)  {:.0}  ({:.0} cycles/s)", lock_ops, cycles_per_s);
    println!("lock ops/s / PING ops/s         {:.2}", lock_ops / ping_ops);
    println!(
        "server CPU per cycle            {:.1} us: one server core serves at most {:.0} cycles/s",
        server_per_cycle * 1e6,
        bound
    );
    if let Some(client_cpu) = client_cpu {
        println!("client CPU per cycle            {:.1} us (this process, all threads)", client_cpu / cycles * 1e6);
    }
    println!("cycles/s / server-CPU bound     {:.2}   (target >= 0.80)", cycles_per_s / bound);
}

/// 10 000 held locks, one renewal round.
async fn watchdog(client: &Client, raw: &mut redis::aio::MultiplexedConnection, rtt: Duration) {
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
    let before = script_calls(raw).await;
    let report = client.renew_held_locks().await.unwrap();
    let calls = script_calls(raw).await - before;
    println!("== watchdog, {} held locks", held.len());
    println!("renewed {} in {} script calls (server counted {}), tick {}", report.renewed, report.script_calls, calls, ms(report.duration));
    println!("tick / PING p50                 {:.1}", report.duration.as_secs_f64() / rtt.as_secs_f64());
}
