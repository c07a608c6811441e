//! Local hand-off: a release that finds a waiter of its own client hands the lock
//! over inside the release script (one call, no message), tells a handed-over hold
//! that turns out lost, undoes a hand-off nobody takes, and still lets other
//! clients in after a streak of hand-offs.

mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use ferrolock::{AcquireOptions, ErrorKind, Lock};
use redis::AsyncCommands;

/// Spawns `lock.acquire_with(options)` and returns once it is waiting: subscribed,
/// its two attempts (before and after subscribing) have run, and it is parked
/// (so a release may hand the lock to it).
async fn spawn_waiter(
    raw: &redis::aio::MultiplexedConnection,
    client: &ferrolock::Client,
    lock: &Lock,
    options: AcquireOptions,
) -> tokio::task::JoinHandle<ferrolock::Result<ferrolock::Hold>> {
    let mut raw = raw.clone();
    let calls = script_calls(&mut raw).await;
    let parked = client.waiting_acquires();
    let waiting = tokio::spawn({
        let lock = lock.clone();
        async move { lock.acquire_with(options).await.map(|g| g.expect("an unbounded wait acquires").into_hold()) }
    });
    eventually(Duration::from_secs(5), "the waiter tried twice and parked", || {
        let mut raw = raw.clone();
        let now_parked = client.waiting_acquires();
        // At least two: a message of an earlier release that reaches the new
        // subscription late (a busy machine) wakes it for one more try.
        async move { script_calls(&mut raw).await >= calls + 2 && now_parked == parked + 1 }
    })
    .await;
    waiting
}

/// One acquire and release, so that the scripts are loaded before calls are counted
/// (the first EVALSHA of a script counts twice: NOSCRIPT, then the load and the call).
async fn load_scripts(lock: &Lock) {
    lock.acquire().await.unwrap().release().await.unwrap();
}

async fn fields(raw: &mut redis::aio::MultiplexedConnection, name: &str) -> HashMap<String, i64> {
    raw.hgetall(name).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_hands_the_lock_to_a_waiter_of_the_same_client_in_one_call() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    let c = client(&server.url(), 10_000).await;
    let (a, b) = (c.lock("handed").unwrap(), c.lock("handed").unwrap());
    load_scripts(&a).await;
    let held = a.acquire().await.unwrap();
    let lease = Duration::from_secs(5);
    let waiting = spawn_waiter(&raw, &c, &b, AcquireOptions { wait: None, lease: Some(lease) }).await;
    let (scripts, publishes) = (script_calls(&mut raw).await, command_calls(&mut raw, &["publish"]).await);

    held.release().await.unwrap();
    let hold = waiting.await.unwrap().unwrap();

    assert_eq!(script_calls(&mut raw).await - scripts, 1, "the release script alone moved the lock");
    assert_eq!(command_calls(&mut raw, &["publish"]).await, publishes, "nothing published: the lock never went free");
    assert_eq!(fields(&mut raw, "handed").await, HashMap::from([(b.owner().to_string(), 1)]));
    let pttl: i64 = raw.pttl("handed").await.unwrap();
    assert!(pttl > 4000 && pttl <= 5000, "the successor's own lease: PTTL {pttl}");
    assert_eq!((b.local_hold_count(), a.local_hold_count()), (1, 0));
    assert_eq!(hold.hold_count(), 1);
    assert!(!hold.is_lost());
    // An explicit lease: the watchdog leaves it alone.
    assert_eq!(c.renew_held_locks().await.unwrap().renewed, 0);
    assert_eq!(a.release().await.unwrap_err().kind(), ErrorKind::NotOwner);

    // Back to A, on the watchdog: renewed once the release has answered.
    let waiting = spawn_waiter(&raw, &c, &a, AcquireOptions::default()).await;
    assert_eq!(b.release().await.unwrap(), ferrolock::Released::Unlocked);
    let _hold = waiting.await.unwrap().unwrap();
    let report = c.renew_held_locks().await.unwrap();
    assert_eq!((report.renewed, report.lost), (1, 0));
    assert_eq!(fields(&mut raw, "handed").await, HashMap::from([(a.owner().to_string(), 1)]));
    assert_eq!(a.release().await.unwrap(), ferrolock::Released::Unlocked);
    c.shutdown().await.unwrap();
    assert_eq!(keys(&mut raw).await, Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handed_over_fenced_lock_gets_the_next_token_and_the_watchdog() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    let c = client(&server.url(), 10_000).await;
    let (a, b) = (c.fenced_lock("fenced").unwrap(), c.fenced_lock("fenced").unwrap());
    load_scripts(&a).await;
    let held = a.acquire().await.unwrap();
    let first = held.token().unwrap();
    let waiting = spawn_waiter(&raw, &c, &b, AcquireOptions::default()).await;
    let scripts = script_calls(&mut raw).await;

    held.release().await.unwrap();
    let hold = waiting.await.unwrap().unwrap();

    assert_eq!(script_calls(&mut raw).await - scripts, 1);
    assert_eq!(hold.token(), Some(first + 1));
    assert_eq!(b.token(), Some(first + 1));
    let counter: u64 = raw.get("redisson_lock_token:{fenced}").await.unwrap();
    assert_eq!(counter, first + 1);
    assert_eq!(fields(&mut raw, "fenced").await, HashMap::from([(b.owner().to_string(), 1)]));
    let report = c.renew_held_locks().await.unwrap();
    assert_eq!((report.renewed, report.lost), (1, 0), "the successor is renewed by the watchdog");
    b.release().await.unwrap();
    c.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hold_handed_over_by_a_holder_that_had_lost_it_is_reported_lost() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    let c = client(&server.url(), 30_000).await;
    let other = client(&server.url(), 30_000).await;
    let (a, b) = (c.lock("gone").unwrap(), c.lock("gone").unwrap());
    let _held = a.acquire().await.unwrap().into_hold();
    let waiting = spawn_waiter(&raw, &c, &b, AcquireOptions::default()).await;
    // A's hold vanishes behind its back (no message) and another client takes the lock.
    let _: i64 = raw.del("gone").await.unwrap();
    let intruder = other.lock("gone").unwrap();
    let _intruding = intruder.try_acquire().await.unwrap().expect("free after the DEL").into_hold();

    assert_eq!(a.release().await.unwrap_err().kind(), ErrorKind::LockLost);
    // B was let go before the script answered, and is told as soon as it did.
    let hold = waiting.await.unwrap().unwrap();
    let lost = tokio::time::timeout(Duration::from_secs(5), hold.lost()).await.expect("told within the reply");
    assert_eq!(lost.kind(), ErrorKind::LockLost);
    assert!(b.is_lost());
    assert_eq!(b.release().await.unwrap_err().kind(), ErrorKind::LockLost);
    assert_eq!(fields(&mut raw, "gone").await, HashMap::from([(intruder.owner().to_string(), 1)]));
    intruder.release().await.unwrap();
    c.shutdown().await.unwrap();
    other.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_that_leaves_during_a_hand_off_leaves_nothing_held() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    let c = client(&server.url(), 10_000).await;
    let (a, b) = (c.lock("left").unwrap(), c.lock("left").unwrap());
    let mut handed_before_abort = 0;
    for _ in 0..30 {
        let _held = a.acquire().await.unwrap().into_hold();
        let waiting = spawn_waiter(&raw, &c, &b, AcquireOptions::default()).await;
        let release = tokio::spawn({
            let a = a.clone();
            async move { a.release().await }
        });
        tokio::task::yield_now().await;
        waiting.abort();
        assert_eq!(release.await.unwrap().unwrap(), ferrolock::Released::Unlocked);
        if let Ok(Ok(_hold)) = waiting.await {
            // The acquire finished before the abort: an ordinary hold.
            handed_before_abort += 1;
            b.release().await.unwrap();
        }
        eventually(Duration::from_secs(5), "the lock is free again, and B knows it", || {
            let (mut raw, b) = (raw.clone(), b.clone());
            async move { !raw.exists::<_, bool>("left").await.unwrap() && b.local_hold_count() == 0 }
        })
        .await;
    }
    assert!(handed_before_abort < 30, "some aborts landed during the hand-off");
    c.shutdown().await.unwrap();
    assert_eq!(keys(&mut raw).await, Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streak_of_hand_offs_ends_with_a_plain_release_that_publishes() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    let c = client(&server.url(), 30_000).await;
    let (mut holder, mut other) = (c.lock("streak").unwrap(), c.lock("streak").unwrap());
    load_scripts(&holder).await;
    let _hold = holder.acquire().await.unwrap().into_hold();
    let mut published_at = Vec::new();
    for release in 1..=27 {
        // The other holder is queued (its attempts done) before each release.
        let waiting = spawn_waiter(&raw, &c, &other, AcquireOptions::default()).await;
        let publishes = command_calls(&mut raw, &["publish"]).await;
        holder.release().await.unwrap();
        waiting.await.unwrap().unwrap();
        if command_calls(&mut raw, &["publish"]).await > publishes {
            published_at.push(release);
        }
        std::mem::swap(&mut holder, &mut other);
    }
    // STREAK hand-offs in a row, then a release that frees the lock for everyone.
    assert_eq!(published_at, vec![9, 18, 27], "releases that published");
    holder.release().await.unwrap();
    c.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handing_over_in_a_row_still_lets_other_clients_in() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    // Long leases: the outsider cannot get in by expiry within its wait.
    let c = client(&server.url(), 30_000).await;
    let outsider_client = client(&server.url(), 30_000).await;
    let stop = Arc::new(AtomicBool::new(false));
    let sections = Arc::new(AtomicU64::new(0));
    let passers: Vec<_> = (0..2)
        .map(|_| {
            let (lock, stop, sections) = (c.lock("streak").unwrap(), stop.clone(), sections.clone());
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    let guard = lock.acquire().await.unwrap();
                    sections.fetch_add(1, Ordering::Relaxed);
                    guard.release().await.unwrap();
                }
            })
        })
        .collect();
    eventually(Duration::from_secs(5), "both holders pass the lock around", || {
        let n = sections.load(Ordering::Relaxed);
        async move { n > 50 }
    })
    .await;
    let publishes = command_calls(&mut raw, &["publish"]).await;
    let outsider = outsider_client.lock("streak").unwrap();
    let got = outsider.acquire_with(AcquireOptions::wait(Duration::from_secs(10))).await.unwrap();
    assert!(got.is_some(), "another client got in while two holders kept handing the lock over");
    assert!(command_calls(&mut raw, &["publish"]).await > publishes, "woken by a release that freed the lock");
    stop.store(true, Ordering::Relaxed);
    got.unwrap().release().await.unwrap();
    for p in passers {
        p.await.unwrap();
    }
    c.shutdown().await.unwrap();
    outsider_client.shutdown().await.unwrap();
}
