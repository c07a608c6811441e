//! The permit-expirable semaphore (Redisson's RPermitExpirableSemaphore) against
//! real redis-servers: its keys as Redisson writes them, expired permits coming
//! back by themselves (and waking waiters without any message), release by id,
//! cancellation and lost replies leaving the count exact, bad input.

mod common;

use std::time::{Duration, Instant};

use common::*;
use ferrolock::ErrorKind;
use futures_util::StreamExt;
use redis::AsyncCommands;

const NO_LEASE: f64 = 922337203685477.0;

async fn server_ms(raw: &mut redis::aio::MultiplexedConnection) -> f64 {
    let (s, us): (u64, u64) = redis::cmd("TIME").query_async(raw).await.unwrap();
    (s * 1000 + us / 1000) as f64
}

async fn out(raw: &mut redis::aio::MultiplexedConnection) -> Vec<(Vec<u8>, f64)> {
    raw.zrange_withscores("{api}:timeout", 0, -1).await.unwrap()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_and_messages_are_redissons() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    let mut messages = redis::Client::open(server.url()).unwrap().get_async_pubsub().await.unwrap();
    messages.subscribe("redisson_sc:{api}").await.unwrap();
    let mut messages = messages.into_on_message();
    let client = client(&server.url(), 3000).await;
    let sem = client.permit_expirable_semaphore("api").unwrap();

    assert!(sem.try_set_permits(2).await.unwrap());
    assert_eq!(messages.next().await.unwrap().get_payload::<String>().unwrap(), "2");
    let forever = sem.acquire(None).await.unwrap();
    let before = server_ms(&mut raw).await;
    let leased = sem.acquire(Some(Duration::from_secs(5))).await.unwrap();
    assert_eq!(forever.id().len(), 32);
    assert_eq!(leased.lease(), Some(Duration::from_secs(5)));
    assert_eq!(raw.get::<_, String>("api").await.unwrap(), "0");
    let permits = out(&mut raw).await;
    assert_eq!(permits.len(), 2);
    let score_of = |id: &str| permits.iter().find(|(raw_id, _)| hex(raw_id) == id).map(|(_, s)| *s).unwrap();
    assert_eq!(score_of(forever.id()), NO_LEASE, "a permit without a lease carries Redisson's 'forever'");
    let expiry = score_of(leased.id());
    assert!(expiry >= before + 5000.0 && expiry <= before + 6000.0, "expiry = server time + lease: {expiry} vs {before}");
    assert!(sem.try_acquire(None).await.unwrap().is_none());
    assert_eq!(sem.available().await.unwrap(), 0);

    let id = forever.forget();
    assert!(sem.release(&id).await.unwrap(), "released in time");
    assert_eq!(messages.next().await.unwrap().get_payload::<String>().unwrap(), "1", "the new count is published");
    assert!(!sem.release(&id).await.unwrap(), "a permit released twice is not out any more");
    assert!(leased.release().await.unwrap());
    assert_eq!(sem.available().await.unwrap(), 2);
    assert!(out(&mut raw).await.is_empty());
    client.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_permits_come_back_and_wake_waiters_without_a_message() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    let a = client(&server.url(), 3000).await;
    let b = client(&server.url(), 3000).await;
    let sem = a.permit_expirable_semaphore("api").unwrap();
    assert!(sem.try_set_permits(1).await.unwrap());
    let id = sem.acquire(Some(Duration::from_millis(400))).await.unwrap().forget();
    // Nobody releases it: the waiter wakes by the permit's expiry and takes it.
    let waiter = b.permit_expirable_semaphore("api").unwrap();
    let started = Instant::now();
    let got = waiter.acquire_with(Some(Duration::from_secs(20)), Some(Duration::from_secs(30))).await.unwrap();
    let waited = started.elapsed();
    let got = got.expect("the expired permit came back in time");
    assert!(waited < Duration::from_secs(10), "woken by the expiry, far sooner than its 20 s wait: {waited:?}");
    assert_ne!(got.id(), id);
    assert!(!sem.release(&id).await.unwrap(), "the expired permit is not out any more");
    assert_eq!(out(&mut raw).await.len(), 1);
    got.release().await.unwrap();

    // The count alone returns expired permits too.
    sem.acquire(Some(Duration::from_millis(100))).await.unwrap().forget();
    eventually(Duration::from_secs(10), "the expired permit counted as free", || {
        let sem = sem.clone();
        async move { sem.available().await.unwrap() == 1 }
    })
    .await;
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_waits_and_lost_replies_leave_the_count_exact() {
    let server = RedisServer::start();
    let proxy = FaultProxy::start(server.port).await;
    let mut raw = server.raw().await;
    let client = client(&proxy.url(), 3000).await;
    let sem = client.permit_expirable_semaphore("api").unwrap();
    assert!(sem.try_set_permits(1).await.unwrap());
    for round in 0..30u64 {
        let mut tries = Vec::new();
        for i in 0..3u64 {
            let sem = sem.clone();
            let cut = Duration::from_micros((round * 131 + i * 457) % 3000);
            tries.push(tokio::spawn(async move {
                if let Ok(Ok(permit)) = tokio::time::timeout(cut, sem.acquire(None)).await {
                    permit.release().await.unwrap();
                }
            }));
        }
        for t in tries {
            t.await.unwrap();
        }
    }
    eventually(Duration::from_secs(10), "every permit back, no subscription left", || {
        let (sem, mut raw) = (sem.clone(), raw.clone());
        async move { sem.available().await.unwrap() == 1 && numsub(&mut raw, "redisson_sc:{api}").await == 0 }
    })
    .await;

    // A cut reply: the retry with the same id finds its permit instead of taking another.
    let _: () = raw.set("api", 2).await.unwrap();
    proxy.cut_next_reply_to(b"take");
    let permit = sem.acquire(None).await.unwrap();
    assert_eq!(raw.get::<_, String>("api").await.unwrap(), "1", "one permit taken");
    assert_eq!(out(&mut raw).await.len(), 1);
    permit.release().await.unwrap();
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn bad_input_and_wrong_types_are_refused() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    let client = client(&server.url(), 3000).await;
    let sem = client.permit_expirable_semaphore("p").unwrap();
    assert_eq!(sem.acquire(Some(Duration::ZERO)).await.err().unwrap().kind(), ErrorKind::InvalidArgument);
    assert_eq!(sem.try_acquire(Some(Duration::from_secs(8 * 86400))).await.err().unwrap().kind(), ErrorKind::InvalidArgument);
    for bad in ["", "xyz", "0123456789abcdef0123456789abcdeg", "é123456789abcdef0123456789abcde"] {
        assert_eq!(sem.release(bad).await.unwrap_err().kind(), ErrorKind::InvalidArgument, "{bad:?}");
    }
    let _: () = raw.hset("a-lock", "owner", 1).await.unwrap();
    let sem = client.permit_expirable_semaphore("a-lock").unwrap();
    assert_eq!(sem.try_acquire(None).await.err().unwrap().kind(), ErrorKind::WrongType);
    assert_eq!(sem.available().await.unwrap_err().kind(), ErrorKind::WrongType);
    client.shutdown().await.unwrap();
}
