//! RLock and RFencedLock against ferrolock's reentrant and fenced locks on one name.

use std::time::{Duration, Instant};

use ferrolock::{AcquireOptions, Lock, LockStatus};

use crate::driver::{wake_up, LEASE};
use crate::Scene;

fn once() -> AcquireOptions {
    AcquireOptions::wait(Duration::ZERO)
}

/// The owner fields of the lock hash with their hold counts.
fn holders(status: &LockStatus) -> Vec<(String, u64)> {
    status.holders.iter().map(|h| (h.owner.clone(), h.count)).collect()
}

/// A lease set by a 30 s watchdog (not the driver's or ferrolock's default).
fn assert_watchdog_lease(status: &LockStatus) {
    let lease = status.remaining_lease.expect("held");
    assert!(lease > LEASE - Duration::from_secs(10) && lease <= LEASE, "lease left {lease:?}");
}

/// A ferrolock acquire waiting up to 30 s, on its own task; yields the hold's
/// token (0 without one) and when it was acquired.
fn spawn_waiter(lock: &Lock) -> tokio::task::JoinHandle<(u64, Instant)> {
    let lock = lock.clone();
    tokio::spawn(async move {
        let hold = lock.acquire_hold(AcquireOptions::wait(LEASE)).await.unwrap().expect("acquired within 30 s");
        (hold.token().unwrap_or(0), Instant::now())
    })
}

// row: redisson/get-lock
// row: redisson/lock
// row: redisson/try-lock
// row: redisson/try-lock-wait
// row: redisson/is-locked
// row: redisson/hold-count
// row: redisson/watchdog-timeout
pub async fn reentrant_lock(version: &'static str) {
    let mut s = Scene::start(version).await;
    let name = "interop-lock";
    let channel = format!("redisson_lock__channel:{{{name}}}");
    let ours = s.client.lock(name).unwrap();
    let java = s.java.owner().await;

    // Redisson holds twice: ferrolock sees its owner field with count 2 and the 30 s lease, and cannot enter.
    assert_eq!(s.java.call(&format!("lock try {name} 0")).await, "ok");
    assert_eq!(s.java.call(&format!("lock try {name} 0")).await, "ok");
    assert_eq!(s.java.call(&format!("lock holds {name}")).await, "2");
    let status = ours.status().await.unwrap();
    assert_eq!(holders(&status), [(java.clone(), 2)]);
    assert_watchdog_lease(&status);
    assert!(ours.is_locked().await.unwrap());
    assert!(ours.try_acquire().await.unwrap().is_none(), "Redisson's hold excludes ferrolock");
    // One release of two: still Redisson's.
    assert_eq!(s.java.call(&format!("lock unlock {name}")).await, "ok");
    assert_eq!(holders(&ours.status().await.unwrap()), [(java.clone(), 1)]);
    assert!(ours.acquire_hold(once()).await.unwrap().is_none(), "Redisson still holds one level");

    // Redisson's last release wakes a waiting ferrolock acquire.
    let waiter = spawn_waiter(&ours);
    s.ferrolock_waits(1).await;
    let released = Instant::now();
    s.java.send(&format!("lock unlock {name}"));
    let (_, acquired) = waiter.await.unwrap();
    assert_eq!(s.java.reply(LEASE).await, "ok");
    wake_up(version, "lock: Redisson unlock -> ferrolock waiter", acquired - released);

    // ferrolock holds twice: Redisson sees it locked, not by its thread, and cannot enter.
    assert!(ours.acquire_hold(once()).await.unwrap().is_some(), "re-entry");
    assert_eq!(ours.hold_count().await.unwrap(), 2);
    let status = ours.status().await.unwrap();
    assert_eq!(holders(&status), [(ours.owner().to_string(), 2)]);
    assert_watchdog_lease(&status);
    assert_eq!(s.java.call(&format!("lock locked {name}")).await, "true");
    assert_eq!(s.java.call(&format!("lock holds {name}")).await, "0");
    assert_eq!(s.java.call(&format!("lock try {name} 0")).await, "busy", "ferrolock's hold excludes Redisson");
    ours.release().await.unwrap();
    assert_eq!(s.java.call(&format!("lock try {name} 0")).await, "busy", "ferrolock still holds one level");

    // ferrolock's last release wakes a waiting Redisson.
    s.java_waits(&format!("lock try {name} {}", LEASE.as_millis()), &channel).await;
    let released = Instant::now();
    ours.release().await.unwrap();
    assert_eq!(s.java.reply(LEASE).await, "ok");
    wake_up(version, "lock: ferrolock release -> Redisson waiter", released.elapsed());
    assert_eq!(holders(&ours.status().await.unwrap()), [(java.clone(), 1)]);
    assert_eq!(s.java.call(&format!("lock holds {name}")).await, "1");

    assert_eq!(s.java.call(&format!("lock unlock {name}")).await, "ok");
    assert!(!ours.is_locked().await.unwrap());
    assert_eq!(s.java.call(&format!("lock locked {name}")).await, "false");
}

// row: redisson/fenced-lock
// row: redisson/lock-and-get-token
// row: redisson/try-lock-and-get-token
// row: redisson/get-token
pub async fn fenced_lock(version: &'static str) {
    let mut s = Scene::start(version).await;
    let name = "interop-fenced";
    let channel = format!("redisson_lock__channel:{{{name}}}");
    let ours = s.client.fenced_lock(name).unwrap();
    let java = s.java.owner().await;
    let mut tokens: Vec<(&str, u64)> = Vec::new();
    let token = |reply: String| -> u64 { reply.parse().unwrap_or_else(|_| panic!("a token, not {reply:?}")) };

    // Redisson takes it twice (a token each time, re-entry included); ferrolock sees both and cannot enter.
    tokens.push(("Redisson", token(s.java.call(&format!("fenced try {name} 0")).await)));
    tokens.push(("Redisson re-entry", token(s.java.call(&format!("fenced try {name} 0")).await)));
    let status = ours.status().await.unwrap();
    assert_eq!(holders(&status), [(java.clone(), 2)]);
    assert_watchdog_lease(&status);
    assert_eq!(status.last_token, Some(tokens[1].1));
    assert!(ours.try_acquire().await.unwrap().is_none(), "Redisson's hold excludes ferrolock");

    // Redisson's last release wakes a waiting ferrolock acquire, which gets the next token.
    let waiter = spawn_waiter(&ours);
    s.ferrolock_waits(1).await;
    assert_eq!(s.java.call(&format!("fenced unlock {name}")).await, "ok");
    assert!(ours.is_locked().await.unwrap(), "Redisson still holds one level");
    let released = Instant::now();
    s.java.send(&format!("fenced unlock {name}"));
    let (first, acquired) = waiter.await.unwrap();
    assert_eq!(s.java.reply(LEASE).await, "ok");
    wake_up(version, "fenced lock: Redisson unlock -> ferrolock waiter", acquired - released);
    tokens.push(("ferrolock", first));

    // ferrolock re-enters (a token again); Redisson sees the last token and cannot enter.
    let again = ours.acquire_hold(once()).await.unwrap().expect("re-entry");
    tokens.push(("ferrolock re-entry", again.token().expect("a fenced hold has a token")));
    assert_eq!(ours.token(), Some(tokens[3].1));
    let status = ours.status().await.unwrap();
    assert_eq!(holders(&status), [(ours.owner().to_string(), 2)]);
    assert_eq!(s.java.call(&format!("fenced token {name}")).await, tokens[3].1.to_string());
    assert_eq!(s.java.call(&format!("fenced try {name} 0")).await, "busy", "ferrolock's hold excludes Redisson");

    // ferrolock's last release wakes a waiting Redisson, which gets the next token.
    ours.release().await.unwrap();
    s.java_waits(&format!("fenced try {name} {}", LEASE.as_millis()), &channel).await;
    let released = Instant::now();
    ours.release().await.unwrap();
    let last = token(s.java.reply(LEASE).await);
    wake_up(version, "fenced lock: ferrolock release -> Redisson waiter", released.elapsed());
    tokens.push(("Redisson", last));
    assert_eq!(ours.status().await.unwrap().last_token, Some(last));
    assert_eq!(s.java.call(&format!("fenced token {name}")).await, last.to_string());
    assert_eq!(s.java.call(&format!("fenced unlock {name}")).await, "ok");

    println!("[redisson {version}] fenced tokens in order: {tokens:?}");
    for pair in tokens.windows(2) {
        assert!(pair[0].1 < pair[1].1, "tokens not strictly increasing across both sides: {tokens:?}");
    }
}
