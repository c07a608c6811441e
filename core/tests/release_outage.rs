//! A release whose reply is lost while Redis then stays unreachable longer than the
//! retry window (the unlock latch's TTL): the release still settles truthfully. The
//! caller is told it released (never that it still holds, never a loss), nothing is
//! left in Redis that no live hold of the client accounts for once Redis answers
//! again, and a same-client successor the lock was handed to keeps a hold that is
//! really its own (or is told of its loss with its field removed).

mod common;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use common::*;
use ferrolock::{AcquireOptions, Client, ErrorKind, Lock, Released};
use redis::AsyncCommands;

/// Longer than the retry window (1 s) plus a reconnect: the release gives up on its
/// latch while Redis is still unreachable.
const OUTAGE: Duration = Duration::from_millis(2500);

/// Response and connect timeouts of 500 ms, a retry window of 1 s, a 10 s watchdog lease.
async fn outage_client(url: &str) -> Client {
    builder(url, 10_000).retry_window(Duration::from_secs(1)).connect().await.unwrap()
}

async fn fields(raw: &mut redis::aio::MultiplexedConnection, name: &str) -> HashMap<String, i64> {
    raw.hgetall(name).await.unwrap()
}

/// Releases `lock` (one level) while its reply is held back, and once `ran` says the
/// release script has run on the server, holds all traffic for [`OUTAGE`]. Returns
/// what the release answered, how long after the outage began it answered, and the
/// moment the network healed.
async fn release_through_outage<F, Fut>(proxy: &FaultProxy, lock: &Lock, ran: F) -> (ferrolock::Result<Released>, Duration, Instant)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    proxy.delay_next_reply_to(b"redisson_unlock_latch", Duration::from_secs(60));
    let release = tokio::spawn({
        let lock = lock.clone();
        async move {
            let released = lock.release().await;
            (released, Instant::now())
        }
    });
    eventually(Duration::from_secs(5), "the release ran on the server", ran).await;
    proxy.set_blackhole(true);
    let dark = Instant::now();
    let (released, answered) = tokio::time::timeout(Duration::from_secs(20), release).await.expect("the release answers").unwrap();
    // The fault itself lasts OUTAGE; this waits out the fault, not a state.
    tokio::time::sleep_until((dark + OUTAGE).into()).await;
    proxy.set_blackhole(false);
    (released, answered.saturating_duration_since(dark), Instant::now())
}

/// Spawns `lock.acquire()` and returns once it waits, parked, for the lock (a release
/// of the same client may then hand the lock to it).
async fn spawn_waiter(client: &Client, lock: &Lock) -> tokio::task::JoinHandle<ferrolock::Result<ferrolock::Hold>> {
    let parked = client.waiting_acquires();
    let waiting = tokio::spawn({
        let lock = lock.clone();
        async move { lock.acquire_with(AcquireOptions::default()).await.map(|g| g.expect("an unbounded wait acquires").into_hold()) }
    });
    eventually(Duration::from_secs(5), "the waiter parked", || {
        let now = client.waiting_acquires();
        async move { now == parked + 1 }
    })
    .await;
    waiting
}

fn watch_losses(lock: &Lock) -> std::sync::Arc<std::sync::atomic::AtomicU64> {
    let losses = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let count = losses.clone();
    lock.set_on_lost(Some(std::sync::Arc::new(move |_| {
        count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    })));
    losses
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_whose_reply_is_lost_in_a_long_outage_reports_no_loss() {
    let server = RedisServer::start();
    let proxy = FaultProxy::start(server.port).await;
    let raw = server.raw().await;
    let c = outage_client(&proxy.url()).await;
    let other = client(&server.url(), 10_000).await;
    let name = "outage-plain";
    let a = c.lock(name).unwrap();
    let losses = watch_losses(&a);
    let hold = a.acquire().await.unwrap().into_hold();

    let (released, answered, healed) = release_through_outage(&proxy, &a, || {
        let mut raw = raw.clone();
        async move { !raw.exists::<_, bool>(name).await.unwrap() }
    })
    .await;
    // A truthful answer: the release took effect (Redis ran it); the caller is neither
    // told it still holds the level nor that it lost it.
    let released = released.map_err(|e| format!("{:?}: {e}", e.kind()));
    assert!(answered < OUTAGE, "the release answered during the outage ({answered:?}), so the outage outlasted its retries");
    // Once Redis answers, nothing of it is left and others get the lock at once.
    let mut check = raw.clone();
    let left = fields(&mut check, name).await;
    let wait = (healed + Duration::from_millis(2500)).saturating_duration_since(Instant::now());
    let taken = other.lock(name).unwrap().acquire_with(AcquireOptions::wait(wait)).await.unwrap();
    let taken_after = healed.elapsed();
    // Releasing again is what the old error told callers to do: it must not report a loss.
    let again = a.release().await.map_err(|e| e.kind());
    // A renewal round after the outage must not find a "lost" hold either.
    c.renew_held_locks().await.unwrap();
    let lost = (a.is_lost(), hold.is_lost(), c.metrics().losses);
    eprintln!(
        "plain: release -> {released:?} after {answered:?} of outage; fields at the heal {left:?}; \
         another client acquired: {} ({taken_after:?} after the heal); release again -> {again:?}; \
         lost (lock, hold, metric) {lost:?}",
        taken.is_some()
    );
    assert_eq!(released, Ok(Released::Unlocked));
    assert_eq!(a.local_hold_count(), 0);
    assert!(taken.is_some(), "another client acquires within 2.5 s of the heal");
    assert_eq!(again, Err(ErrorKind::NotOwner));
    assert_eq!(lost, (false, false, 0), "no loss is reported for a hold that was released");
    assert_eq!(losses.load(std::sync::atomic::Ordering::SeqCst), 0, "no on_lost call");
    taken.unwrap().release().await.unwrap();
    c.shutdown().await.unwrap();
    other.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partial_release_whose_reply_is_lost_in_a_long_outage_takes_one_level() {
    let server = RedisServer::start();
    let proxy = FaultProxy::start(server.port).await;
    let raw = server.raw().await;
    let c = outage_client(&proxy.url()).await;
    let name = "outage-partial";
    let a = c.lock(name).unwrap();
    let losses = watch_losses(&a);
    let outer = a.acquire().await.unwrap().into_hold();
    a.acquire().await.unwrap().into_hold();
    let owner = a.owner().to_string();

    let (released, _, healed) = release_through_outage(&proxy, &a, || {
        let (mut raw, owner) = (raw.clone(), owner.clone());
        async move { raw.hget::<_, _, Option<i64>>(name, &owner).await.unwrap() == Some(1) }
    })
    .await;
    let released = released.map_err(|e| format!("{:?}: {e}", e.kind()));
    eprintln!("partial: release -> {released:?}; local count {}", a.local_hold_count());
    assert_eq!(released, Ok(Released::StillHeld(1)));
    assert_eq!(a.local_hold_count(), 1);
    // The remaining level is the one Redis has, and it is still renewed.
    let mut check = raw.clone();
    eventually(Duration::from_secs(2), "one level on the server, renewed", || {
        let (c, mut raw, owner) = (&c, check.clone(), owner.clone());
        async move {
            let renewed = c.renew_held_locks().await.is_ok_and(|r| r.renewed == 1);
            renewed && raw.hget::<_, _, Option<i64>>(name, &owner).await.unwrap() == Some(1)
        }
    })
    .await;
    assert!(healed.elapsed() < Duration::from_secs(3));
    assert_eq!(a.release().await.unwrap(), Released::Unlocked);
    assert!(!check.exists::<_, bool>(name).await.unwrap(), "the last level freed the lock");
    assert!(!a.is_lost() && !outer.is_lost());
    assert_eq!(losses.load(std::sync::atomic::Ordering::SeqCst), 0);
    c.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hand_off_whose_reply_is_lost_in_a_long_outage_leaves_no_orphan() {
    // Unfenced, the successor is let go before the reply and keeps an unconfirmed hold meanwhile.
    hand_off_through_outage(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fenced_hand_off_whose_reply_is_lost_in_a_long_outage_leaves_no_orphan() {
    // Fenced, the successor waits for the token, so for the outcome, however late.
    hand_off_through_outage(true).await;
}

async fn hand_off_through_outage(fenced: bool) {
    let server = RedisServer::start();
    let proxy = FaultProxy::start(server.port).await;
    let raw = server.raw().await;
    let c = outage_client(&proxy.url()).await;
    let other = client(&server.url(), 10_000).await;
    let name = if fenced { "outage-handoff-fenced" } else { "outage-handoff" };
    let lock = |c: &Client| if fenced { c.fenced_lock(name).unwrap() } else { c.lock(name).unwrap() };
    let (a, b) = (lock(&c), lock(&c));
    let a_losses = watch_losses(&a);
    a.acquire().await.unwrap().into_hold();
    let waiting = spawn_waiter(&c, &b).await;
    let successor = b.owner().to_string();

    let (released, _, healed) = release_through_outage(&proxy, &a, || {
        let (mut raw, successor) = (raw.clone(), successor.clone());
        async move { raw.hget::<_, _, Option<i64>>(name, &successor).await.unwrap() == Some(1) }
    })
    .await;
    let released = released.map_err(|e| format!("{:?}: {e}", e.kind()));
    let handed = tokio::time::timeout(Duration::from_secs(10), waiting).await.expect("the waiter settles").unwrap();
    let handed = handed.map_err(|e| format!("{:?}: {e}", e.kind()));
    if fenced {
        let mut raw = raw.clone();
        let counter: Option<u64> = raw.get(format!("redisson_lock_token:{{{name}}}")).await.unwrap();
        let token = handed.as_ref().ok().and_then(|h| h.token());
        assert!(token.is_some() && token == counter, "the successor's token is the one the release took: {token:?} vs {counter:?}");
    }

    // Within 2 s of the heal, Redis holds exactly what live local holds account for,
    // and the outcome is settled: a hold b keeps is renewed by the watchdog again.
    let mut check = raw.clone();
    let settled_by = healed + Duration::from_secs(2);
    let mut seen = (HashMap::new(), 0, false);
    while Instant::now() < settled_by {
        let live = b.local_hold_count() > 0 && !b.is_lost();
        let expected: HashMap<String, i64> = if live { HashMap::from([(successor.clone(), 1)]) } else { HashMap::new() };
        let renewed = c.renew_held_locks().await.map(|r| r.renewed).unwrap_or(0);
        let now = fields(&mut check, name).await;
        seen = (now.clone(), renewed, live);
        if now == expected && (!live || renewed == 1) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let settled_after = healed.elapsed();
    eprintln!(
        "hand-off (fenced {fenced}): release -> {released:?}; successor's acquire -> {:?}; at {settled_after:?} after the heal: \
         fields {:?}, renewed {}, successor holds (local) {}, successor lost {:?}",
        handed.as_ref().map(|h| h.hold_count()),
        seen.0,
        seen.1,
        seen.2,
        b.lost_error().map(|e| e.message().to_string())
    );
    assert_eq!(released, Ok(Released::Unlocked));
    assert!(handed.is_ok(), "the successor's acquire succeeded");
    let live = seen.2;
    let expected: HashMap<String, i64> = if live { HashMap::from([(successor.clone(), 1)]) } else { HashMap::new() };
    assert_eq!(seen.0, expected, "nothing in Redis that no live hold accounts for, 2 s after the heal");
    assert!(!live || seen.1 == 1, "a hold the successor keeps is renewed again");
    if live {
        assert_eq!(b.release().await.unwrap(), Released::Unlocked);
    }
    let wait = (healed + Duration::from_millis(2500)).saturating_duration_since(Instant::now());
    let taken = lock(&other).acquire_with(AcquireOptions::wait(wait)).await.unwrap();
    assert!(taken.is_some(), "another client acquires within 2.5 s of the heal ({:?})", healed.elapsed());
    assert!(!a.is_lost(), "the releaser lost nothing");
    assert_eq!(a_losses.load(std::sync::atomic::Ordering::SeqCst), 0);
    assert_eq!(a.release().await.unwrap_err().kind(), ErrorKind::NotOwner);
    taken.unwrap().release().await.unwrap();
    c.shutdown().await.unwrap();
    other.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_that_reaches_no_server_fails_and_keeps_the_level() {
    let mut server = RedisServer::start();
    let c = outage_client(&server.url()).await;
    let a = c.lock("unreached").unwrap();
    let losses = watch_losses(&a);
    a.acquire().await.unwrap().into_hold();
    server.kill();
    // A call that finds the connection broken retires it: the release's connections are refused.
    assert!(a.is_held().await.is_err());
    let err = a.release().await.expect_err("nothing was sent");
    assert_eq!(err.kind(), ErrorKind::Connection, "{err}");
    assert_eq!(a.local_hold_count(), 1, "the level is still held, as the error says");
    assert!(!a.is_lost());
    assert_eq!(losses.load(std::sync::atomic::Ordering::SeqCst), 0);
    c.shutdown().await.unwrap();
}
