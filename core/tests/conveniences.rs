//! What users of redis-py, pottery and node-redlock expect, and what operators see:
//! extend/reacquire of explicit leases, holder notes in the status, connection
//! names, metrics, and clear errors on a closed client. Against real redis-servers.

mod common;

use std::time::Duration;

use common::*;
use ferrolock::{AcquireOptions, ErrorKind, Lock, Quorum};
use redis::AsyncCommands;

fn with_lease(ms: u64) -> AcquireOptions {
    AcquireOptions::wait(Duration::ZERO).with_lease(Duration::from_millis(ms))
}

async fn pttl(raw: &mut redis::aio::MultiplexedConnection, key: &str) -> i64 {
    raw.pttl(key).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extend_set_lease_and_reacquire_change_an_explicit_lease() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    let client = client(&server.url(), 3000).await;
    let lock = client.lock("ext").unwrap();
    let hold = lock.acquire_hold(with_lease(2000)).await.unwrap().unwrap();

    let left = lock.extend(Duration::from_secs(5)).await.unwrap();
    assert!(left > Duration::from_millis(5000) && left <= Duration::from_millis(7000), "{left:?}");
    let ttl = pttl(&mut raw, "ext").await;
    assert!(ttl > 5000 && ttl <= 7000, "extend adds to what is left: {ttl}");

    assert_eq!(lock.set_lease(Duration::from_millis(900)).await.unwrap(), Duration::from_millis(900));
    let ttl = pttl(&mut raw, "ext").await;
    assert!(ttl > 0 && ttl <= 900, "set_lease replaces it: {ttl}");

    assert_eq!(lock.reacquire().await.unwrap(), Duration::from_millis(2000));
    let ttl = pttl(&mut raw, "ext").await;
    assert!(ttl > 900 && ttl <= 2000, "reacquire resets to the lease it was taken with: {ttl}");

    // The local deadline follows a shorter lease: the loss is told before Redis expires it.
    lock.set_lease(Duration::from_millis(300)).await.unwrap();
    let lost = tokio::time::timeout(Duration::from_secs(10), hold.lost()).await.expect("the loss is reported");
    assert_eq!(lost.kind(), ErrorKind::LockLost);
    assert!(lost.message().contains("300 ms"), "{lost}");
    let err = lock.extend(Duration::from_secs(1)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::LockLost, "{err}");
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn extend_refuses_what_it_cannot_do() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    let client = client(&server.url(), 3000).await;
    let lock = client.lock("ext2").unwrap();

    let err = lock.extend(Duration::from_secs(1)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotOwner, "{err}");

    let guard = lock.acquire().await.unwrap();
    let err = lock.extend(Duration::from_secs(1)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    assert!(err.message().contains("watchdog"), "{err}");
    // Released before the next acquire (a dropped guard releases in the background).
    guard.release().await.unwrap();

    let _hold = lock.acquire_hold(with_lease(5000)).await.unwrap().unwrap();
    for bad in [Duration::ZERO, Duration::from_secs(8 * 24 * 3600)] {
        assert_eq!(lock.extend(bad).await.unwrap_err().kind(), ErrorKind::InvalidArgument);
    }
    // Someone else deleted it: the extend finds the field gone and the hold is lost.
    let _: () = raw.del("ext2").await.unwrap();
    let err = lock.extend(Duration::from_secs(1)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::LockLost, "{err}");
    assert!(lock.is_lost());
    // The extend created nothing (the earlier release's unlock latch is swept in the background).
    eventually(Duration::from_secs(10), "nothing left", || {
        let mut raw = raw.clone();
        async move { keys(&mut raw).await.is_empty() }
    })
    .await;
    client.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redlock_extends_on_its_members() {
    let servers: Vec<RedisServer> = (0..3).map(|_| RedisServer::start()).collect();
    let mut clients = Vec::new();
    for s in &servers {
        clients.push(client(&s.url(), 3000).await);
    }
    let members = clients.iter().map(|c| c.lock("rl-ext").unwrap()).collect();
    let lock = Lock::multi(members, Quorum::Majority).unwrap();
    lock.acquire_hold(AcquireOptions::wait(Duration::from_secs(5)).with_lease(Duration::from_secs(2))).await.unwrap().unwrap();
    let left = lock.extend(Duration::from_secs(10)).await.unwrap();
    assert!(left > Duration::from_secs(10), "{left:?}");
    for s in &servers {
        let ttl = pttl(&mut s.raw().await, "rl-ext").await;
        assert!(ttl > 10_000 && ttl <= 12_000, "every member extended: {ttl}");
    }
    lock.release().await.unwrap();
    assert_eq!(lock.extend(Duration::from_secs(1)).await.unwrap_err().kind(), ErrorKind::NotOwner);
    for c in clients {
        c.shutdown().await.unwrap();
    }
}

#[tokio::test]
async fn a_holder_note_is_shown_by_status_and_lives_with_the_lease() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    let client = client(&server.url(), 3000).await;
    let lock = client.lock("noted").unwrap();
    assert_eq!(lock.set_holder_info(Some("x")).await.unwrap_err().kind(), ErrorKind::NotOwner);
    let _guard = lock.acquire().await.unwrap();
    let note = r#"{"host":"h1","pid":42,"cmd":"./report.sh"}"#;
    lock.set_holder_info(Some(note)).await.unwrap();
    let status = client.lock("noted").unwrap().status().await.unwrap();
    assert_eq!(status.holders.len(), 1);
    assert_eq!(status.holders[0].owner, lock.owner());
    assert_eq!(status.holders[0].info.as_deref(), Some(note));
    let key = format!("ferrolock_holder_info:{{noted}}:{}", lock.owner());
    let (note_ttl, lock_ttl) = (pttl(&mut raw, &key).await, pttl(&mut raw, "noted").await);
    assert!(note_ttl > 0 && note_ttl <= lock_ttl + 5, "the note expires with the lease: {note_ttl} vs {lock_ttl}");
    let long = "n".repeat(1025);
    assert_eq!(lock.set_holder_info(Some(&long)).await.unwrap_err().kind(), ErrorKind::InvalidArgument);
    lock.set_holder_info(None).await.unwrap();
    assert_eq!(lock.status().await.unwrap().holders[0].info, None);
    client.shutdown().await.unwrap();
}

async fn client_names(raw: &mut redis::aio::MultiplexedConnection) -> Vec<String> {
    let list: String = redis::cmd("CLIENT").arg("LIST").query_async(raw).await.unwrap();
    list.lines()
        .filter_map(|line| line.split(' ').find_map(|f| f.strip_prefix("name=")).map(str::to_string))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_connection_is_named_for_operators() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    let named = builder(&server.url(), 3000).app_name("billing-worker").connect().await.unwrap();
    let holder = named.lock("named").unwrap();
    let _guard = holder.acquire().await.unwrap();
    let waiter = named.lock("named").unwrap();
    let waiting = tokio::spawn(async move { waiter.acquire().await.map(|g| g.into_hold()) });
    eventually(Duration::from_secs(5), "waiter subscribed", || {
        let mut raw = raw.clone();
        async move { numsub(&mut raw, "redisson_lock__channel:{named}").await == 1 }
    })
    .await;
    let expected = format!("ferrolock:{}:billing-worker", named.id());
    let names = client_names(&mut raw).await;
    assert_eq!(names.iter().filter(|n| **n == expected).count(), 2, "command and pub/sub connections: {names:?}");
    drop(_guard);
    waiting.await.unwrap().unwrap();

    for bad in ["", "has space", "x".repeat(65).as_str()] {
        let err = builder(&server.url(), 3000).app_name(bad).connect().await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{bad:?}: {err}");
    }
    let plain = client(&server.url(), 3000).await;
    plain.lock("other").unwrap().is_locked().await.unwrap();
    assert!(client_names(&mut raw).await.contains(&format!("ferrolock:{}", plain.id())));
    named.shutdown().await.unwrap();
    plain.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_what_the_locks_did() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    let client = client(&server.url(), 3000).await;
    let a = client.lock("m").unwrap();
    let b = client.lock("m").unwrap();

    let guard = a.acquire().await.unwrap();
    assert!(b.try_acquire().await.unwrap().is_none());
    // A waiter that goes away counts as cancelled.
    let waiting = b.acquire();
    assert!(tokio::time::timeout(Duration::from_millis(50), waiting).await.is_err());
    let m = client.metrics();
    assert_eq!((m.acquired, m.not_acquired, m.cancelled, m.failed), (1, 1, 1, 0), "{m:?}");
    assert_eq!((m.holds_now, m.waiters_now), (1, 0));
    assert_eq!(m.wait.count, 3);

    client.renew_held_locks().await.unwrap();
    guard.release().await.unwrap();
    let _: () = raw.set("not-a-lock", "x").await.unwrap();
    assert_eq!(client.lock("not-a-lock").unwrap().try_acquire().await.unwrap_err().kind(), ErrorKind::WrongType);

    // A loss, and a reconnect after the server dropped every connection of ours.
    let hold = a.acquire().await.unwrap().into_hold();
    a.force_unlock().await.unwrap();
    client.renew_held_locks().await.unwrap();
    assert!(hold.is_lost());
    let _: () = redis::cmd("CLIENT").arg("KILL").arg("SKIPME").arg("yes").query_async(&mut raw).await.unwrap();
    let _ = a.is_locked().await;
    a.is_locked().await.unwrap();

    let m = client.metrics();
    assert_eq!((m.acquired, m.failed, m.losses), (2, 1, 1), "{m:?}");
    assert!(m.renewals >= 1, "{m:?}");
    assert_eq!(m.hold.count, 2, "two holds ended: {m:?}");
    assert!(m.reconnects >= 1, "{m:?}");
    assert_eq!(m.holds_now, 0);
    let text = m.to_prometheus();
    let series = format!("ferrolock_acquires_total{{client=\"{}\",outcome=\"acquired\"}} 2", client.id());
    assert!(text.lines().any(|l| l == series), "{text}");
    assert!(text.contains("# TYPE ferrolock_hold_seconds histogram"), "{text}");
    client.shutdown().await.unwrap();
}
