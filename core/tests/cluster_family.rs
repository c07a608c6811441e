//! The rest of the family on a Redis Cluster: every primitive's keys and channels
//! in one slot, waiters woken by sharded messages, names that would split refused.

mod common;

use std::time::{Duration, Instant};

use common::*;
use ferrolock::{Client, ErrorKind};

async fn connect(cluster: &Cluster) -> Client {
    builder(&cluster.url(), 10_000)
        .connect_timeout(Duration::from_secs(2))
        .response_timeout(Duration::from_secs(2))
        .connect()
        .await
        .unwrap()
}

/// Waits until `client` has one acquire parked, runs `release`, and checks the
/// waiter was woken by the message (far sooner than anything expires).
async fn woken<F>(client: &Client, waiter: tokio::task::JoinHandle<()>, release: F)
where
    F: std::future::Future<Output = ()>,
{
    eventually(Duration::from_secs(10), "the waiter to park", || async { client.waiting_acquires() == 1 }).await;
    let released = Instant::now();
    release.await;
    tokio::time::timeout(Duration::from_secs(5), waiter).await.expect("woken by the sharded message").unwrap();
    assert!(released.elapsed() < Duration::from_secs(3), "{:?}", released.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_primitive_waits_on_sharded_pubsub() {
    let cluster = Cluster::start().await;
    let a = connect(&cluster).await;
    let b = connect(&cluster).await;

    let fair = a.fair_lock("cf:fair").unwrap().acquire().await.unwrap();
    let lock = b.fair_lock("cf:fair").unwrap();
    let waiter = tokio::spawn(async move { lock.acquire().await.unwrap().release().await.map(|_| ()).unwrap() });
    woken(&b, waiter, async { fair.release().await.map(|_| ()).unwrap() }).await;

    let write = a.read_write_lock("cf:rw").unwrap().write().acquire().await.unwrap();
    let read = b.read_write_lock("cf:rw").unwrap().read();
    let waiter = tokio::spawn(async move { read.acquire().await.unwrap().release().await.map(|_| ()).unwrap() });
    woken(&b, waiter, async { write.release().await.map(|_| ()).unwrap() }).await;

    let sem = a.semaphore("cf:sem").unwrap();
    assert!(sem.try_set_permits(0).await.unwrap());
    let theirs = b.semaphore("cf:sem").unwrap();
    let waiter = tokio::spawn(async move { theirs.acquire(1).await.unwrap().release().await.map(|_| ()).unwrap() });
    woken(&b, waiter, async { sem.release(1).await.map(|_| ()).unwrap() }).await;

    let permits = a.permit_expirable_semaphore("cf:permits").unwrap();
    assert!(permits.try_set_permits(1).await.unwrap());
    let held = permits.acquire(None).await.unwrap();
    let theirs = b.permit_expirable_semaphore("cf:permits").unwrap();
    let waiter = tokio::spawn(async move { theirs.acquire(None).await.unwrap().release().await.map(|_| ()).unwrap() });
    woken(&b, waiter, async { held.release().await.map(|_| ()).unwrap() }).await;

    let latch = a.count_down_latch("cf:latch").unwrap();
    assert!(latch.try_set_count(1).await.unwrap());
    let theirs = b.count_down_latch("cf:latch").unwrap();
    let waiter = tokio::spawn(async move { assert!(theirs.wait(None).await.unwrap()) });
    woken(&b, waiter, async { latch.count_down().await.map(|_| ()).unwrap() }).await;

    // A latch's channel is written literally: braces in its name would split it from the key.
    assert_eq!(a.count_down_latch("{tag}x").unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(a.semaphore("a}b").unwrap_err().kind(), ErrorKind::InvalidArgument);
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
}
