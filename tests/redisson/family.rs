//! RFairLock, RReadWriteLock and RPermitExpirableSemaphore against ferrolock's fair
//! lock, read-write lock and permit-expirable semaphore on one name: one queue in
//! arrival order across both, readers together and writers alone across both,
//! permits counted and released by id across both, wake-ups by message both ways.

use std::time::{Duration, Instant};

use ferrolock::AcquireOptions;
use redis::AsyncCommands;

use crate::driver::{wake_up, LEASE, WAKE_BOUND};
use crate::Scene;

async fn queue(raw: &mut redis::aio::MultiplexedConnection, name: &str) -> Vec<String> {
    raw.lrange(format!("redisson_lock_queue:{{{name}}}"), 0, -1).await.unwrap()
}

async fn queued(s: &Scene, name: &str, n: usize) {
    ferrolock_harness::eventually(Duration::from_secs(20), &format!("{n} in line"), || {
        let mut raw = s.raw.clone();
        async move { queue(&mut raw, name).await.len() == n }
    })
    .await;
}

// row: redisson/fair-lock
pub async fn fair_lock(version: &'static str) {
    let mut s = Scene::start(version).await;
    let name = "interop-fair";
    let java = s.java.owner().await;
    let holder = s.client.fair_lock(name).unwrap();
    let hold = holder.acquire_hold(AcquireOptions::wait(Duration::ZERO)).await.unwrap().expect("free");
    assert_eq!(s.java.call(&format!("fair try {name} 0")).await, "busy");

    // In line: ferrolock, then Redisson, then ferrolock again.
    let line_up = |lock: ferrolock::Lock| {
        tokio::spawn(async move {
            lock.acquire_hold(AcquireOptions::wait(LEASE)).await.unwrap().expect("its turn within 30 s");
            let got = Instant::now();
            lock.release().await.unwrap();
            (got, Instant::now())
        })
    };
    let first = s.client.fair_lock(name).unwrap();
    let first_owner = first.owner().to_string();
    let first = line_up(first);
    queued(&s, name, 1).await;
    s.java_waits(&format!("fair try {name} {}", LEASE.as_millis()), &format!("redisson_lock__channel:{{{name}}}:{java}")).await;
    queued(&s, name, 2).await;
    let third = s.client.fair_lock(name).unwrap();
    let third_owner = third.owner().to_string();
    let third = line_up(third);
    queued(&s, name, 3).await;
    assert_eq!(queue(&mut s.raw, name).await, [first_owner, java.clone(), third_owner]);

    drop(hold);
    holder.release().await.unwrap();
    let (first_got, first_released) = first.await.unwrap();
    assert_eq!(s.java.reply(LEASE).await, "ok", "Redisson's turn came second");
    wake_up(version, "fair lock: ferrolock release -> Redisson waiter (its own channel)", first_released.elapsed());
    assert!(!third.is_finished(), "the third waits for Redisson");
    let released = Instant::now();
    assert_eq!(s.java.call(&format!("fair unlock {name}")).await, "ok");
    let (third_got, _) = third.await.unwrap();
    wake_up(version, "fair lock: Redisson unlock -> ferrolock waiter (its own channel)", third_got - released);
    assert!(first_got < third_got);
    assert!(queue(&mut s.raw, name).await.is_empty());
    assert_eq!(s.java.call(&format!("fair locked {name}")).await, "false");
}

// row: redisson/read-lock
// row: redisson/write-lock
pub async fn read_write_lock(version: &'static str) {
    let mut s = Scene::start(version).await;
    let name = "interop-rw";
    let channel = format!("redisson_rwlock:{{{name}}}");
    let java = s.java.owner().await;
    let ours = s.client.read_write_lock(name).unwrap();
    let once = AcquireOptions::wait(Duration::ZERO);

    // Readers of both sides together; no writer on either side meanwhile.
    assert_eq!(s.java.call(&format!("read try {name} 0")).await, "ok");
    ours.read().acquire_hold(once).await.unwrap().expect("readers share");
    let owners: Vec<String> = ours.read().status().await.unwrap().holders.iter().map(|h| h.owner.clone()).collect();
    let mut expected = vec![java.clone(), ours.read().owner().to_string()];
    expected.sort();
    assert_eq!(owners, expected, "both readers, and no 'mode' entry");
    let other = s.client.read_write_lock(name).unwrap();
    assert!(other.write().acquire_hold(once).await.unwrap().is_none(), "no writer while Redisson reads");
    ours.read().release().await.unwrap();

    // Redisson's last read release wakes a ferrolock writer.
    let writer = other.write();
    let waiting = tokio::spawn(async move {
        writer.acquire_hold(AcquireOptions::wait(LEASE)).await.unwrap().expect("written within 30 s");
        (writer, Instant::now())
    });
    s.ferrolock_waits(1).await;
    let released = Instant::now();
    assert_eq!(s.java.call(&format!("read unlock {name}")).await, "ok");
    let (writer, got) = waiting.await.unwrap();
    wake_up(version, "rw lock: Redisson read unlock -> ferrolock writer", got - released);
    assert_eq!(s.java.call(&format!("read try {name} 0")).await, "busy", "ferrolock writes");
    assert_eq!(s.java.call(&format!("write try {name} 0")).await, "busy");

    // ferrolock's write release (1: wake all) wakes a Redisson reader. Redisson loses
    // a wake-all published between its retry script and its thread parking on the
    // latch (see Scene::java_waits_parked: the retry is all that can be seen from
    // outside), and then waits out the lease: its own writers have that window too.
    // So up to three tries, each from a fresh write hold; one woken by the message
    // is the proof (a release that did not publish fails all three).
    let mut woken = None;
    for attempt in 1..=3 {
        s.java_waits_parked(&format!("read try {name} {}", LEASE.as_millis()), &channel).await;
        let released = Instant::now();
        writer.release().await.unwrap();
        assert_eq!(s.java.reply(LEASE + WAKE_BOUND).await, "ok");
        let elapsed = released.elapsed();
        if elapsed < WAKE_BOUND || attempt == 3 {
            woken = Some(elapsed);
            break;
        }
        println!("[redisson {version}] rw lock: the reader missed the wake-all (Redisson's window before parking): again");
        assert_eq!(s.java.call(&format!("read unlock {name}")).await, "ok");
        writer.acquire_hold(once).await.unwrap().expect("free again");
    }
    wake_up(version, "rw lock: ferrolock write release -> Redisson reader", woken.unwrap());
    assert!(writer.acquire_hold(once).await.unwrap().is_none(), "Redisson reads");
    assert_eq!(s.java.call(&format!("read unlock {name}")).await, "ok");
    assert!(!writer.is_locked().await.unwrap());
}

// row: redisson/permit-semaphore
// row: redisson/permit-acquire
// row: redisson/permit-try-acquire
// row: redisson/permit-release
pub async fn permit_expirable_semaphore(version: &'static str) {
    let mut s = Scene::start(version).await;
    let name = "interop-expirable";
    let channel = format!("redisson_sc:{{{name}}}");
    let ours = s.client.permit_expirable_semaphore(name).unwrap();

    // Redisson sets 2 and takes one with a lease; ferrolock takes the other; none left on either side.
    assert_eq!(s.java.call(&format!("expirable set {name} 2")).await, "true");
    assert!(!ours.try_set_permits(5).await.unwrap(), "Redisson's count stands");
    let java_permit = s.java.call(&format!("expirable acquire {name} 0 60000")).await;
    assert_eq!(java_permit.len(), 32, "{java_permit:?}");
    let permit = ours.try_acquire(None).await.unwrap().expect("one left");
    assert_eq!(ours.available().await.unwrap(), 0);
    assert!(ours.try_acquire(None).await.unwrap().is_none());
    assert_eq!(s.java.call(&format!("expirable acquire {name} 0 -1")).await, "busy");

    // ferrolock's release wakes a waiting Redisson.
    s.java_waits(&format!("expirable acquire {name} {} -1", LEASE.as_millis()), &channel).await;
    let released = Instant::now();
    assert!(permit.release().await.unwrap());
    let java_second = s.java.reply(LEASE).await;
    assert_eq!(java_second.len(), 32, "{java_second:?}");
    wake_up(version, "expirable semaphore: ferrolock release -> Redisson waiter", released.elapsed());

    // Redisson's release wakes a waiting ferrolock.
    let waiting = tokio::spawn({
        let ours = ours.clone();
        async move {
            let permit = ours.acquire_with(Some(LEASE), None).await.unwrap().expect("a permit within 30 s");
            (permit.forget(), Instant::now())
        }
    });
    s.ferrolock_waits(1).await;
    let released = Instant::now();
    assert_eq!(s.java.call(&format!("expirable release {name} {java_permit}")).await, "ok");
    let (our_id, got) = waiting.await.unwrap();
    wake_up(version, "expirable semaphore: Redisson release -> ferrolock waiter", got - released);

    // Permits are released by id from either side.
    assert!(ours.release(&java_second).await.unwrap(), "ferrolock releases Redisson's permit by its id");
    assert_eq!(s.java.call(&format!("expirable release {name} {our_id}")).await, "ok");
    assert_eq!(s.java.call(&format!("expirable available {name}")).await, "2");

    // A Redisson permit that expires comes back to a ferrolock waiter with no message.
    assert_eq!(s.java.call(&format!("expirable acquire {name} 0 1000")).await.len(), 32);
    assert_eq!(s.java.call(&format!("expirable acquire {name} 0 1000")).await.len(), 32);
    let started = Instant::now();
    let back = ours.acquire_with(Some(LEASE), None).await.unwrap().expect("an expired permit came back");
    assert!(started.elapsed() < Duration::from_secs(10), "by the expiry, not the 30 s wait: {:?}", started.elapsed());
    back.release().await.unwrap();
}
