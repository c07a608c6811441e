//! The benchmark of Redisson's wider family (bench.rs section 5): the fair lock's
//! order, the read-write lock's readers, the semaphore's permits in use.
#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ferrolock::{Client, Lock};

use crate::measure::{ms, percentile};

const SECTION: Duration = Duration::from_millis(1);

async fn clients(url: &str, n: usize) -> Vec<Client> {
    let mut v = Vec::new();
    for _ in 0..n {
        v.push(Client::connect(url.to_string()).await.unwrap());
    }
    v
}

/// `holders` locks, `rounds` sections of 1 ms each: efficiency, hand-offs, and the
/// longest wait against a fair share (the wait of one turn of everyone else).
async fn turns(locks: Vec<Lock>, rounds: usize) -> (f64, Vec<Duration>, f64) {
    let n = locks.len();
    let last_release: Arc<Mutex<Option<Instant>>> = Arc::default();
    let handoffs: Arc<Mutex<Vec<Duration>>> = Arc::default();
    let waits: Arc<Mutex<Vec<Duration>>> = Arc::default();
    let held: Arc<Mutex<Duration>> = Arc::default();
    let start = Instant::now();
    let tasks: Vec<_> = locks
        .into_iter()
        .map(|lock| {
            let (last_release, handoffs, waits, held) = (last_release.clone(), handoffs.clone(), waits.clone(), held.clone());
            tokio::spawn(async move {
                for _ in 0..rounds {
                    let asked = Instant::now();
                    let guard = lock.acquire().await.unwrap();
                    let got = Instant::now();
                    waits.lock().unwrap().push(got - asked);
                    if let Some(released) = last_release.lock().unwrap().take() {
                        handoffs.lock().unwrap().push(got.saturating_duration_since(released));
                    }
                    tokio::time::sleep(SECTION).await;
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
    let longest = waits.lock().unwrap().iter().max().copied().unwrap_or_default();
    let turn = wall.as_secs_f64() / (n * rounds) as f64;
    let fair_share = turn * (n - 1) as f64;
    let efficiency = held.lock().unwrap().as_secs_f64() / wall.as_secs_f64();
    (efficiency, h, longest.as_secs_f64() / fair_share)
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
