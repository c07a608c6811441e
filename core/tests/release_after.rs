//! A hold that ends later (a cron job's minimum hold): the lock stays held, not
//! renewed, until the time given, the holder gives it up at once without a loss,
//! and the next acquire gets it once it expired. Against a real redis-server.

mod common;

use std::time::{Duration, Instant};

use common::*;
use ferrolock::{AcquireOptions, ErrorKind};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hold_released_later_stays_until_then_with_nothing_left_to_renew_or_release() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    let client = builder(&server.url(), 300).holder_notes(ferrolock::HolderNotes::Always).connect().await.unwrap();
    let lock = client.lock("tick").unwrap();
    let hold = lock.acquire_hold(AcquireOptions::default()).await.unwrap().unwrap();
    lock.acquire_hold(AcquireOptions::default()).await.unwrap().unwrap(); // every level goes
    let set_at = Instant::now();
    lock.release_after(Duration::from_millis(1200)).await.unwrap();
    assert_eq!((lock.local_hold_count(), client.held_count()), (0, 0), "given up here at once");
    let renewals = client.metrics().renewals;
    // Held past several of the watchdog's periods (300 ms lease), as set, then free.
    let other = client.lock("tick").unwrap();
    assert!(other.try_acquire().await.unwrap().is_none());
    // Not even its holder re-enters it: the hold moved to a field nobody writes.
    assert!(lock.try_acquire().await.unwrap().is_none());
    let status = lock.status().await.unwrap();
    assert_eq!(status.holders[0].owner, format!("{}:later", lock.owner()));
    assert!(status.holders[0].note.is_some(), "the note stays with the lock: {status:?}");
    assert!(status.remaining_lease.is_some_and(|l| l > Duration::from_millis(800)), "{status:?}");
    let got = other.acquire_with(AcquireOptions::wait(Duration::from_secs(5))).await.unwrap().expect("free once it expired");
    let waited = set_at.elapsed();
    assert!(waited >= Duration::from_millis(1150), "freed after {waited:?}");
    assert_eq!(client.metrics().renewals, renewals, "nothing renewed it");
    assert!(!hold.is_lost() && client.metrics().losses == 0, "an expiry asked for is no loss");
    drop(got);
    let notes: Vec<String> = redis::AsyncCommands::keys(&mut raw, "ferrolock_holder_info*").await.unwrap();
    assert!(notes.iter().all(|k| !k.ends_with(lock.owner())), "{notes:?}");

    // The minimum hold: left to expire when it is not over yet, released when it is.
    lock.acquire_hold(AcquireOptions::default()).await.unwrap().unwrap();
    let left = lock.release_min_hold(Duration::from_secs(2)).await.unwrap().expect("kept");
    assert!(left > Duration::from_millis(1500) && left <= Duration::from_secs(2), "{left:?}");
    assert!(other.try_acquire().await.unwrap().is_none());
    other.force_unlock().await.unwrap();
    lock.acquire_hold(AcquireOptions::default()).await.unwrap().unwrap();
    assert_eq!(lock.release_min_hold(Duration::from_millis(1)).await.unwrap(), None, "over already: released");
    assert!(!lock.is_locked().await.unwrap());

    // Without a hold: NotOwner; a read hold: InvalidArgument.
    assert_eq!(lock.release_after(Duration::from_secs(1)).await.unwrap_err().kind(), ErrorKind::NotOwner);
    let rw = client.read_write_lock("rw").unwrap();
    rw.read().acquire_hold(AcquireOptions::default()).await.unwrap().unwrap();
    assert_eq!(rw.read().release_after(Duration::from_secs(1)).await.unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(lock.release_after(Duration::ZERO).await.unwrap_err().kind(), ErrorKind::InvalidArgument);
    client.shutdown().await.unwrap();
}

/// What the bindings run on their runtimes must be `Send`.
#[allow(dead_code)]
fn calls_are_send(lock: ferrolock::Lock) {
    fn send<T: Send>(_: T) {}
    send(async move {
        let _ = lock.release_after(Duration::from_secs(1)).await;
        let _ = lock.release_min_hold(Duration::from_secs(1)).await;
    });
}
