//! Holder notes (who holds a lock) and waiters that say why they wait: a long hold
//! leaves a note, a short one writes nothing, `off` never writes, `always` writes
//! with the acquire; a timed-out acquire names the holder; a long wait logs it.
//! Against real redis-servers.

mod common;

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use ferrolock::{AcquireOptions, Client, HolderEntry, HolderNotes, Lock};
use redis::AsyncCommands;

const NOTE_KEY_PREFIX: &str = "ferrolock_holder_info:{";

/// The note key of the (only) holder of `lock`, as status names it.
fn note_key(name: &str, lock: &Lock) -> String {
    format!("{NOTE_KEY_PREFIX}{name}}}:{}", lock.owner())
}

/// Polls `lock`'s status until its first holder has a note (10 s at most).
async fn noted_holder(lock: &Lock) -> HolderEntry {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let status = lock.status().await.unwrap();
        if let Some(holder) = status.holders.into_iter().find(|h| h.note.is_some()) {
            return holder;
        }
        assert!(Instant::now() < until, "no holder note within 10 s");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Calls of `command` the server has run (scripts' calls included).
async fn calls(raw: &mut redis::aio::MultiplexedConnection, command: &str) -> u64 {
    let info: String = redis::cmd("INFO").arg("commandstats").query_async(raw).await.unwrap();
    let prefix = format!("cmdstat_{command}:calls=");
    info.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .map_or(0, |rest| rest.split(',').next().unwrap().parse().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_hold_leaves_a_note_that_follows_its_lease_and_goes_with_its_release() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    let client = builder(&server.url(), 1500).app_name("billing").holder_note_after(Duration::from_millis(200)).connect().await.unwrap();
    let lock = client.lock("noted").unwrap();
    lock.set_holder_label(Some("worker-3")).unwrap();
    lock.acquire_hold(AcquireOptions::default()).await.unwrap().unwrap();

    let holder = noted_holder(&lock).await;
    let note = holder.note.clone().unwrap();
    assert_eq!(note.app.as_deref(), Some("billing"));
    assert_eq!(note.pid, Some(u64::from(std::process::id())));
    assert_eq!(note.thread.as_deref(), Some("worker-3"));
    assert_eq!(note.renewed, Some(true));
    assert!(note.host.as_deref().is_some_and(|h| !h.is_empty()), "{note:?}");
    let held = holder.held_for.expect("since is on the note");
    assert!(held >= Duration::from_millis(150), "written once the hold lasted 200 ms, by the server's clock: {held:?}");
    let text = holder.describe();
    assert!(text.starts_with("billing on ") && text.contains(" pid ") && text.contains("(thread worker-3) for "), "{text}");

    // The note lives with the lease: still there after several watchdog leases (1.5 s each).
    let key = note_key("noted", &lock);
    loop {
        let holder = noted_holder(&lock).await;
        if holder.held_for.unwrap() >= Duration::from_millis(4500) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Read together: two round-trips apart, the lock's TTL read second is lower by their gap.
    let (ttl, lock_ttl): (i64, i64) = redis::pipe().pttl(&key).pttl("noted").query_async(&mut raw).await.unwrap();
    assert!(ttl > 0 && ttl <= lock_ttl + 5, "note {ttl} ms vs lock {lock_ttl} ms");

    lock.release().await.unwrap();
    let until = Instant::now() + Duration::from_secs(5);
    while raw.exists::<_, bool>(&key).await.unwrap() {
        assert!(Instant::now() < until, "the note outlived the release");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn short_holds_write_nothing_by_default_and_off_never_writes() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    // Default mode: 1 ms holds, while the watchdog looks every 25 ms.
    let client = client(&server.url(), 300).await;
    let lock = client.lock("short").unwrap();
    for _ in 0..50 {
        lock.acquire_hold(AcquireOptions::default()).await.unwrap().unwrap();
        tokio::time::sleep(Duration::from_millis(1)).await;
        lock.release().await.unwrap();
    }
    // Off: long holds neither. Held across several renewals (watchdog 300 ms).
    let quiet = builder(&server.url(), 300).holder_notes(HolderNotes::Off).holder_note_after(Duration::ZERO).connect().await.unwrap();
    let long = quiet.lock("long").unwrap();
    long.acquire_hold(AcquireOptions::default()).await.unwrap().unwrap();
    let until = Instant::now() + Duration::from_secs(10);
    while quiet.metrics().renewals < 3 {
        assert!(Instant::now() < until, "no renewals");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(calls(&mut raw, "time").await, 0, "the notes script (the only caller of TIME) never ran");
    let keys: Vec<String> = raw.keys("ferrolock_holder_info*").await.unwrap();
    assert!(keys.is_empty(), "{keys:?}");
    assert!(long.status().await.unwrap().holders[0].note.is_none());
    client.shutdown().await.unwrap();
    quiet.shutdown().await.unwrap();
}

#[tokio::test]
async fn always_writes_with_the_acquire_and_explicit_leases_are_noted_too() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    let client = builder(&server.url(), 3000).holder_notes(HolderNotes::Always).connect().await.unwrap();
    let lock = client.lock("always").unwrap();
    lock.set_holder_command(Some("./deploy.sh")).unwrap();
    lock.acquire_hold(AcquireOptions::default()).await.unwrap().unwrap();
    let status = lock.status().await.unwrap();
    let note = status.holders[0].note.clone().expect("written before the acquire returned");
    assert_eq!(note.command.as_deref(), Some("./deploy.sh"));
    assert!(status.holders[0].describe().ends_with(": ./deploy.sh"), "{}", status.holders[0].describe());
    lock.release().await.unwrap();

    // Long mode with an explicit lease: written after the threshold, expiring with the lease.
    let long = builder(&server.url(), 600).holder_note_after(Duration::from_millis(100)).connect().await.unwrap();
    let leased = long.lock("leased").unwrap();
    leased.acquire_hold(AcquireOptions::default().with_lease(Duration::from_secs(20))).await.unwrap().unwrap();
    let holder = noted_holder(&leased).await;
    assert_eq!(holder.note.unwrap().renewed, Some(false));
    let ttl: i64 = raw.pttl(note_key("leased", &leased)).await.unwrap();
    assert!(ttl > 0 && ttl <= 20_000, "{ttl}");
    client.shutdown().await.unwrap();
    long.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_acquire_names_the_holder() {
    let server = RedisServer::start();
    let holding = builder(&server.url(), 600).app_name("billing").holder_note_after(Duration::ZERO).connect().await.unwrap();
    let lock = holding.lock("busy").unwrap();
    lock.set_holder_label(Some("worker-3")).unwrap();
    lock.acquire_hold(AcquireOptions::default()).await.unwrap().unwrap();
    noted_holder(&lock).await;

    let waiting = client(&server.url(), 3000).await;
    let waiter = waiting.lock("busy").unwrap();
    assert!(waiter.last_holder().is_none());
    // A plain try pays no extra call: it keeps nothing.
    assert!(waiter.try_acquire().await.unwrap().is_none());
    assert!(waiter.last_holder().is_none());
    assert!(waiter.acquire_with(AcquireOptions::wait(Duration::from_millis(200))).await.unwrap().is_none());
    let seen = waiter.last_holder().expect("the holder at the timeout");
    assert_eq!(seen.owner, lock.owner());
    let text = seen.describe();
    assert!(text.starts_with("billing on ") && text.contains(&format!("pid {}", std::process::id())) && text.contains("(thread worker-3)"), "{text}");
    holding.shutdown().await.unwrap();
    waiting.shutdown().await.unwrap();
}

/// Log lines written by the test's subscriber.
#[derive(Clone, Default)]
struct Lines(Arc<Mutex<Vec<u8>>>);

impl Write for Lines {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Lines {
    fn waiting_lines(&self) -> Vec<String> {
        let text = String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned();
        text.lines().filter(|l| l.contains("INFO") && l.contains("waiting ")).map(str::to_string).collect()
    }
}

// Current-thread runtime: the log task runs on this thread, under its default subscriber.
#[tokio::test]
async fn a_long_wait_logs_who_is_in_the_way_and_again_as_it_doubles() {
    let lines = Lines::default();
    let writer = lines.clone();
    let subscriber = tracing_subscriber::fmt().with_ansi(false).with_max_level(tracing::Level::INFO).with_writer(move || writer.clone()).finish();
    let _default = tracing::subscriber::set_default(subscriber);
    let server = RedisServer::start();
    let holding: Client = builder(&server.url(), 600).app_name("billing").holder_note_after(Duration::ZERO).connect().await.unwrap();
    let lock = holding.lock("slow").unwrap();
    lock.set_holder_label(Some("worker-3")).unwrap();
    lock.acquire_hold(AcquireOptions::default()).await.unwrap().unwrap();
    noted_holder(&lock).await;

    let waiting = builder(&server.url(), 3000).slow_wait_log(Some(Duration::from_millis(150))).connect().await.unwrap();
    let waiter = waiting.lock("slow").unwrap();
    let wait = waiter.acquire_with(AcquireOptions::wait(Duration::from_secs(30)));
    let watch = async {
        // The first line after 150 ms, the next after 300 ms: wait until both are there.
        let until = Instant::now() + Duration::from_secs(20);
        while lines.waiting_lines().len() < 2 {
            assert!(Instant::now() < until, "no log lines: {:?}", lines.waiting_lines());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::select! {
        _ = wait => panic!("acquired while held"),
        _ = watch => {}
    }
    let found = lines.waiting_lines();
    assert!(found[0].contains("waiting 150 ms for lock \"slow\": held by billing on "), "{found:?}");
    assert!(found[0].contains("(thread worker-3) for ") && found[0].contains("lease"), "{found:?}");
    assert!(found[1].contains("waiting 300 ms for lock \"slow\""), "{found:?}");

    // A wait that ends before the threshold logs nothing.
    let before = lines.waiting_lines().len();
    assert!(waiter.acquire_with(AcquireOptions::wait(Duration::from_millis(100))).await.unwrap().is_none());
    assert_eq!(lines.waiting_lines().len(), before);
    holding.shutdown().await.unwrap();
    waiting.shutdown().await.unwrap();
}

/// The long-wait log is a timer in the waiting acquire's own future: waiters start
/// no task (from a blocking binding's thread, spawning one woke a runtime thread at
/// every wait, and stopping it woke one again).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_acquires_start_no_task_of_their_own() {
    let server = RedisServer::start();
    let client = builder(&server.url(), 3000).connect().await.unwrap();
    let lock = client.lock("crowd").unwrap();
    // A first wait subscribes the client (its subscriber task lives on).
    let held = lock.acquire().await.unwrap();
    let first = client.lock("crowd").unwrap();
    let wait = first.acquire();
    tokio::pin!(wait);
    tokio::select! {
        _ = &mut wait => panic!("acquired while held"),
        _ = eventually(Duration::from_secs(10), "the first waiter parked", || async { client.waiting_acquires() == 1 }) => {}
    }
    held.release().await.unwrap();
    let held = wait.await.unwrap();

    let metrics = tokio::runtime::Handle::current().metrics();
    let before = metrics.num_alive_tasks();
    // Polled in this task: whatever task is alive on top of `before` was started by them.
    let locks: Vec<Lock> = (0..8).map(|_| client.lock("crowd").unwrap()).collect();
    let waits = futures_util::future::join_all(locks.iter().map(|l| async move { l.acquire().await.unwrap().release().await.unwrap() }));
    tokio::pin!(waits);
    tokio::select! {
        _ = &mut waits => panic!("acquired while held"),
        _ = eventually(Duration::from_secs(10), "8 waiters parked", || async { client.waiting_acquires() == 8 }) => {}
    }
    let grown = metrics.num_alive_tasks().saturating_sub(before);
    assert!(grown <= 2, "{grown} more tasks alive with 8 acquires waiting");
    held.release().await.unwrap();
    waits.await;
    client.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_note_set_by_hand_is_kept_and_lives_as_long_as_the_hold() {
    let server = RedisServer::start();
    let client = builder(&server.url(), 600).holder_note_after(Duration::ZERO).connect().await.unwrap();
    let lock = client.lock("by-hand").unwrap();
    lock.acquire_hold(AcquireOptions::default()).await.unwrap().unwrap();
    lock.set_holder_info(Some("nightly export")).await.unwrap();
    // Past several watchdog leases (0.6 s): renewed with the hold, never replaced.
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(2) || client.metrics().renewals < 6 {
        let status = lock.status().await.unwrap();
        assert_eq!(status.holders[0].info.as_deref(), Some("nightly export"), "{status:?}");
        assert!(status.holders[0].note.is_none());
        assert_eq!(status.holders[0].describe(), "nightly export");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    client.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_long_holds_all_get_their_note_in_batches() {
    // 250 holds: two full batches of 100 and a partial one, a few calls in flight.
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    let client = builder(&server.url(), 1500).holder_note_after(Duration::from_millis(100)).connect().await.unwrap();
    let locks: Vec<Lock> = (0..250).map(|i| client.lock(format!("many:{i}")).unwrap()).collect();
    for lock in &locks {
        lock.acquire_hold(AcquireOptions::default()).await.unwrap().unwrap();
    }
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        let keys: Vec<String> = raw.keys(format!("{NOTE_KEY_PREFIX}many:*")).await.unwrap();
        if keys.len() == locks.len() {
            break;
        }
        assert!(Instant::now() < until, "{} of {} notes written within 20 s", keys.len(), locks.len());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for lock in &locks {
        assert!(noted_holder(lock).await.note.is_some());
        lock.release().await.unwrap();
    }
    let left: Vec<String> = raw.keys(format!("{NOTE_KEY_PREFIX}many:*")).await.unwrap();
    assert!(left.is_empty(), "notes left after the releases: {}", left.len());
    client.shutdown().await.unwrap();
}

/// Waits (10 s at most) until `key` is gone.
async fn gone(raw: &mut redis::aio::MultiplexedConnection, key: &str, what: &str) {
    let until = Instant::now() + Duration::from_secs(10);
    while raw.exists::<_, bool>(key).await.unwrap() {
        assert!(Instant::now() < until, "{what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A client closed while the server is cut off (the fault proxy holds every byte):
/// the close gives up waiting and its releases go on in the background. Once the
/// server answers again the release gets through, and the note goes with it, not a
/// lease (30 s here) later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_note_goes_with_a_release_that_ends_after_a_close_under_a_partition() {
    let server = RedisServer::start();
    let proxy = FaultProxy::start(server.port).await;
    let mut raw = server.raw().await;
    let c = builder(&proxy.url(), 30_000).retry_window(Duration::from_secs(15)).holder_notes(HolderNotes::Always).connect().await.unwrap();
    let lock = c.lock("noted-close").unwrap();
    lock.acquire_hold(AcquireOptions::default()).await.unwrap().unwrap();
    let key = note_key("noted-close", &lock);
    noted_holder(&lock).await;
    proxy.set_blackhole(true);
    c.shutdown().await.unwrap();
    assert!(raw.hexists::<_, _, bool>("noted-close", lock.owner()).await.unwrap(), "released while cut off?");
    proxy.set_blackhole(false);
    gone(&mut raw, "noted-close", "the release went on after the close").await;
    gone(&mut raw, &key, "the note outlived the hold's release").await;
}

/// A release Redis does not answer within the retry window is settled once it
/// answers, by the client's resolver: the note goes then too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_note_goes_when_an_unanswered_release_is_settled() {
    let server = RedisServer::start();
    let proxy = FaultProxy::start(server.port).await;
    let mut raw = server.raw().await;
    let c = builder(&proxy.url(), 30_000).retry_window(Duration::from_secs(1)).holder_notes(HolderNotes::Always).connect().await.unwrap();
    let lock = c.lock("noted-unanswered").unwrap();
    let guard = lock.acquire().await.unwrap();
    let key = note_key("noted-unanswered", &lock);
    noted_holder(&lock).await;
    proxy.set_blackhole(true);
    // Given up on after the retry window: done as far as the caller goes, settled later.
    guard.release().await.unwrap();
    assert!(lock.is_settling());
    proxy.set_blackhole(false);
    gone(&mut raw, "noted-unanswered", "the resolver released the hold").await;
    gone(&mut raw, &key, "the note outlived the settled release").await;
    c.shutdown().await.unwrap();
}
