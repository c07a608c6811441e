//! Waiting on pub/sub: hand-off by message and by expiry, contention, no herd,
//! cancellation, and nothing left behind.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use ferrolock::AcquireOptions;
use redis::AsyncCommands;

const CHANNEL: &str = "redisson_lock__channel:{contended}";

async fn wait_subscribers(raw: &redis::aio::MultiplexedConnection, channel: &str, n: i64) {
    eventually(Duration::from_secs(5), "subscribers", || {
        let mut raw = raw.clone();
        let channel = channel.to_string();
        async move { numsub(&mut raw, &channel).await == n }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hand_off_by_message_is_far_sooner_than_the_ttl() {
    let server = RedisServer::start();
    let raw = server.raw().await;
    let holder_client = client(&server.url(), 10_000).await;
    let waiter_client = client(&server.url(), 10_000).await;
    let guard = holder_client.lock("contended").unwrap().acquire().await.unwrap();
    let lock = waiter_client.lock("contended").unwrap();
    let waiter = tokio::spawn({
        let lock = lock.clone();
        async move { lock.acquire().await.map(|g| (Instant::now(), g.into_hold())) }
    });
    wait_subscribers(&raw, CHANNEL, 1).await;
    let pttl = guard.lock().remaining_lease().await.unwrap().unwrap();
    let released = Instant::now();
    guard.release().await.unwrap();
    let (acquired, _hold) = waiter.await.unwrap().unwrap();
    let took = acquired - released;
    assert!(took * 20 < pttl, "hand-off took {took:?} with {pttl:?} left on the lease");
    lock.release().await.unwrap();
    wait_subscribers(&raw, CHANNEL, 0).await;
    holder_client.shutdown().await.unwrap();
    waiter_client.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hand_off_by_expiry_needs_no_message() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    let a = client(&server.url(), 10_000).await;
    let b = client(&server.url(), 10_000).await;
    let options = AcquireOptions::wait(Duration::ZERO).with_lease(Duration::from_millis(600));
    let abandoned = a.lock("contended").unwrap();
    let _hold = abandoned.acquire_with(options).await.unwrap().unwrap().into_hold();
    let started = Instant::now();
    let pttl: i64 = raw.pttl("contended").await.unwrap();
    let lock = b.lock("contended").unwrap();
    let guard = lock.acquire_with(AcquireOptions::wait(Duration::from_secs(5))).await.unwrap().expect("acquired after expiry");
    let took = started.elapsed();
    assert!(took + Duration::from_millis(20) >= Duration::from_millis(pttl as u64), "not before expiry: {took:?}");
    assert!(took <= Duration::from_millis(pttl as u64 + 200), "soon after expiry: {took:?} (PTTL {pttl})");
    guard.release().await.unwrap();
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_bound_is_respected() {
    let server = RedisServer::start();
    let a = client(&server.url(), 10_000).await;
    let held = a.lock("busy").unwrap().acquire().await.unwrap();
    let other = a.lock("busy").unwrap();
    let started = Instant::now();
    let got = other.acquire_with(AcquireOptions::wait(Duration::from_millis(300))).await.unwrap();
    assert!(got.is_none());
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(300) && took < Duration::from_millis(800), "{took:?}");
    assert!(other.try_acquire().await.unwrap().is_none());
    held.release().await.unwrap();
    assert!(other.try_acquire().await.unwrap().is_some());
    a.shutdown().await.unwrap();
}

/// 2 clients x 32 tasks x 100 non-atomic increments of a counter kept in Redis.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_exclusion_gives_the_exact_count_and_leaves_nothing_behind() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    let clients = [client(&server.url(), 2000).await, client(&server.url(), 2000).await];
    let mut tasks = Vec::new();
    for c in &clients {
        for _ in 0..32 {
            let lock = c.lock("contended").unwrap();
            let mut conn = server.raw().await;
            tasks.push(tokio::spawn(async move {
                for _ in 0..100 {
                    let guard = lock.acquire().await.unwrap();
                    let value: i64 = conn.get::<_, Option<i64>>("counter").await.unwrap().unwrap_or(0);
                    tokio::task::yield_now().await;
                    let _: () = conn.set("counter", value + 1).await.unwrap();
                    guard.release().await.unwrap();
                }
            }));
        }
    }
    for t in tasks {
        t.await.unwrap();
    }
    let total: i64 = raw.get("counter").await.unwrap();
    assert_eq!(total, 2 * 32 * 100);
    wait_subscribers(&raw, CHANNEL, 0).await;
    for c in &clients {
        eventually(Duration::from_secs(5), "client unsubscribed", || {
            let n = c.subscribed_channels();
            async move { n == 0 }
        })
        .await;
        c.shutdown().await.unwrap();
    }
    assert_eq!(keys(&mut raw).await, vec!["counter".to_string()], "no lock, latch or token key left");
}

/// Inside one client a release wakes one waiter, not all of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_client_wakes_one_waiter_per_release() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    let c = client(&server.url(), 5000).await;
    let first = c.lock("contended").unwrap().acquire().await.unwrap();
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let lock = c.lock("contended").unwrap();
        tasks.push(tokio::spawn(async move {
            for _ in 0..25 {
                let g = lock.acquire().await.unwrap();
                g.release().await.unwrap();
            }
        }));
    }
    wait_subscribers(&raw, CHANNEL, 1).await; // one subscription for eight waiters
    let before = script_calls(&mut raw).await;
    first.release().await.unwrap();
    for t in tasks {
        t.await.unwrap();
    }
    let calls = script_calls(&mut raw).await - before;
    let sections = 8 * 25;
    // acquire + release per section, plus a few failed attempts when a wake races a fast-path acquire
    assert!(calls as f64 / sections as f64 <= 3.0, "{calls} script calls for {sections} critical sections");
    c.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_retry_after_their_pubsub_connection_is_killed() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    let a = client(&server.url(), 20_000).await;
    let b = client(&server.url(), 20_000).await;
    let guard = a.lock("contended").unwrap().acquire().await.unwrap();
    let lock = b.lock("contended").unwrap();
    let waiter = tokio::spawn({
        let lock = lock.clone();
        async move { lock.acquire().await.map(|g| (Instant::now(), g.into_hold())) }
    });
    wait_subscribers(&raw, CHANNEL, 1).await;
    let killed: i64 = redis::cmd("CLIENT").arg("KILL").arg("TYPE").arg("pubsub").query_async(&mut raw).await.unwrap();
    assert_eq!(killed, 1);
    // Released while the waiter's subscription may be gone: the message can be lost.
    let released = Instant::now();
    guard.release().await.unwrap();
    let (acquired, _hold) = waiter.await.unwrap().unwrap();
    assert!(acquired - released < Duration::from_secs(3), "waiter retried after the reconnect ({:?}), not at the 20 s TTL", acquired - released);
    wait_subscribers(&raw, CHANNEL, 0).await;
    lock.release().await.unwrap();
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
}

/// Acquires cancelled at random points under contention leave no hold and no subscription.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_cancellation_leaves_nothing_behind() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    let clients = [client(&server.url(), 2000).await, client(&server.url(), 2000).await];
    let cancelled = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let mut tasks = Vec::new();
    for (i, c) in clients.iter().enumerate() {
        for t in 0..8u64 {
            let lock = c.lock("contended").unwrap();
            let cancelled = cancelled.clone();
            let mut conn = server.raw().await;
            tasks.push(tokio::spawn(async move {
                let mut seed = (i as u64 + 1) * 7919 + t * 104_729;
                for _ in 0..60 {
                    seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                    let budget = Duration::from_micros(seed >> 54); // 0 .. ~1 ms
                    match tokio::time::timeout(budget, lock.acquire()).await {
                        Ok(guard) => {
                            let guard = guard.unwrap();
                            let v: i64 = conn.get::<_, Option<i64>>("counter").await.unwrap().unwrap_or(0);
                            let _: () = conn.set("counter", v + 1).await.unwrap();
                            guard.release().await.unwrap();
                        }
                        Err(_) => {
                            cancelled.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                    }
                }
            }));
        }
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert!(cancelled.load(std::sync::atomic::Ordering::Relaxed) > 0, "some acquires were cancelled");
    // Undo releases of abandoned acquisitions run in the background (the server
    // changes a moment before the local view): wait for both.
    eventually(Duration::from_secs(5), "lock free, unsubscribed, nothing held locally", || {
        let mut raw = raw.clone();
        let held: usize = clients.iter().map(|c| c.held_count()).sum();
        async move { held == 0 && !raw.exists::<_, bool>("contended").await.unwrap() && numsub(&mut raw, CHANNEL).await == 0 }
    })
    .await;
    for c in &clients {
        c.shutdown().await.unwrap();
    }
    let mut left = keys(&mut raw).await;
    left.retain(|k| k != "counter");
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// Two clients taking turns on a lock, each waiting for the other's release: each
/// subscribes once, not at every wait (the subscription outlives a client's last
/// waiter by a moment), and both subscriptions still go once nobody waits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_taking_turns_subscribe_once_and_leave_when_nobody_waits() {
    const TURNS: usize = 20;
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    let clients = [client(&server.url(), 10_000).await, client(&server.url(), 10_000).await];
    let subscribes = command_calls(&mut raw, &["subscribe"]).await;
    let first = clients[0].lock("contended").unwrap().acquire().await.unwrap();
    let done: Arc<[std::sync::atomic::AtomicBool; 2]> = Arc::default();
    let mut tasks = Vec::new();
    for (me, other) in [(0, 1), (1, 0)] {
        let (mine, theirs, done) = (clients[me].clone(), clients[other].clone(), done.clone());
        tasks.push(tokio::spawn(async move {
            let lock = mine.lock("contended").unwrap();
            for _ in 0..TURNS {
                let guard = lock.acquire().await.unwrap();
                // Hold until the other client waits (or has taken all its turns),
                // so that every take follows a wait.
                eventually(Duration::from_secs(10), "the other client to wait", || {
                    let waiting = theirs.metrics().waiters_now == 1 || done[other].load(std::sync::atomic::Ordering::Acquire);
                    async move { waiting }
                })
                .await;
                guard.release().await.unwrap();
            }
            done[me].store(true, std::sync::atomic::Ordering::Release);
        }));
        if me == 0 {
            // Client 1's task starts once client 0's waits behind `first`.
            eventually(Duration::from_secs(10), "client 0 to wait", || {
                let waiting = clients[0].metrics().waiters_now == 1;
                async move { waiting }
            })
            .await;
        }
    }
    eventually(Duration::from_secs(10), "client 1 to wait", || {
        let waiting = clients[1].metrics().waiters_now == 1;
        async move { waiting }
    })
    .await;
    first.release().await.unwrap();
    for t in tasks {
        tokio::time::timeout(Duration::from_secs(60), t).await.expect("every turn taken").unwrap();
    }
    let subscribed = command_calls(&mut raw, &["subscribe"]).await - subscribes;
    // Measured: 2 (one per client); about one per turn (~20) without the linger. A
    // turn slower than the linger on a loaded machine costs one more.
    assert!(subscribed <= TURNS as u64 / 3, "{subscribed} SUBSCRIBEs for {} waits: the subscription did not outlive its waiter", 2 * TURNS);
    wait_subscribers(&raw, CHANNEL, 0).await;
    for c in clients {
        c.shutdown().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_joining_a_lingering_subscription_parks_after_one_try() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    // Held by someone else, with no watchdog of ours: the only scripts are the waiter's.
    let _: () = raw.hset("contended", "someone:1", 1).await.unwrap();
    let _: () = raw.pexpire("contended", 60_000).await.unwrap();
    let c = client(&server.url(), 10_000).await;
    let lock = c.lock("contended").unwrap();
    // A wait that gives up leaves the channel subscribed for a moment; a wait that
    // comes within it finds the subscription live and no message since its try, so
    // it parks without the try after registering. A machine too slow to come back
    // within the linger subscribes again (and tries twice): try again then.
    let mut joined = false;
    for _ in 0..20 {
        assert!(lock.acquire_with(AcquireOptions::wait(Duration::from_millis(20))).await.unwrap().is_none());
        let (subscribes, scripts) = (command_calls(&mut raw, &["subscribe"]).await, script_calls(&mut raw).await);
        let waiting = tokio::spawn({
            let lock = lock.clone();
            async move { lock.acquire().await.unwrap().release().await.unwrap() }
        });
        eventually(Duration::from_secs(10), "the waiter parked", || {
            let parked = c.metrics().waiters_now == 1;
            async move { parked }
        })
        .await;
        if command_calls(&mut raw, &["subscribe"]).await == subscribes {
            assert_eq!(script_calls(&mut raw).await - scripts, 1, "one try, then parked on the lingering subscription");
            // Still woken by the release's message.
            let _: () = raw.del("contended").await.unwrap();
            let _: i64 = raw.publish(CHANNEL, "0").await.unwrap();
            tokio::time::timeout(Duration::from_secs(10), waiting).await.expect("woken by the message").unwrap();
            joined = true;
            break;
        }
        waiting.abort();
        let _ = waiting.await;
    }
    assert!(joined, "no wait came within the linger in 20 rounds");
    c.shutdown().await.unwrap();
}
