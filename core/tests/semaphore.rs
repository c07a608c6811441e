//! The semaphore (Redisson's RSemaphore) against real redis-servers: its keys and
//! messages as Redisson writes them, at most N inside under contention, wake-up by
//! message, cancellation and lost replies leaving the count exact, bad input.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use ferrolock::ErrorKind;
use futures_util::StreamExt;
use redis::AsyncCommands;

async fn value(raw: &mut redis::aio::MultiplexedConnection, key: &str) -> Option<String> {
    raw.get(key).await.unwrap()
}

async fn next(messages: &mut (impl futures_util::Stream<Item = redis::Msg> + Unpin)) -> String {
    messages.next().await.unwrap().get_payload::<String>().unwrap()
}

async fn only_key_left(raw: &redis::aio::MultiplexedConnection, key: &str) {
    eventually(Duration::from_secs(10), "reply latches swept", || {
        let mut raw = raw.clone();
        let key = key.to_string();
        async move { keys(&mut raw).await == vec![key] }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_and_messages_are_redissons() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    let mut messages = redis::Client::open(server.url()).unwrap().get_async_pubsub().await.unwrap();
    messages.subscribe("redisson_sc:{sem}").await.unwrap();
    let mut messages = messages.into_on_message();
    let client = client(&server.url(), 3000).await;
    let sem = client.semaphore("sem").unwrap();

    assert!(sem.try_set_permits(2).await.unwrap());
    assert_eq!(next(&mut messages).await, "2", "the new count is published");
    assert!(!sem.try_set_permits(5).await.unwrap(), "an existing semaphore keeps its count");
    assert_eq!(value(&mut raw, "sem").await.as_deref(), Some("2"));

    let permits = sem.acquire(2).await.unwrap();
    assert_eq!(value(&mut raw, "sem").await.as_deref(), Some("0"));
    assert!(sem.try_acquire(1).await.unwrap().is_none());
    assert_eq!(permits.release().await.unwrap(), 2);
    assert_eq!(next(&mut messages).await, "2", "a release publishes the new count");
    assert_eq!(sem.release(1).await.unwrap(), 3, "permits are not owned: anyone may add");
    assert_eq!(next(&mut messages).await, "3");
    assert_eq!(sem.available().await.unwrap(), 3);
    assert_eq!(sem.drain().await.unwrap(), 3);
    assert_eq!(value(&mut raw, "sem").await.as_deref(), Some("0"));
    // A Permits guard dropped gives its permits back.
    sem.release(1).await.unwrap();
    drop(sem.acquire(1).await.unwrap());
    eventually(Duration::from_secs(5), "dropped permits given back", || {
        let sem = sem.clone();
        async move { sem.available().await.unwrap() == 1 }
    })
    .await;
    assert_eq!(sem.acquire(1).await.unwrap().forget(), 1);
    assert_eq!(sem.available().await.unwrap(), 0, "forgotten permits stay taken");
    only_key_left(&raw, "sem").await;
    client.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_most_n_inside_under_contention() {
    let server = RedisServer::start();
    let mut clients = Vec::new();
    for _ in 0..4 {
        clients.push(client(&server.url(), 3000).await);
    }
    assert!(clients[0].semaphore("gpu").unwrap().try_set_permits(4).await.unwrap());
    let inside = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for c in &clients {
        for _ in 0..4 {
            let (sem, inside, most, done) = (c.semaphore("gpu").unwrap(), inside.clone(), most.clone(), done.clone());
            tasks.push(tokio::spawn(async move {
                for _ in 0..15 {
                    let permits = sem.acquire(1).await.unwrap();
                    let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    inside.fetch_sub(1, Ordering::SeqCst);
                    done.fetch_add(1, Ordering::SeqCst);
                    permits.release().await.unwrap();
                }
            }));
        }
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(done.load(Ordering::SeqCst), 16 * 15);
    let most = most.load(Ordering::SeqCst);
    assert!((2..=4).contains(&most), "never more than 4 inside, and more than one at a time: {most}");
    assert_eq!(clients[0].semaphore("gpu").unwrap().available().await.unwrap(), 4);
    for c in clients {
        c.shutdown().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_is_woken_by_the_release_message() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    let a = client(&server.url(), 3000).await;
    let b = client(&server.url(), 3000).await;
    assert!(a.semaphore("slots").unwrap().try_set_permits(0).await.unwrap());
    let sem = b.semaphore("slots").unwrap();
    let waiting = tokio::spawn(async move { sem.acquire(2).await.map(|p| p.forget()) });
    eventually(Duration::from_secs(5), "the waiter subscribed", || {
        let mut raw = raw.clone();
        async move { numsub(&mut raw, "redisson_sc:{slots}").await == 1 }
    })
    .await;
    // One permit is not enough for it; the second wakes it (there is no expiry to wake it otherwise).
    a.semaphore("slots").unwrap().release(1).await.unwrap();
    a.semaphore("slots").unwrap().release(1).await.unwrap();
    let got = tokio::time::timeout(Duration::from_secs(10), waiting).await.expect("woken by the message").unwrap();
    assert_eq!(got.unwrap(), 2);
    assert_eq!(value(&mut raw, "slots").await.as_deref(), Some("0"));
    eventually(Duration::from_secs(5), "unsubscribed", || {
        let mut raw = raw.clone();
        async move { numsub(&mut raw, "redisson_sc:{slots}").await == 0 }
    })
    .await;
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_waits_at_any_point_take_nothing() {
    let server = RedisServer::start();
    let raw = server.raw().await;
    let client = client(&server.url(), 3000).await;
    let sem = client.semaphore("cancel").unwrap();
    assert!(sem.try_set_permits(1).await.unwrap());
    for round in 0..40u64 {
        let mut tries = Vec::new();
        for i in 0..4u64 {
            let sem = sem.clone();
            // Deadlines from "before the first reply" to "while subscribed and waiting".
            let cut = Duration::from_micros((round * 97 + i * 389) % 3000);
            tries.push(tokio::spawn(async move {
                if let Ok(Ok(permits)) = tokio::time::timeout(cut, sem.acquire(1)).await {
                    permits.release().await.unwrap();
                }
            }));
        }
        for t in tries {
            t.await.unwrap();
        }
    }
    eventually(Duration::from_secs(10), "every permit back, no subscription left", || {
        let (sem, mut raw) = (sem.clone(), raw.clone());
        async move { sem.available().await.unwrap() == 1 && numsub(&mut raw, "redisson_sc:{cancel}").await == 0 }
    })
    .await;
    only_key_left(&raw, "cancel").await;
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn bad_input_and_wrong_types_are_refused() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    let client = client(&server.url(), 3000).await;
    let sem = client.semaphore("s").unwrap();
    assert_eq!(sem.acquire(0).await.err().unwrap().kind(), ErrorKind::InvalidArgument);
    assert_eq!(sem.release(0).await.unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(sem.try_set_permits(i64::MAX as u64 + 1).await.unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(sem.acquire_permits(1, Some(Duration::from_secs(8 * 86400))).await.unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(client.semaphore("").unwrap_err().kind(), ErrorKind::InvalidArgument);
    let _: () = raw.hset("a-lock", "owner", 1).await.unwrap();
    let _: () = raw.set("words", "many").await.unwrap();
    for name in ["a-lock", "words"] {
        let sem = client.semaphore(name).unwrap();
        let errors = [
            sem.try_acquire(1).await.err().unwrap(),
            sem.release(1).await.unwrap_err(),
            sem.available().await.unwrap_err(),
            sem.drain().await.unwrap_err(),
        ];
        for err in errors {
            assert_eq!(err.kind(), ErrorKind::WrongType, "{name}: {err}");
        }
    }
    assert_eq!(client.semaphore("a-lock").unwrap().try_set_permits(1).await.unwrap_err().kind(), ErrorKind::WrongType);
    let mut left = keys(&mut raw).await;
    left.sort();
    assert_eq!(left, vec!["a-lock".to_string(), "words".to_string()], "nothing written");
    client.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_replies_act_once() {
    let server = RedisServer::start();
    let proxy = FaultProxy::start(server.port).await;
    let raw = server.raw().await;
    let c = client(&proxy.url(), 3000).await;
    let sem = c.semaphore("lossy").unwrap();
    assert!(sem.try_set_permits(3).await.unwrap());
    // The reply to the acquire is cut: the same request is sent again and takes one permit, once.
    proxy.cut_next_reply_to(b"ferrolock_reply:{lossy}");
    let permits = sem.acquire(1).await.unwrap();
    assert_eq!(sem.available().await.unwrap(), 2);
    proxy.cut_next_reply_to(b"ferrolock_reply:{lossy}");
    assert_eq!(permits.release().await.unwrap(), 3);
    assert_eq!(sem.available().await.unwrap(), 3, "a release retried after a lost reply adds once");

    // The reply never comes in time: the caller is told, and the permit comes back.
    proxy.delay_next_reply_to(b"ferrolock_reply:{lossy}", Duration::from_secs(4));
    let attempt = tokio::spawn({
        let sem = sem.clone();
        async move { sem.acquire_permits(1, Some(Duration::ZERO)).await }
    });
    eventually(Duration::from_secs(5), "the acquire ran on the server", || {
        let mut raw = raw.clone();
        async move { value(&mut raw, "lossy").await.as_deref() == Some("2") }
    })
    .await;
    proxy.set_blackhole(true);
    let err = attempt.await.unwrap().unwrap_err();
    proxy.set_blackhole(false);
    assert_eq!(err.kind(), ErrorKind::Connection, "{err}");
    eventually(Duration::from_secs(10), "the unanswered acquire gave its permit back", || {
        let mut raw = raw.clone();
        async move { value(&mut raw, "lossy").await.as_deref() == Some("3") }
    })
    .await;
    c.shutdown().await.unwrap();
}
