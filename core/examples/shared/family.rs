//! The benchmark of Redisson's wider family (bench.rs section 5): the fair lock's
//! order, the read-write lock's readers, the semaphore's permits in use.
#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ferrolock::{Client, Lock};

use crate::measure::{floor_release, ms, percentile, subscribed, woken};

const SECTION: Duration = Duration::from_millis(1);

async fn clients(url: &str, n: usize) -> Vec<Client> {
    let mut v = Vec::new();
    for _ in 0..n {
        v.push(Client::connect(url.to_string()).await.unwrap());
    }
    v
}

/// What [`turns`] and [`fair_floor`] record of each section: waits, hand-offs (from
/// one holder's release to the next one's take), time held.
#[derive(Clone, Default)]
struct Tally {
    last_release: Arc<Mutex<Option<Instant>>>,
    handoffs: Arc<Mutex<Vec<Duration>>>,
    waits: Arc<Mutex<Vec<Duration>>>,
    held: Arc<Mutex<Duration>>,
}

impl Tally {
    /// Taken now, asked at `asked`: answers when.
    fn took(&self, asked: Instant) -> Instant {
        let got = Instant::now();
        self.waits.lock().unwrap().push(got - asked);
        if let Some(released) = self.last_release.lock().unwrap().take() {
            self.handoffs.lock().unwrap().push(got.saturating_duration_since(released));
        }
        got
    }

    /// About to release what was taken at `got`.
    fn releasing(&self, got: Instant) {
        *self.held.lock().unwrap() += got.elapsed();
        *self.last_release.lock().unwrap() = Some(Instant::now());
    }

    /// Efficiency, sorted hand-offs, and the longest wait against a fair share (the
    /// wait of one turn of everyone else), for `sections` sections of `n` holders since `start`.
    fn result(&self, start: Instant, n: usize, sections: usize) -> (f64, Vec<Duration>, f64) {
        let wall = start.elapsed();
        let mut h = self.handoffs.lock().unwrap().clone();
        h.sort();
        let longest = self.waits.lock().unwrap().iter().max().copied().unwrap_or_default();
        let fair_share = wall.as_secs_f64() / sections as f64 * (n - 1) as f64;
        let efficiency = self.held.lock().unwrap().as_secs_f64() / wall.as_secs_f64();
        (efficiency, h, longest.as_secs_f64() / fair_share)
    }
}

/// `holders` locks, `rounds` sections of 1 ms each (see [`Tally::result`]).
async fn turns(locks: Vec<Lock>, rounds: usize) -> (f64, Vec<Duration>, f64) {
    let n = locks.len();
    let tally = Tally::default();
    let start = Instant::now();
    let tasks: Vec<_> = locks
        .into_iter()
        .map(|lock| {
            let tally = tally.clone();
            tokio::spawn(async move {
                for _ in 0..rounds {
                    let asked = Instant::now();
                    let guard = lock.acquire().await.unwrap();
                    let got = tally.took(asked);
                    tokio::time::sleep(SECTION).await;
                    tally.releasing(got);
                    guard.release().await.unwrap();
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    tally.result(start, n, n * rounds)
}

const FAIR_ACQUIRE_LUA: &str = include_str!("../../src/scripts/lock/fair_acquire.lua");
const FAIR_RELEASE_LUA: &str = include_str!("../../src/scripts/lock/fair_release.lua");
const FAIR_SHIFT_LUA: &str = include_str!("../../src/scripts/lock/fair_shift.lua");

/// [`turns`] on a fair lock with core's fair scripts driven by hand: `clients` x
/// `per_client` holders, each with its own connection and its own subscription to its
/// waiter channel; a release wakes the queue's head, which tries once; a take that
/// left waiters moves them up a turn (fair_shift) during its section. No watchdog, no
/// notes, no hand-off within a client: the least any client of this protocol does.
async fn fair_floor(url: &str, clients: usize, per_client: usize, rounds: usize) -> (f64, Vec<Duration>, f64) {
    const NAME: &str = "bench:fair:floor";
    const WAIT_MS: u64 = 300_000;
    let client = redis::Client::open(url).unwrap();
    let (queue, timeouts, channel) =
        (format!("redisson_lock_queue:{{{NAME}}}"), format!("redisson_lock_timeout:{{{NAME}}}"), format!("redisson_lock__channel:{{{NAME}}}"));
    let scripts = Arc::new((redis::Script::new(FAIR_ACQUIRE_LUA), redis::Script::new(FAIR_RELEASE_LUA), redis::Script::new(FAIR_SHIFT_LUA)));
    let tally = Tally::default();
    let mut holders = Vec::new();
    for i in 0..clients * per_client {
        let owner = format!("00000000-0000-4000-8000-{:012}:{}", i / per_client, i % per_client);
        let (conn, messages) = subscribed(&client, &format!("{channel}:{owner}")).await;
        holders.push((owner, conn, messages));
    }
    let start = Instant::now();
    let tasks: Vec<_> = holders
        .into_iter()
        .map(|(owner, mut conn, mut messages)| {
            let (tally, scripts, queue, timeouts, channel) = (tally.clone(), scripts.clone(), queue.clone(), timeouts.clone(), channel.clone());
            tokio::spawn(async move {
                let (acquire, release, shift) = &*scripts;
                for section in 0..rounds {
                    let asked = Instant::now();
                    let head = loop {
                        let reply: Vec<redis::Value> =
                            acquire.key(NAME).key(&queue).key(&timeouts).arg(30_000).arg(&owner).arg(WAIT_MS).invoke_async(&mut conn).await.unwrap();
                        match reply.as_slice() {
                            [redis::Value::Int(1), _, _, redis::Value::BulkString(head)] => break Some(head.clone()),
                            [redis::Value::Int(1), ..] => break None,
                            [_, redis::Value::Int(wait)] => woken(&mut messages, Duration::from_millis(*wait as u64)).await,
                            other => panic!("fair_acquire answered {other:?}"),
                        }
                    };
                    let got = tally.took(asked);
                    let shifting = async {
                        if let Some(head) = head {
                            let _: i64 = shift.key(&queue).key(&timeouts).arg(head).arg(WAIT_MS).invoke_async(&mut conn).await.unwrap();
                        }
                    };
                    tokio::join!(shifting, tokio::time::sleep(SECTION));
                    tally.releasing(got);
                    floor_release(&mut conn, release, &[NAME, &queue, &timeouts, &channel], &owner, section).await;
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let n = clients * per_client;
    tally.result(start, n, n * rounds)
}

pub async fn fair(url: &str) {
    let pool = clients(url, 8).await;
    println!("== fair lock vs plain lock: 8 clients x 8 holders x 5 sections of 1 ms");
    for fair in [true, false] {
        let locks: Vec<Lock> = (0..64)
            .map(|i| if fair { pool[i % 8].fair_lock("bench:fair") } else { pool[i % 8].lock("bench:plain") }.unwrap())
            .collect();
        let (efficiency, h, longest) = turns(locks, 5).await;
        println!(
            "{:<6} efficiency {:.3}{}, hand-off p50 / p99 {} / {}, longest wait / fair share {:.1}{}",
            if fair { "fair" } else { "plain" },
            efficiency,
            if fair { " (target >= 0.85)" } else { "" },
            ms(percentile(&h, 0.5)),
            ms(percentile(&h, 0.99)),
            longest,
            if fair { "   (target <= 2)" } else { "" }
        );
        if fair {
            let ours = efficiency;
            let (efficiency, h, _) = fair_floor(url, 8, 8, 5).await;
            println!(
                "fair floor efficiency {efficiency:.3}, hand-off p50 {} (ours / floor {:.2}): the same sections with our fair scripts sent by redis-rs alone, one connection and one subscription (its own waiter channel) per holder; the release wakes the head, which tries once",
                ms(percentile(&h, 0.5)),
                ours / efficiency
            );
        }
    }
    for c in pool {
        c.shutdown().await.unwrap();
    }
}

/// 8 readers and 1 writer for `window`: reader sections per second on the
/// read-write lock against 8 readers on a plain lock.
pub async fn read_write(url: &str, window: Duration) {
    let pool = clients(url, 3).await;
    let mut rates = Vec::new();
    for rw in [true, false] {
        let stop = Instant::now() + window;
        let reads = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for i in 0..9 {
            let c = pool[i % pool.len()].clone();
            let reads = reads.clone();
            tasks.push(tokio::spawn(async move {
                let lock = if rw {
                    let both = c.read_write_lock("bench:rw").unwrap();
                    if i == 8 { both.write() } else { both.read() }
                } else {
                    c.lock("bench:rw-plain").unwrap()
                };
                while Instant::now() < stop {
                    let guard = lock.acquire().await.unwrap();
                    tokio::time::sleep(SECTION).await;
                    guard.release().await.unwrap();
                    if i != 8 {
                        reads.fetch_add(1, Ordering::Relaxed);
                    }
                    if i == 8 {
                        // The writer writes now and then, as writers do.
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        rates.push(reads.load(Ordering::Relaxed) as f64 / window.as_secs_f64());
    }
    println!("== read-write lock: 8 readers + 1 writer, 1 ms sections, {} s each", window.as_secs());
    println!("reader sections/s: read-write {:.0}, plain lock {:.0}, ratio {:.2}", rates[0], rates[1], rates[0] / rates[1]);
    for c in pool {
        c.shutdown().await.unwrap();
    }
}

/// A semaphore of 4 permits, 16 workers taking one for 1 ms sections: the share of
/// the wall time with all 4 in use.
pub async fn semaphore(url: &str, window: Duration) {
    let pool = clients(url, 4).await;
    let setup = pool[0].semaphore("bench:sem").unwrap();
    let _ = setup.drain().await;
    setup.release(4).await.unwrap();
    let inside = Arc::new(Mutex::new((0usize, Instant::now(), Duration::ZERO)));
    let start = Instant::now();
    let stop = start + window;
    let tasks: Vec<_> = (0..16)
        .map(|i| {
            let sem = pool[i % pool.len()].semaphore("bench:sem").unwrap();
            let inside = inside.clone();
            tokio::spawn(async move {
                while Instant::now() < stop {
                    let permits = sem.acquire(1).await.unwrap();
                    {
                        let mut st = inside.lock().unwrap();
                        st.0 += 1;
                        if st.0 == 4 {
                            st.1 = Instant::now();
                        }
                    }
                    tokio::time::sleep(SECTION).await;
                    {
                        let mut st = inside.lock().unwrap();
                        if st.0 == 4 {
                            let since = st.1.elapsed();
                            st.2 += since;
                        }
                        st.0 -= 1;
                    }
                    permits.release().await.unwrap();
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let full = inside.lock().unwrap().2;
    println!("== semaphore: 4 permits, 16 workers, 1 ms sections, {} s", window.as_secs());
    println!("efficiency (time with 4 inside / wall) {:.3}   (target >= 0.9)", full.as_secs_f64() / start.elapsed().as_secs_f64());
    for c in pool {
        c.shutdown().await.unwrap();
    }
}
