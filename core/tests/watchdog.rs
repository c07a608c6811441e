//! Lease renewal and loss detection.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use ferrolock::{AcquireOptions, ErrorKind};
use redis::AsyncCommands;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watchdog_keeps_a_lock_for_five_times_its_timeout() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    let client = client(&server.url(), 600).await;
    let lock = client.lock("kept").unwrap();
    let guard = lock.acquire().await.unwrap();
    let until = Instant::now() + Duration::from_millis(3000);
    let mut lowest = i64::MAX;
    // Watch the PTTL over five leases: it is renewed before it runs out.
    while Instant::now() < until {
        let pttl: i64 = raw.pttl("kept").await.unwrap();
        lowest = lowest.min(pttl);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(lowest > 0, "lock expired under the watchdog (lowest PTTL {lowest})");
    assert!(!guard.is_lost());
    assert!(lock.is_held().await.unwrap());
    guard.release().await.unwrap();
    client.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_explicit_lease_expires_without_renewal_and_is_reported() {
    let server = RedisServer::start();
    let raw = server.raw().await;
    let client = client(&server.url(), 600).await;
    let lock = client.lock("leased").unwrap();
    let options = AcquireOptions::wait(Duration::ZERO).with_lease(Duration::from_millis(700));
    let guard = lock.acquire_with(options).await.unwrap().unwrap();
    let report = client.renew_held_locks().await.unwrap();
    assert_eq!((report.renewed, report.script_calls), (0, 0), "no watchdog for an explicit lease");
    let acquired = Instant::now();
    let err = tokio::time::timeout(Duration::from_secs(3), guard.lost()).await.expect("loss reported at the lease end");
    assert_eq!(err.kind(), ErrorKind::LockLost);
    assert!(acquired.elapsed() <= Duration::from_millis(750), "reported at the lease's end: {:?}", acquired.elapsed());
    eventually(Duration::from_secs(2), "key expired", || {
        let mut raw = raw.clone();
        async move { !raw.exists::<_, bool>("leased").await.unwrap() }
    })
    .await;
    assert!(acquired.elapsed() >= Duration::from_millis(650), "not renewed: {:?}", acquired.elapsed());
    assert!(lock.is_lost());
    // Releasing a lost hold tells the caller it was lost.
    assert_eq!(guard.release().await.unwrap_err().kind(), ErrorKind::LockLost);
    client.shutdown().await.unwrap();
}

/// The client's one deadline timer sleeps until the earliest deadline it knows of:
/// a hold taken later with a much earlier deadline must wake it sooner.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_later_hold_with_an_earlier_deadline_is_reported_at_its_own() {
    let server = RedisServer::start();
    let client = client(&server.url(), 30_000).await;
    let long = client.lock("long").unwrap();
    let long_guard = long.acquire().await.unwrap();
    let short = client.lock("short").unwrap();
    let options = AcquireOptions::wait(Duration::ZERO).with_lease(Duration::from_millis(500));
    let short_guard = short.acquire_with(options).await.unwrap().unwrap();
    let err = tokio::time::timeout(Duration::from_secs(10), short_guard.lost())
        .await
        .expect("reported at its lease's end, not at the first hold's deadline (30 s)");
    assert_eq!(err.kind(), ErrorKind::LockLost);
    assert!(!long_guard.is_lost(), "the long hold is untouched");
    // And the timer still watches the long one: it goes on being held and renewed.
    assert_eq!(client.renew_held_locks().await.unwrap().renewed, 1);
    long_guard.release().await.unwrap();
    client.shutdown().await.unwrap();
}

/// Deletes the lock behind the holder's back in three ways; each loss is reported
/// within one renewal interval (plus scheduling slack).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loss_is_reported_within_one_renewal_interval() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    let watchdog = Duration::from_millis(1500);
    let interval = watchdog / 3;
    let client = client(&server.url(), watchdog.as_millis() as u64).await;
    let other = common::client(&server.url(), 1500).await;
    let lost_events = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    for how in ["DEL", "force unlock", "FLUSHALL"] {
        let lock = client.lock("victim").unwrap();
        let events = lost_events.clone();
        lock.set_on_lost(Some(std::sync::Arc::new(move |e: &ferrolock::LostEvent| {
            events.lock().unwrap().push(e.error.kind());
        })));
        let guard = lock.acquire().await.unwrap();
        let removed = Instant::now();
        match how {
            "DEL" => {
                let _: i64 = raw.del("victim").await.unwrap();
            }
            "force unlock" => assert!(other.lock("victim").unwrap().force_unlock().await.unwrap()),
            _ => {
                let _: () = redis::cmd("FLUSHALL").query_async(&mut raw).await.unwrap();
            }
        }
        let err = tokio::time::timeout(interval * 3, guard.lost()).await.unwrap_or_else(|_| panic!("{how}: loss not reported"));
        let took = removed.elapsed();
        assert!(took <= interval + Duration::from_millis(250), "{how}: reported after {took:?}, interval {interval:?}");
        assert!(err.message().contains("victim"), "{err}");
        assert!(lock.is_lost());
        // Someone else may take it now, and our late renewals do not touch it.
        let theirs = other.lock("victim").unwrap().acquire().await.unwrap();
        client.renew_held_locks().await.unwrap();
        assert!(theirs.lock().is_held().await.unwrap());
        assert!(!lock.is_held().await.unwrap());
        theirs.release().await.unwrap();
        assert_eq!(guard.release().await.unwrap_err().kind(), ErrorKind::LockLost);
    }
    eventually(Duration::from_secs(2), "three on_lost callbacks", || {
        let n = lost_events.lock().unwrap().len();
        async move { n == 3 }
    })
    .await;
    assert!(lost_events.lock().unwrap().iter().all(|k| *k == ErrorKind::LockLost));
    client.shutdown().await.unwrap();
    other.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_holder_is_succeeded_within_its_lease() {
    let server = RedisServer::start();
    let lease = Duration::from_millis(1000);
    let mut holder = Command::new(example_binary("hold"))
        .args(["--url", &server.url(), "--name", "crashy", "--watchdog-ms", &lease.as_millis().to_string()])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(holder.stdout.take().unwrap()).lines();
    let first = tokio::task::spawn_blocking(move || lines.next().unwrap().unwrap()).await.unwrap();
    assert!(first.starts_with("acquired owner="), "{first}");

    let client = client(&server.url(), 3000).await;
    let lock = client.lock("crashy").unwrap();
    let waiter = tokio::spawn({
        let lock = lock.clone();
        async move { lock.acquire().await.map(|g| (Instant::now(), g.into_hold())) }
    });
    // Let the holder renew a few times while the waiter waits.
    let mut raw = server.raw().await;
    eventually(Duration::from_secs(5), "waiter subscribed", || {
        let mut raw = raw.clone();
        async move { numsub(&mut raw, "redisson_lock__channel:{crashy}").await == 1 }
    })
    .await;
    tokio::time::sleep(lease).await; // the holder keeps it alive meanwhile
    assert!(!waiter.is_finished(), "still held by the live holder");
    // kill -9: no release message, no more renewals.
    let killed = Instant::now();
    let pttl: i64 = raw.pttl("crashy").await.unwrap();
    holder.kill().unwrap();
    holder.wait().unwrap();
    let (acquired_at, _hold) = waiter.await.unwrap().unwrap();
    let took = acquired_at - killed;
    assert!(took <= lease + lease / 10, "acquired {took:?} after the kill; lease {lease:?}");
    assert!(took + Duration::from_millis(50) >= Duration::from_millis(pttl as u64), "waited for the expiry: {took:?} vs PTTL {pttl}");
    lock.release().await.unwrap();
    client.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renewals_go_at_most_a_hundred_holds_per_script_call() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    let client = client(&server.url(), 30_000).await;
    let mut locks = Vec::new();
    for i in 0..250 {
        let lock = client.lock(format!("many:{i}")).unwrap();
        lock.acquire().await.unwrap().into_hold();
        locks.push(lock);
    }
    let calls = script_calls(&mut raw).await;
    let report = client.renew_held_locks().await.unwrap();
    assert_eq!((report.renewed, report.lost, report.failed), (250, 0, 0));
    assert_eq!(report.script_calls, 3, "250 holds in batches of at most 100");
    assert_eq!(script_calls(&mut raw).await - calls, 3);
    client.shutdown().await.unwrap();
    assert!(keys(&mut raw).await.is_empty(), "shutdown released all 250");
}
