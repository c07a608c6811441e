//! Server restarts: held locks are reported lost, waiters acquire once it is back.

mod common;

use std::time::{Duration, Instant};

use common::*;
use ferrolock::ErrorKind;

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
