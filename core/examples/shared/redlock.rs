//! The Redlock section of bench.rs: ferrolock's Redlock over 3 and over 5 redis-servers
//! started here (independent masters, one client per server, shared by every holder,
//! as the Node and Python benchmarks do), uncontended against a single lock on one of
//! those servers, and 8 holders x 50 critical sections of 1 ms on one name.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ferrolock::{Client, Lock, Quorum};
use ferrolock_harness::RedisServer;

use crate::measure::{ms, percentile};

const SIZES: [usize; 2] = [3, 5];
const CYCLES: usize = 1000;
const HOLDERS: usize = 8;
const SECTIONS: usize = 50;

pub async fn section() {
    let servers: Vec<RedisServer> = (0..SIZES[SIZES.len() - 1]).map(|_| RedisServer::start()).collect();
    println!("== Redlock over N of {} more redis-servers, one client per server", servers.len());
    println!("   uncontended: {CYCLES} cycles, one holder, p50 against one lock on the first server in the same rounds;");
    println!("   contended: {HOLDERS} holders x {SECTIONS} critical sections of 1 ms on one name");
    for n in SIZES {
        let mut clients = Vec::new();
        for server in &servers[..n] {
            clients.push(Client::connect(server.url()).await.unwrap());
        }
        let redlock = |name: &str| Lock::multi(clients.iter().map(|c| c.lock(name).unwrap()).collect(), Quorum::Majority).unwrap();
        let (single, multi) = uncontended(&clients[0].lock("bench:redlock:single").unwrap(), &redlock("bench:redlock:uncontended")).await;
        println!(
            "N={n}: uncontended cycle p50 {} = {:.2} x one server's {}   (target: the speed of one server, ~1x; was ~N x)",
            ms(multi),
            multi.as_secs_f64() / single.as_secs_f64(),
            ms(single)
        );
        let locks: Vec<Lock> = (0..HOLDERS).map(|_| redlock("bench:redlock:contended")).collect();
        let c = contended(&locks).await;
        println!(
            "N={n}: contended efficiency {:.3}   (target >= 0.85), hand-off p50 {}, p99 {}, longest wait {}, lost updates {}",
            c.efficiency,
            ms(c.p50),
            ms(c.p99),
            ms(c.longest),
            c.lost
        );
        for client in clients {
            client.shutdown().await.unwrap();
        }
    }
}

/// p50 cycle of `single` and of `multi`, in 10 rounds taking turns (median round each).
async fn uncontended(single: &Lock, multi: &Lock) -> (Duration, Duration) {
    async fn p50(lock: &Lock, cycles: usize) -> Duration {
        let mut samples = Vec::with_capacity(cycles);
        for _ in 0..cycles {
            let t0 = Instant::now();
            lock.acquire().await.unwrap().release().await.unwrap();
            samples.push(t0.elapsed());
        }
        samples.sort();
        percentile(&samples, 0.5)
    }
    for lock in [single, multi] {
        p50(lock, 200).await; // warm-up
    }
    let (mut singles, mut multis) = (Vec::new(), Vec::new());
    for _ in 0..10 {
        singles.push(p50(single, CYCLES / 10).await);
        multis.push(p50(multi, CYCLES / 10).await);
    }
    singles.sort();
    multis.sort();
    (singles[5], multis[5])
}

struct Contended {
    efficiency: f64,
    p50: Duration,
    p99: Duration,
    longest: Duration,
    lost: u64,
}

async fn contended(locks: &[Lock]) -> Contended {
    let last_release: Arc<Mutex<Option<Instant>>> = Arc::new(Mutex::new(None));
    let handoffs = Arc::new(Mutex::new(Vec::new()));
    let longest = Arc::new(Mutex::new(Duration::ZERO));
    let held = Arc::new(Mutex::new(Duration::ZERO));
    let counter = Arc::new(Mutex::new((0u64, 0u64))); // (value, lost updates)
    let start = Instant::now();
    let tasks: Vec<_> = locks
        .iter()
        .cloned()
        .map(|lock| {
            let (last_release, handoffs, longest, held, counter) = (last_release.clone(), handoffs.clone(), longest.clone(), held.clone(), counter.clone());
            tokio::spawn(async move {
                for _ in 0..SECTIONS {
                    let asked = Instant::now();
                    let guard = lock.acquire().await.unwrap();
                    let got = Instant::now();
                    {
                        let mut l = longest.lock().unwrap();
                        *l = (*l).max(got - asked);
                    }
                    if let Some(released) = *last_release.lock().unwrap() {
                        if asked < released {
                            handoffs.lock().unwrap().push(got - released);
                        }
                    }
                    let seen = counter.lock().unwrap().0;
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    {
                        let mut c = counter.lock().unwrap();
                        if c.0 != seen {
                            c.1 += 1;
                        }
                        c.0 = seen + 1;
                    }
                    *held.lock().unwrap() += got.elapsed();
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
    let mut h = handoffs.lock().unwrap().clone();
    h.sort();
    let lost = counter.lock().unwrap().1;
    let efficiency = held.lock().unwrap().as_secs_f64() / wall.as_secs_f64();
    let longest = *longest.lock().unwrap();
    Contended { efficiency, p50: percentile(&h, 0.5), p99: percentile(&h, 0.99), longest, lost }
}
