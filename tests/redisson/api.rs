//! The rows of docs/site/migration/redisson.md that the exclusion and wake-up tests
//! (locks.rs, counters.rs, family.rs, multi.rs) do not show: explicit leases, forced
//! unlocks, hold queries, interruptible and async acquires, several expirable permits
//! at once and their lease updates, and Redisson's replica check default. Each call is
//! made on both sides on one name.

use std::time::Duration;

use ferrolock::{AcquireOptions, ErrorKind};

use crate::driver::LEASE;
use crate::Scene;

/// A lease given at acquire: no renewal, the same PTTL seen from both sides.
// row: redisson/lock-lease
// row: redisson/try-lock-lease
// row: redisson/remain-ttl
pub async fn explicit_lease(version: &'static str) {
    let mut s = Scene::start(version).await;
    let name = "api-lease";
    let ours = s.client.lock(name).unwrap();
    // Redisson: tryLock(0, 10 s): ferrolock sees a 10 s lease and no more.
    assert_eq!(s.java.call(&format!("lock lease {name} 0 10000")).await, "ok");
    let left = ours.status().await.unwrap().remaining_lease.expect("held");
    assert!(left > Duration::from_secs(8) && left <= Duration::from_secs(10), "{left:?}");
    let ttl: u64 = s.java.call(&format!("lock ttl {name}")).await.parse().unwrap();
    assert!(ttl > 8000 && ttl <= 10000, "remainTimeToLive {ttl}");
    assert_eq!(s.java.call(&format!("lock unlock {name}")).await, "ok");
    assert_eq!(s.java.call(&format!("lock ttl {name}")).await, "-2", "free");
    // ferrolock: a 10 s lease, no wait; Redisson reads it with remainTimeToLive.
    let hold = ours
        .acquire_hold(AcquireOptions::wait(Duration::ZERO).with_lease(Duration::from_secs(10)))
        .await
        .unwrap()
        .expect("free");
    let ttl: u64 = s.java.call(&format!("lock ttl {name}")).await.parse().unwrap();
    assert!(ttl > 8000 && ttl <= 10000, "remainTimeToLive {ttl}");
    let left = ours.remaining_lease().await.unwrap().expect("held");
    assert!(left > Duration::from_secs(8) && left <= Duration::from_secs(10), "{left:?}");
    drop(hold);
    ours.release().await.unwrap();
}

/// forceUnlock / force_unlock break the other side's hold; the ferrolock holder is told.
// row: redisson/force-unlock
pub async fn force_unlock(version: &'static str) {
    let mut s = Scene::start(version).await;
    let name = "api-force";
    let ours = s.client.lock(name).unwrap();
    let guard = ours.acquire().await.unwrap();
    assert_eq!(s.java.call(&format!("lock force {name}")).await, "true");
    let lost = tokio::time::timeout(LEASE, guard.lost()).await.expect("the holder is told");
    assert_eq!(lost.kind(), ErrorKind::LockLost, "{lost}");
    assert_eq!(guard.release().await.unwrap_err().kind(), ErrorKind::LockLost);
    assert_eq!(s.java.call(&format!("lock try {name} 0")).await, "ok");
    assert!(s.client.lock(name).unwrap().force_unlock().await.unwrap());
    assert_eq!(s.java.call(&format!("lock mine {name}")).await, "false");
    assert_eq!(s.java.call(&format!("lock force {name}")).await, "false", "nothing left to break");
}

/// isHeldByCurrentThread / isHeldByThread against is_held / status().holders; unlock
/// by a non-holder.
// row: redisson/is-held
// row: redisson/is-held-by-thread
// row: redisson/unlock
pub async fn hold_queries(version: &'static str) {
    let mut s = Scene::start(version).await;
    let name = "api-held";
    let ours = s.client.lock(name).unwrap();
    let java = s.java.owner().await;
    let thread = s.java.call("thread").await;
    // Not held: Redisson's unlock throws IllegalMonitorStateException, ferrolock's release NotOwner.
    assert_eq!(s.java.call(&format!("lock tryunlock {name}")).await, "refused IllegalMonitorStateException");
    assert_eq!(ours.release().await.unwrap_err().kind(), ErrorKind::NotOwner);
    assert_eq!(s.java.call(&format!("lock try {name} 0")).await, "ok");
    assert_eq!(s.java.call(&format!("lock mine {name}")).await, "true");
    assert_eq!(s.java.call(&format!("lock heldby {name} {thread}")).await, "true");
    assert!(!ours.is_held().await.unwrap(), "another holder");
    let holders: Vec<String> = ours.status().await.unwrap().holders.iter().map(|h| h.owner.clone()).collect();
    assert_eq!(holders, [java.clone()], "Redisson's <client id>:<thread id>");
    assert_eq!(java.rsplit(':').next(), Some(thread.as_str()));
    assert_eq!(s.java.call(&format!("lock unlock {name}")).await, "ok");
    // ferrolock holds: Redisson's thread does not; ferrolock's handle does.
    let _guard = ours.acquire().await.unwrap();
    assert!(ours.is_held().await.unwrap());
    assert_eq!(s.java.call(&format!("lock mine {name}")).await, "false");
    assert_eq!(s.java.call(&format!("lock heldby {name} {thread}")).await, "false");
    ours.release().await.unwrap();
}

/// lockInterruptibly waits as long as it takes and is woken by ferrolock's release;
/// ferrolock's waiting acquire is given up by dropping it, leaving nothing held.
// row: redisson/lock-interruptibly
pub async fn interruptible(version: &'static str) {
    let mut s = Scene::start(version).await;
    let name = "api-interruptibly";
    let channel = format!("redisson_lock__channel:{{{name}}}");
    let ours = s.client.lock(name).unwrap();
    let guard = ours.acquire().await.unwrap();
    // A ferrolock wait given up (the Rust future dropped: Python's Ctrl-C, Node's abort) leaves nothing.
    let other = s.client.lock(name).unwrap();
    let waiting = tokio::spawn(async move { other.acquire().await });
    s.ferrolock_waits(1).await;
    waiting.abort();
    assert!(waiting.await.unwrap_err().is_cancelled());
    s.ferrolock_waits(0).await;
    // Redisson's interruptible wait is woken by the release.
    s.java_waits(&format!("lock interruptibly {name}"), &channel).await;
    guard.release().await.unwrap();
    assert_eq!(s.java.reply(LEASE).await, "ok");
    assert_eq!(ours.status().await.unwrap().holders.len(), 1, "Redisson's hold only");
    assert_eq!(s.java.call(&format!("lock unlock {name}")).await, "ok");
}

/// Redisson's async API (tryLockAsync / unlockAsync) against ferrolock's (every call is
/// async in Rust and Node; Python's ferrolock.aio).
// row: redisson/async
pub async fn async_api(version: &'static str) {
    let mut s = Scene::start(version).await;
    let name = "api-async";
    let ours = s.client.lock(name).unwrap();
    assert_eq!(s.java.call(&format!("lock tryasync {name} 0")).await, "ok");
    assert!(ours.try_acquire().await.unwrap().is_none(), "Redisson's async hold excludes ferrolock");
    assert_eq!(s.java.call(&format!("lock unlockasync {name}")).await, "ok");
    let guard = ours.try_acquire().await.unwrap().expect("free again");
    assert_eq!(s.java.call(&format!("lock tryasync {name} 0")).await, "busy");
    guard.release().await.unwrap();
}

/// Several expirable permits in one call (Redisson) and a permit's lease updated
/// (Redisson): ferrolock sees both; it takes one permit per call and has no update.
// row: redisson/permit-acquire-many
// row: redisson/permit-update-lease
pub async fn expirable_permits(version: &'static str) {
    let mut s = Scene::start(version).await;
    let name = "api-permits";
    let ours = s.client.permit_expirable_semaphore(name).unwrap();
    assert!(ours.try_set_permits(3).await.unwrap());
    let ids = s.java.call(&format!("expirable acquiren {name} 2 0 60000")).await;
    let ids: Vec<&str> = ids.split(',').collect();
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert_eq!(ours.available().await.unwrap(), 1);
    let seen = s.client.inspect(name).await.unwrap();
    let mut out: Vec<&str> = seen.permits_out.iter().map(|p| p.id.as_str()).collect();
    out.sort();
    let mut expected = ids.clone();
    expected.sort();
    assert_eq!(out, expected);
    assert_eq!(s.java.call(&format!("expirable update {name} {} 600000", ids[0])).await, "true");
    let seen = s.client.inspect(name).await.unwrap();
    let lease = seen.permits_out.iter().find(|p| p.id == ids[0]).and_then(|p| p.lease_left_ms).expect("a lease");
    assert!(lease > 500_000, "ferrolock sees the updated lease: {lease} ms");
    let ours_one = ours.try_acquire(Some(Duration::from_secs(60))).await.unwrap().expect("the third permit");
    assert_eq!(ours.available().await.unwrap(), 0);
    assert!(ours_one.release().await.unwrap());
    for id in ids {
        assert!(ours.release(id).await.unwrap(), "released by id from ferrolock");
    }
    assert_eq!(ours.available().await.unwrap(), 3);
}

/// Redisson's lock waits for its replicas (checkLockSyncedSlaves) by default; ferrolock's
/// replica acknowledgement (`one` by default) applies behind Sentinel and on a Cluster
/// (its tests: core/tests/replica_ack.rs, core/tests/failover.rs).
// row: redisson/check-lock-synced-slaves
pub async fn synced_slaves_default(version: &'static str) {
    let mut s = Scene::start(version).await;
    assert_eq!(s.java.call("config synced").await, "true");
}
