//! The read-write lock (Redisson's RReadWriteLock) against real redis-servers: its
//! hash, timeout keys and channel as Redisson writes them, readers together and a
//! writer alone, downgrade, a dead reader's hold expiring, renewal of read holds.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use ferrolock::{AcquireOptions, ErrorKind};
use futures_util::StreamExt;
use redis::AsyncCommands;

const CHANNEL: &str = "redisson_rwlock:{rw}";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hash_keys_and_messages_are_redissons() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    let mut messages = redis::Client::open(server.url()).unwrap().get_async_pubsub().await.unwrap();
    messages.subscribe(CHANNEL).await.unwrap();
    let mut messages = messages.into_on_message();
    let a = client(&server.url(), 3000).await;
    let b = client(&server.url(), 3000).await;
    let (ra, rb) = (a.read_write_lock("rw").unwrap(), b.read_write_lock("rw").unwrap());
    let read_a = ra.read().acquire().await.unwrap();
    let read_b = rb.read().acquire().await.unwrap();
    assert_eq!(raw.hget::<_, _, String>("rw", "mode").await.unwrap(), "read");
    assert_eq!(raw.hget::<_, _, u32>("rw", ra.read().owner()).await.unwrap(), 1);
    let timeout_key = format!("{{rw}}:{}:rwlock_timeout:1", ra.read().owner());
    let ttl: i64 = raw.pttl(&timeout_key).await.unwrap();
    assert!(ttl > 0 && ttl <= 3000, "each read hold has a timeout key with the lease: {ttl}");

    // A writer waits on the read-write channel until the last reader goes.
    let writer = b.read_write_lock("rw").unwrap().write();
    assert!(writer.try_acquire().await.unwrap().is_none());
    let waiting = tokio::spawn(async move { writer.acquire().await.map(|g| g.into_hold()).map(|_| writer) });
    eventually(Duration::from_secs(5), "the writer subscribed", || {
        let mut raw = raw.clone();
        async move { numsub(&mut raw, CHANNEL).await == 2 }
    })
    .await;
    read_a.release().await.unwrap();
    assert!(!raw.exists::<_, bool>(&timeout_key).await.unwrap(), "the hold's timeout key goes with it");
    let released = Instant::now();
    read_b.release().await.unwrap();
    assert_eq!(messages.next().await.unwrap().get_payload::<String>().unwrap(), "0", "the last reader publishes 0");
    let writer = tokio::time::timeout(Duration::from_secs(10), waiting).await.unwrap().unwrap().unwrap();
    assert!(released.elapsed() < Duration::from_secs(2), "woken by the message: {:?}", released.elapsed());
    assert_eq!(raw.hget::<_, _, String>("rw", "mode").await.unwrap(), "write");
    assert_eq!(raw.hget::<_, _, u32>("rw", format!("{}:write", writer.owner())).await.unwrap(), 1);
    writer.release().await.unwrap();
    assert_eq!(messages.next().await.unwrap().get_payload::<String>().unwrap(), "1", "a writer's release wakes everyone");
    assert!(!raw.exists::<_, bool>("rw").await.unwrap());
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_share_and_a_writer_is_alone() {
    let server = RedisServer::start();
    let mut clients = Vec::new();
    for _ in 0..3 {
        clients.push(client(&server.url(), 3000).await);
    }
    let readers = Arc::new(AtomicUsize::new(0));
    let writers = Arc::new(AtomicUsize::new(0));
    let most_readers = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for (i, c) in clients.iter().enumerate() {
        for j in 0..3 {
            let rw = c.read_write_lock("rw").unwrap();
            let (readers, writers, most) = (readers.clone(), writers.clone(), most_readers.clone());
            let write = i == 0 && j == 0;
            tasks.push(tokio::spawn(async move {
                for _ in 0..15 {
                    if write {
                        let guard = rw.write().acquire().await.unwrap();
                        assert_eq!(writers.fetch_add(1, Ordering::SeqCst), 0, "one writer");
                        assert_eq!(readers.load(Ordering::SeqCst), 0, "no reader with a writer");
                        tokio::time::sleep(Duration::from_millis(2)).await;
                        writers.fetch_sub(1, Ordering::SeqCst);
                        guard.release().await.unwrap();
                    } else {
                        let guard = rw.read().acquire().await.unwrap();
                        let now = readers.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        assert_eq!(writers.load(Ordering::SeqCst), 0, "no writer with readers");
                        tokio::time::sleep(Duration::from_millis(2)).await;
                        readers.fetch_sub(1, Ordering::SeqCst);
                        guard.release().await.unwrap();
                    }
                }
            }));
        }
    }
    for t in tasks {
        tokio::time::timeout(Duration::from_secs(60), t).await.expect("no deadlock").unwrap();
    }
    assert!(most_readers.load(Ordering::SeqCst) >= 2, "readers held it together");
    for c in clients {
        c.shutdown().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writer_may_downgrade_and_a_dead_readers_hold_expires() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    let a = client(&server.url(), 1500).await;
    let b = client(&server.url(), 1500).await;
    let rw = a.read_write_lock("rw").unwrap();
    let write = rw.write().acquire().await.unwrap();
    let read = rw.read().acquire().await.unwrap();
    write.release().await.unwrap();
    assert_eq!(raw.hget::<_, _, String>("rw", "mode").await.unwrap(), "read", "downgraded");
    let other = b.read_write_lock("rw").unwrap();
    assert!(other.write().try_acquire().await.unwrap().is_none(), "still read-held");
    other.read().try_acquire().await.unwrap().expect("readers may join").release().await.unwrap();
    read.release().await.unwrap();

    // The watchdog renews read holds and their timeout keys.
    let kept = rw.read().acquire().await.unwrap();
    let timeout_key = format!("{{rw}}:{}:rwlock_timeout:1", rw.read().owner());
    let lost = tokio::time::timeout(Duration::from_secs(4), kept.lost()).await;
    assert!(lost.is_err(), "kept past two leases");
    assert!(raw.pttl::<_, i64>(&timeout_key).await.unwrap() > 0, "its timeout key renewed too");

    // A reader with a short lease that never releases: its hold ends with its key, so
    // once the live reader goes, a writer gets in long before anything else expires.
    let dead = b.read_write_lock("rw").unwrap().read();
    let _ = dead.acquire_hold(AcquireOptions::wait(Duration::ZERO).with_lease(Duration::from_millis(300))).await.unwrap().unwrap();
    let dead_key = format!("{{rw}}:{}:rwlock_timeout:1", dead.owner());
    eventually(Duration::from_secs(10), "the dead reader's timeout key expired", || {
        let (mut raw, key) = (raw.clone(), dead_key.clone());
        async move { !raw.exists::<_, bool>(&key).await.unwrap() }
    })
    .await;
    kept.release().await.unwrap();
    assert!(!raw.exists::<_, bool>("rw").await.unwrap(), "nothing holds it any more");
    let writer = b.read_write_lock("rw").unwrap().write();
    writer.try_acquire().await.unwrap().expect("free for a writer").release().await.unwrap();
    assert_eq!(dead.extend(Duration::from_secs(1)).await.unwrap_err().kind(), ErrorKind::InvalidArgument);
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_holds_are_reported_and_wrong_types_are_refused() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    let client = client(&server.url(), 3000).await;
    let rw = client.read_write_lock("rw").unwrap();
    for side in [rw.read(), rw.write()] {
        let hold = side.acquire().await.unwrap().into_hold();
        assert!(side.force_unlock().await.unwrap());
        client.renew_held_locks().await.unwrap();
        let lost = tokio::time::timeout(Duration::from_secs(5), hold.lost()).await.expect("reported");
        assert_eq!(lost.kind(), ErrorKind::LockLost, "{:?}", side.kind());
        assert_eq!(side.release().await.unwrap_err().kind(), ErrorKind::LockLost);
    }
    let _: () = raw.set("s", "x").await.unwrap();
    let other = client.read_write_lock("s").unwrap();
    for side in [other.read(), other.write()] {
        let err = side.try_acquire().await.err().unwrap();
        assert_eq!(err.kind(), ErrorKind::WrongType, "{err}");
    }
    client.shutdown().await.unwrap();
}
