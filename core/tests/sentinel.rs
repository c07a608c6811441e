//! Behind Redis Sentinel (1 master + 1 replica + 3 sentinels, started by the
//! harness): lock, wait and wake, renew through the sentinel URL; a failover while
//! a lock is held and waited on; the replica acknowledgement; and the documented
//! unsafe case with the acknowledgement off (the test proves it can detect it).

mod common;

use std::time::{Duration, Instant};

use common::*;
use ferrolock::{AcquireOptions, ErrorKind, ReplicaAck};
use redis::AsyncCommands;

fn sentinel_client(set: &SentinelSet, watchdog_ms: u64) -> ferrolock::ClientBuilder {
    builder(&set.url(), watchdog_ms).connect_timeout(Duration::from_secs(2)).response_timeout(Duration::from_secs(2))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_wait_wake_and_renew_through_the_sentinels() {
    let set = SentinelSet::start().await;
    let a = sentinel_client(&set, 10_000).connect().await.unwrap();
    let b = sentinel_client(&set, 10_000).connect().await.unwrap();
    let guard = a.lock("s:lock").unwrap().acquire().await.unwrap();
    // The acquire waited for the replica (WAIT): the replica has the hold already.
    let mut replica = set.raw(set.replica_port().await).await;
    let owners: Vec<String> = replica.hkeys("s:lock").await.unwrap();
    assert_eq!(owners, [guard.lock().owner()], "the replica must have the hold when acquire returns");

    let lock = b.lock("s:lock").unwrap();
    let waiter = tokio::spawn(async move { lock.acquire().await.map(|g| (Instant::now(), g.into_hold())) });
    eventually(Duration::from_secs(10), "the waiter to park", || async { b.waiting_acquires() == 1 }).await;
    let report = a.renew_held_locks().await.unwrap();
    assert_eq!((report.renewed, report.lost), (1, 0));
    let released = Instant::now();
    guard.release().await.unwrap();
    let (acquired, _hold) = waiter.await.unwrap().unwrap();
    // Woken by the message, not by the 10 s lease running out.
    assert!(acquired - released < Duration::from_secs(3), "hand-off took {:?}", acquired - released);
}

/// SENTINEL FAILOVER while one client holds a lock and two others wait: the client
/// is usable on the new master within 5 s, the hold is renewed there or reported
/// lost (never silently gone), and both waiters get the lock in turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failover_keeps_holds_honest_and_lets_waiters_in() {
    let set = SentinelSet::start().await;
    let holder = sentinel_client(&set, 3_000).connect().await.unwrap();
    let waiters = sentinel_client(&set, 3_000).connect().await.unwrap();
    let guard = holder.lock("s:failover").unwrap().acquire().await.unwrap();
    let tasks: Vec<_> = (0..2)
        .map(|_| {
            let lock = waiters.lock("s:failover").unwrap();
            tokio::spawn(async move {
                let guard = lock.acquire_with(AcquireOptions::wait(Duration::from_secs(60))).await?;
                let guard = guard.expect("acquired within 60 s");
                guard.release().await.map(|_| ())
            })
        })
        .collect();
    eventually(Duration::from_secs(10), "both waiters to park", || async { waiters.waiting_acquires() == 2 }).await;

    let old = set.master_port().await;
    let new = set.failover().await;
    assert_ne!(old, new);
    let failed_over = Instant::now();
    // Usable on the new master: a fresh lock goes through within 5 s.
    let probe = holder.lock("s:probe").unwrap();
    loop {
        match probe.try_acquire().await {
            Ok(Some(g)) => {
                g.release().await.unwrap();
                break;
            }
            other => {
                assert!(failed_over.elapsed() < Duration::from_secs(5), "not usable 5 s after the failover: {other:?}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
    // The hold is either renewed on the new master or reported lost.
    let new_master = set.raw(new).await;
    eventually(Duration::from_secs(10), "the hold renewed on the new master or reported lost", || {
        let (mut conn, lock, owner) = (new_master.clone(), guard.lock().clone(), guard.lock().owner().to_string());
        let holder = holder.clone();
        async move {
            if lock.is_lost() {
                return true;
            }
            let held: bool = conn.hexists("s:failover", &owner).await.unwrap_or(false);
            held && holder.renew_held_locks().await.is_ok_and(|r| r.renewed == 1)
        }
    })
    .await;
    let lost = guard.lock().is_lost();
    let released = guard.release().await;
    assert_eq!(released.is_err(), lost, "a lost hold's release reports it: {released:?}");
    for task in tasks {
        tokio::time::timeout(Duration::from_secs(30), task).await.expect("waiter acquired").unwrap().unwrap();
    }
}

/// With the replica stopped, an acquire no replica acknowledges fails with the
/// typed error and leaves nothing locked; off, the same acquire succeeds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unacknowledged_acquire_fails_and_leaves_nothing_locked() {
    let set = SentinelSet::start().await;
    let checked = sentinel_client(&set, 5_000).replica_ack_timeout(Duration::from_millis(1500)).connect().await.unwrap();
    let unchecked = sentinel_client(&set, 5_000).replica_ack(ReplicaAck::Off).connect().await.unwrap();
    checked.lock("s:warm").unwrap().acquire().await.unwrap().release().await.unwrap();
    set.pause_replica().await;
    let err = checked.lock("s:ack").unwrap().acquire().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotReplicated, "{err:?}");
    assert!(err.message().contains("replica_ack"), "the message names the option: {}", err.message());
    let mut master = set.raw_master().await;
    eventually(Duration::from_secs(5), "the unacknowledged hold undone", || {
        let mut master = master.clone();
        async move { !master.exists::<_, bool>("s:ack").await.unwrap() }
    })
    .await;
    // A wait with a deadline keeps trying, then reports why it could not take it.
    let started = Instant::now();
    let lock = checked.lock("s:ack").unwrap();
    let err = lock.acquire_with(AcquireOptions::wait(Duration::from_secs(1))).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotReplicated);
    assert!(started.elapsed() < Duration::from_secs(8));
    let guard = unchecked.lock("s:ack").unwrap().acquire().await.unwrap();
    assert!(master.exists::<_, bool>("s:ack").await.unwrap());
    guard.release().await.unwrap();
    set.resume_replica().await;
    checked.lock("s:ack").unwrap().acquire().await.unwrap().release().await.unwrap();
}

/// The lock-loss script of the reliability literature, with the check off: the
/// hold is written to the master only, the replica is stopped, the master dies and
/// the replica is promoted. The lock is gone, another client gets it (the violation
/// is reproduced), and the first holder is told its hold was lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_check_a_failover_can_lose_a_lock_and_the_holder_is_told() {
    let mut set = SentinelSet::start().await;
    let first = sentinel_client(&set, 3_000).replica_ack(ReplicaAck::Off).connect().await.unwrap();
    let second = sentinel_client(&set, 3_000).replica_ack(ReplicaAck::Off).connect().await.unwrap();
    first.lock("s:warm").unwrap().acquire().await.unwrap().release().await.unwrap();
    set.pause_replica().await;
    // A stopped process's kernel still takes in what the master sends: cut the
    // replication link too, so the hold is on the master only.
    let mut master = set.raw_master().await;
    let _: i64 = redis::cmd("CLIENT").arg("KILL").arg("TYPE").arg("replica").query_async(&mut master).await.unwrap();
    let guard = first.lock("s:unsafe").unwrap().acquire().await.unwrap();
    let info: String = redis::cmd("INFO").arg("replication").query_async(&mut master).await.unwrap();
    assert!(info.contains("connected_slaves:0"), "the hold reached no replica: {info}");
    let old = set.kill_master().await;
    let resumed = set.resume_replica().await;
    let new = set.wait_for_new_master(old, Duration::from_secs(30)).await;
    assert_eq!(new, resumed);
    let other = second
        .lock("s:unsafe")
        .unwrap()
        .acquire_with(AcquireOptions::wait(Duration::from_secs(20)))
        .await
        .unwrap()
        .expect("the promoted replica never had the lock: another client takes it");
    eventually(Duration::from_secs(10), "the first holder told of the loss", || async { guard.lock().is_lost() }).await;
    assert_eq!(guard.release().await.unwrap_err().kind(), ErrorKind::LockLost);
    other.release().await.unwrap();
}

/// Separate credentials: the URL's for the data nodes (commands and pub/sub), the
/// builder's for the sentinels; a wrong one fails without echoing either.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sentinels_and_data_nodes_each_get_their_own_password() {
    let options = SentinelOptions {
        password: Some("data-pw".to_string()),
        sentinel_password: Some("sentinel-pw".to_string()),
        ..Default::default()
    };
    let set = SentinelSet::start_with(options).await;
    let err = sentinel_client(&set, 10_000).connect().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connection, "{err:?}");
    assert!(err.message().contains("the sentinels' own"), "says which credentials: {}", err.message());
    let wrong = sentinel_client(&set, 10_000).sentinel_password("nope").connect().await.unwrap_err();
    assert!(!wrong.message().contains("nope") && !wrong.message().contains("data-pw"), "{}", wrong.message());
    let a = sentinel_client(&set, 10_000).sentinel_password("sentinel-pw").connect().await.unwrap();
    let b = sentinel_client(&set, 10_000).sentinel_password("sentinel-pw").connect().await.unwrap();
    let guard = a.lock("s:auth").unwrap().acquire().await.unwrap();
    let lock = b.lock("s:auth").unwrap();
    let waiter = tokio::spawn(async move { lock.acquire().await.map(|g| g.into_hold()) });
    eventually(Duration::from_secs(10), "the waiter to park", || async { b.waiting_acquires() == 1 }).await;
    guard.release().await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), waiter).await.expect("woken by message").unwrap().unwrap();
}
