//! Faults: server restarts, lost and delayed replies, slow and cut-off links. Held locks
//! are kept while they can be renewed and reported lost before anyone else can hold them;
//! acquisitions with lost replies are settled, never left behind.

mod common;

use std::time::{Duration, Instant};

use common::*;
use ferrolock::{AcquireOptions, ErrorKind};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_while_holding_reports_the_loss() {
    let mut server = RedisServer::start();
    let watchdog = Duration::from_millis(1500);
    let client = client(&server.url(), watchdog.as_millis() as u64).await;
    let lock = client.lock("restarted").unwrap();
    let guard = lock.acquire().await.unwrap();
    let restarted = Instant::now();
    server.restart(); // comes back empty: the hold is gone
    let err = tokio::time::timeout(watchdog * 2, guard.lost()).await.expect("loss reported");
    assert_eq!(err.kind(), ErrorKind::LockLost);
    assert!(restarted.elapsed() <= watchdog, "reported within the lease: {:?}", restarted.elapsed());
    // The client works again after the restart.
    let again = lock.acquire().await.unwrap();
    assert!(lock.is_held().await.unwrap());
    again.release().await.unwrap();
    client.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_down_past_the_deadline_reports_the_loss_locally() {
    let mut server = RedisServer::start();
    let watchdog = Duration::from_millis(900);
    let client = client(&server.url(), watchdog.as_millis() as u64).await;
    let lock = client.lock("unreachable").unwrap();
    let guard = lock.acquire().await.unwrap();
    let acquired = Instant::now();
    server.kill();
    let err = tokio::time::timeout(watchdog * 3, guard.lost()).await.expect("loss reported at the local deadline");
    assert!(err.message().contains("ran out"), "{err}");
    let took = acquired.elapsed();
    assert!(took <= watchdog + Duration::from_millis(300), "at the monotonic deadline: {took:?}");
    client.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_while_waiting_lets_waiters_acquire_when_it_is_back() {
    let mut server = RedisServer::start();
    let holder_client = client(&server.url(), 20_000).await;
    let waiter_client = client(&server.url(), 20_000).await;
    let _held = holder_client.lock("restarted").unwrap();
    let _hold = _held.acquire().await.unwrap().into_hold();
    let mut waiters = Vec::new();
    for _ in 0..3 {
        let lock = waiter_client.lock("restarted").unwrap();
        waiters.push(tokio::spawn(async move {
            let guard = lock.acquire().await?;
            guard.release().await
        }));
    }
    let raw = server.raw().await;
    eventually(Duration::from_secs(5), "waiters subscribed", || {
        let mut raw = raw.clone();
        async move { numsub(&mut raw, "redisson_lock__channel:{restarted}").await == 1 }
    })
    .await;
    let restarted = Instant::now();
    server.restart();
    for w in waiters {
        w.await.unwrap().unwrap();
    }
    assert!(restarted.elapsed() < Duration::from_secs(5), "acquired after the restart, not at the 20 s TTL: {:?}", restarted.elapsed());
    holder_client.shutdown().await.unwrap();
    waiter_client.shutdown().await.unwrap();
}

/// Acquires `lock` `levels` times first (re-entry), then once more with the reply to
/// that acquire delayed past the response timeout and every read-back blackholed,
/// so the outcome stays unknown to the caller. Returns the caller's error.
async fn acquire_with_unknown_outcome(
    proxy: &FaultProxy,
    raw: &redis::aio::MultiplexedConnection,
    lock: &ferrolock::Lock,
    levels: u32,
) -> ferrolock::Error {
    use redis::AsyncCommands;
    let name = lock.name().to_string();
    for _ in 0..levels {
        lock.acquire().await.unwrap().into_hold();
    }
    proxy.delay_next_reply_to(name.as_bytes(), Duration::from_secs(4));
    let attempt = tokio::spawn({
        let lock = lock.clone();
        async move { lock.acquire_with(AcquireOptions::wait(Duration::from_secs(3))).await.map(|g| g.map(|g| g.into_hold())) }
    });
    // Once the script has run, cut the link so the read-backs cannot answer either.
    eventually(Duration::from_secs(5), "the acquire ran on the server", || {
        let (mut raw, name, owner) = (raw.clone(), name.clone(), lock.owner().to_string());
        async move { raw.hget::<_, _, Option<u32>>(&name, &owner).await.unwrap() == Some(levels + 1) }
    })
    .await;
    proxy.set_blackhole(true);
    let outcome = attempt.await.unwrap();
    proxy.set_blackhole(false);
    outcome.expect_err("the outcome stayed unknown to the caller")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acquire_reply_delayed_past_the_timeout_is_read_back_on_a_fresh_connection() {
    use redis::AsyncCommands;
    let server = RedisServer::start();
    let proxy = FaultProxy::start(server.port).await;
    let mut raw = server.raw().await;
    let c = client(&proxy.url(), 30_000).await;
    let other = client(&server.url(), 30_000).await;
    for (i, wait) in [None, Some(Duration::ZERO), Some(Duration::from_secs(3))].into_iter().enumerate() {
        let name = format!("delayed-{i}");
        let lock = c.lock(&name).unwrap();
        proxy.delay_next_reply_to(name.as_bytes(), Duration::from_secs(4));
        let started = Instant::now();
        let hold = lock.acquire_with(AcquireOptions { wait, lease: None }).await.unwrap().expect("acquired").into_hold();
        assert!(started.elapsed() < Duration::from_secs(3), "settled by a read-back, not the delayed reply: {:?}", started.elapsed());
        assert_eq!(hold.hold_count(), 1);
        assert_eq!(lock.hold_count().await.unwrap(), 1);
        let fields: std::collections::HashMap<String, u32> = raw.hgetall(&name).await.unwrap();
        assert_eq!(fields, std::collections::HashMap::from([(lock.owner().to_string(), 1)]));
        assert!(other.lock(&name).unwrap().try_acquire().await.unwrap().is_none());
        lock.release().await.unwrap();
        assert!(!raw.exists::<_, bool>(&name).await.unwrap(), "released: nothing left behind");
    }
    c.shutdown().await.unwrap();
    other.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acquire_whose_outcome_stays_unknown_is_undone_in_the_background() {
    use redis::AsyncCommands;
    let server = RedisServer::start();
    let proxy = FaultProxy::start(server.port).await;
    let raw = server.raw().await;
    let c = client(&proxy.url(), 30_000).await;
    let other = client(&server.url(), 30_000).await;
    for (name, fenced, levels) in [("unknown", false, 0), ("unknown-fenced", true, 0), ("unknown-reentry", false, 1)] {
        let lock = if fenced { c.fenced_lock(name).unwrap() } else { c.lock(name).unwrap() };
        let err = acquire_with_unknown_outcome(&proxy, &raw, &lock, levels).await;
        assert_eq!(err.kind(), ErrorKind::Connection, "{err}");
        // The caller was told it did not get it, and the local view agrees at once...
        assert_eq!(lock.local_hold_count(), levels);
        // ...and so does Redis once it answers: the extra level is given back, long before the 30 s lease.
        let mut check = raw.clone();
        eventually(Duration::from_secs(10), "the unknown acquisition was undone", || {
            let (mut raw, owner) = (check.clone(), lock.owner().to_string());
            async move { raw.hget::<_, _, Option<u32>>(name, &owner).await.unwrap().unwrap_or(0) == levels }
        })
        .await;
        assert_eq!(lock.hold_count().await.unwrap(), levels);
        if levels == 0 {
            // Freed and published as a release: another client gets it at once.
            let got = other.lock(name).unwrap().acquire_with(AcquireOptions::wait(Duration::from_secs(5))).await.unwrap();
            got.expect("free long before the lease ends").release().await.unwrap();
        } else {
            let pttl: i64 = check.pttl(name).await.unwrap();
            assert!(pttl > 20_000, "the remaining hold keeps its lease: {pttl}");
            lock.release().await.unwrap();
        }
        assert!(!check.exists::<_, bool>(name).await.unwrap());
    }
    c.shutdown().await.unwrap();
    other.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renewals_keep_a_hold_over_a_slow_link() {
    use redis::AsyncCommands;
    let server = RedisServer::start();
    let proxy = FaultProxy::start(server.port).await;
    let mut raw = server.raw().await;
    let watchdog = Duration::from_millis(1500);
    // 90 ms each way: every renewal takes 180 ms.
    proxy.set_one_way_delay(Duration::from_millis(90));
    let c = builder(&proxy.url(), watchdog.as_millis() as u64).response_timeout(Duration::from_secs(2)).connect().await.unwrap();
    let lock = c.lock("slow-link").unwrap();
    let guard = lock.acquire().await.unwrap();
    let renewals = script_calls(&mut raw).await;
    let kept = tokio::time::timeout(Duration::from_secs(10), guard.lost()).await;
    assert!(kept.is_err(), "the hold was kept for 10 s over a 180 ms round-trip: {:?}", kept.map(|e| e.to_string()));
    assert!(script_calls(&mut raw).await - renewals >= 10, "renewed all along");
    assert_eq!(raw.hget::<_, _, Option<u32>>("slow-link", lock.owner()).await.unwrap(), Some(1));
    // A round-trip of about a third of the lease: still kept.
    proxy.set_one_way_delay(Duration::from_millis(250));
    let kept = tokio::time::timeout(Duration::from_secs(5), guard.lost()).await;
    assert!(kept.is_err(), "kept with a round-trip of lease/3: {:?}", kept.map(|e| e.to_string()));
    proxy.set_one_way_delay(Duration::ZERO);
    guard.release().await.unwrap();
    c.shutdown().await.unwrap();
}

/// One trial of a holder cut off for 1.5 x its lease: returns (when the holder was told of
/// the loss, the send time of the other client's first successful attempt).
async fn cut_off_holder_trial(server: &RedisServer, i: usize, lease: Duration) -> (Instant, Instant) {
    use redis::AsyncCommands;
    let name = format!("cut-off-{i}");
    let proxy = FaultProxy::start(server.port).await;
    let mut raw = server.raw().await;
    let a = builder(&proxy.url(), lease.as_millis() as u64).drift_factor(0.05).connect().await.unwrap();
    let b = client(&server.url(), 30_000).await;
    let held = a.lock(&name).unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let tx = std::sync::Mutex::new(Some(tx));
    held.set_on_lost(Some(std::sync::Arc::new(move |e: &ferrolock::LostEvent| {
        if let Some(tx) = tx.lock().unwrap().take() {
            let _ = tx.send(e.at);
        }
    })));
    let _hold = held.acquire().await.unwrap().into_hold();
    proxy.set_blackhole(true);
    let cut_at = Instant::now();
    // The other client tries every 2 ms: the send time of its first success is no later
    // than the moment Redis granted it.
    let other = b.lock(&name).unwrap();
    let own_lease = Duration::from_secs(5);
    let (sent, guard) = loop {
        let sent = Instant::now();
        if let Some(g) = other.acquire_with(AcquireOptions::wait(Duration::ZERO).with_lease(own_lease)).await.unwrap() {
            break (sent, g);
        }
        assert!(cut_at.elapsed() < lease * 4, "the other client got in eventually");
        tokio::time::sleep(Duration::from_millis(2)).await;
    };
    let lost_at = rx.await.expect("the loss was told");
    // Keep the link down for 1.5 x lease in all, then let the late renewals through.
    tokio::time::sleep_until((cut_at + lease * 3 / 2).into()).await;
    let before = script_calls(&mut raw).await;
    proxy.set_blackhole(false);
    eventually(Duration::from_secs(5), "the late renewals reached the server", || {
        let mut raw = raw.clone();
        async move { script_calls(&mut raw).await > before }
    })
    .await;
    let pttl: i64 = raw.pttl(&name).await.unwrap();
    let fields: std::collections::HashMap<String, u32> = raw.hgetall(&name).await.unwrap();
    assert_eq!(fields, std::collections::HashMap::from([(other.owner().to_string(), 1)]), "only the new holder");
    assert!(pttl > lease.as_millis() as i64, "the late renewals did not touch the new holder's lease: PTTL {pttl}");
    guard.release().await.unwrap();
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
    (lost_at, sent)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_off_holder_is_told_of_its_loss_before_anyone_else_can_hold_the_lock() {
    let server = RedisServer::start();
    let lease = Duration::from_millis(800);
    let mut told_first = 0;
    // 20 trials, 5 at a time.
    for round in 0..4 {
        let trials = (0..5).map(|i| cut_off_holder_trial(&server, round * 5 + i, lease));
        for (lost_at, other_sent) in futures_util::future::join_all(trials).await {
            assert!(lost_at < other_sent, "the loss was told {:?} after the other client's winning attempt was sent", lost_at - other_sent);
            told_first += 1;
        }
    }
    assert_eq!(told_first, 20);
}
