//! RSemaphore and RCountDownLatch against ferrolock's semaphore and latch on one name.

use std::time::{Duration, Instant};

use crate::driver::{wake_up, LEASE};
use crate::Scene;
use ferrolock_harness::command_calls;

// row: redisson/semaphore
// row: redisson/try-set-permits
// row: redisson/semaphore-acquire
// row: redisson/semaphore-try-acquire
// row: redisson/semaphore-release
// row: redisson/available-drain
// row: redisson/add-permits
pub async fn semaphore(version: &'static str) {
    let mut s = Scene::start(version).await;
    let name = "interop-semaphore";
    let channel = format!("redisson_sc:{{{name}}}");
    let ours = s.client.semaphore(name).unwrap();

    // Redisson sets 2 permits: ferrolock sees them and cannot set its own.
    assert_eq!(s.java.call(&format!("semaphore set {name} 2")).await, "true");
    assert_eq!(ours.available().await.unwrap(), 2);
    assert!(!ours.try_set_permits(5).await.unwrap(), "Redisson's count stands");
    assert_eq!(s.java.call(&format!("semaphore set {name} 5")).await, "false");

    // Redisson takes 1: ferrolock can take 1 of the one left, not 2; then Redisson gets none.
    assert_eq!(s.java.call(&format!("semaphore acquire {name} 1 0")).await, "ok");
    assert_eq!(ours.available().await.unwrap(), 1);
    assert!(!ours.acquire_permits(2, Some(Duration::ZERO)).await.unwrap(), "2 permits with 1 free");
    assert!(ours.acquire_permits(1, Some(Duration::ZERO)).await.unwrap());
    assert_eq!(s.java.call(&format!("semaphore available {name}")).await, "0");
    assert_eq!(s.java.call(&format!("semaphore acquire {name} 1 0")).await, "busy");

    // ferrolock's release wakes a waiting Redisson.
    s.java_waits(&format!("semaphore acquire {name} 1 {}", LEASE.as_millis()), &channel).await;
    let released = Instant::now();
    ours.release(1).await.unwrap();
    assert_eq!(s.java.reply(LEASE).await, "ok");
    wake_up(version, "semaphore: ferrolock release -> Redisson waiter", released.elapsed());
    // Redisson has both permits now.
    assert_eq!(ours.available().await.unwrap(), 0);
    assert!(!ours.acquire_permits(1, Some(Duration::ZERO)).await.unwrap());

    // Redisson's release wakes a waiting ferrolock acquire (of 2: one release of 2 permits).
    let waiter = tokio::spawn({
        let ours = ours.clone();
        async move {
            assert!(ours.acquire_permits(2, Some(LEASE)).await.unwrap(), "2 permits within 30 s");
            Instant::now()
        }
    });
    s.ferrolock_waits(1).await;
    let released = Instant::now();
    s.java.send(&format!("semaphore release {name} 2"));
    let acquired = waiter.await.unwrap();
    assert_eq!(s.java.reply(LEASE).await, "ok");
    wake_up(version, "semaphore: Redisson release -> ferrolock waiter", acquired - released);
    assert_eq!(s.java.call(&format!("semaphore available {name}")).await, "0");
    assert_eq!(s.java.call(&format!("semaphore acquire {name} 1 0")).await, "busy");

    // Permits are nobody's: ferrolock gives back 2, Redisson drains them.
    assert_eq!(ours.release(2).await.unwrap(), 2);
    assert_eq!(s.java.call(&format!("semaphore available {name}")).await, "2");
    assert_eq!(s.java.call(&format!("semaphore drain {name}")).await, "2");
    assert_eq!(ours.available().await.unwrap(), 0);

    // A ferrolock release with an acquire of its own client queued hands the permit
    // straight to it: it never goes free, so a waiting Redisson neither hears of it
    // nor gets it; the next release frees a permit and wakes Redisson.
    s.java_waits_parked(&format!("semaphore acquire {name} 1 {}", LEASE.as_millis()), &channel).await;
    let waiter = tokio::spawn({
        let ours = ours.clone();
        async move { ours.acquire_permits(1, Some(LEASE)).await.unwrap() }
    });
    s.ferrolock_waits(1).await;
    let publishes = command_calls(&mut s.raw, &["publish"]).await;
    assert_eq!(ours.release(1).await.unwrap(), 0, "handed over, not freed");
    assert!(waiter.await.unwrap(), "ferrolock's own waiter got the permit");
    assert_eq!(command_calls(&mut s.raw, &["publish"]).await, publishes, "nothing published");
    let free: Option<String> = redis::cmd("GET").arg(name).query_async(&mut s.raw).await.unwrap();
    assert_eq!(free.as_deref(), Some("0"));
    assert_eq!(ours.release(1).await.unwrap(), 1);
    assert_eq!(s.java.reply(LEASE).await, "ok", "Redisson woken by the release that freed a permit");
    assert_eq!(ours.available().await.unwrap(), 0);
}

// row: redisson/latch
// row: redisson/latch-count
// row: redisson/latch-await
pub async fn count_down_latch(version: &'static str) {
    let mut s = Scene::start(version).await;
    let name = "interop-latch";
    let channel = format!("redisson_countdownlatch__channel__{{{name}}}");
    let ours = s.client.count_down_latch(name).unwrap();

    // Redisson sets 2: ferrolock sees it, cannot set its own, and is not let through.
    assert_eq!(s.java.call(&format!("latch set {name} 2")).await, "true");
    assert_eq!(ours.count().await.unwrap(), 2);
    assert!(!ours.try_set_count(3).await.unwrap(), "Redisson's count stands");
    assert!(!ours.wait(Some(Duration::ZERO)).await.unwrap(), "closed at 2");

    // ferrolock counts down once: Redisson sees 1. (Redisson's await that times out is
    // checked last: it may leave Redisson subscribed, which java_waits refuses.)
    assert_eq!(ours.count_down().await.unwrap(), 1);
    assert_eq!(s.java.call(&format!("latch count {name}")).await, "1");

    // Redisson's count-down to 0 wakes a waiting ferrolock.
    let waiter = tokio::spawn({
        let ours = ours.clone();
        async move {
            assert!(ours.wait(Some(LEASE)).await.unwrap(), "opened within 30 s");
            Instant::now()
        }
    });
    s.ferrolock_waits(1).await;
    let counted = Instant::now();
    s.java.send(&format!("latch down {name}"));
    let opened = waiter.await.unwrap();
    assert_eq!(s.java.reply(LEASE).await, "ok");
    wake_up(version, "latch: Redisson countDown -> ferrolock waiter", opened - counted);
    assert_eq!(ours.count().await.unwrap(), 0);
    assert_eq!(s.java.call(&format!("latch count {name}")).await, "0");

    // Open again, ferrolock sets 1: Redisson sees it and cannot set its own.
    assert!(ours.try_set_count(1).await.unwrap());
    assert_eq!(s.java.call(&format!("latch count {name}")).await, "1");
    assert_eq!(s.java.call(&format!("latch set {name} 4")).await, "false");

    // ferrolock's count-down to 0 wakes a waiting Redisson.
    s.java_waits(&format!("latch await {name} {}", LEASE.as_millis()), &channel).await;
    let counted = Instant::now();
    assert_eq!(ours.count_down().await.unwrap(), 0);
    assert_eq!(s.java.reply(LEASE).await, "open");
    wake_up(version, "latch: ferrolock countDown -> Redisson waiter", counted.elapsed());
    assert_eq!(s.java.call(&format!("latch count {name}")).await, "0");
    assert!(ours.wait(Some(Duration::ZERO)).await.unwrap(), "open");

    // A count set by ferrolock keeps Redisson out until ferrolock's count-down.
    assert!(ours.try_set_count(1).await.unwrap());
    assert_eq!(s.java.call(&format!("latch await {name} 0")).await, "closed");
    assert_eq!(ours.count_down().await.unwrap(), 0);
    assert_eq!(s.java.call(&format!("latch await {name} 0")).await, "open");
}
