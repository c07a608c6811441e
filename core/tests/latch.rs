//! The count-down latch (Redisson's RCountDownLatch) against real redis-servers:
//! its key and messages as Redisson writes them, waiters woken together by the
//! opening message, bounded waits, cancellation, lost replies, bad input.

mod common;

use std::time::Duration;

use common::*;
use ferrolock::ErrorKind;
use futures_util::StreamExt;
use redis::AsyncCommands;

const CHANNEL: &str = "redisson_countdownlatch__channel__{ready}";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_and_messages_are_redissons() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    let mut messages = redis::Client::open(server.url()).unwrap().get_async_pubsub().await.unwrap();
    messages.subscribe(CHANNEL).await.unwrap();
    let mut messages = messages.into_on_message();
    let client = client(&server.url(), 3000).await;
    let latch = client.count_down_latch("ready").unwrap();

    assert_eq!(latch.count().await.unwrap(), 0, "a latch that does not exist is open");
    assert!(latch.wait(Some(Duration::ZERO)).await.unwrap());
    assert!(latch.try_set_count(2).await.unwrap());
    assert_eq!(messages.next().await.unwrap().get_payload::<String>().unwrap(), "1", "a new count publishes 1");
    assert!(!latch.try_set_count(5).await.unwrap(), "a latch counting down keeps its count");
    assert_eq!(raw.get::<_, Option<String>>("ready").await.unwrap().as_deref(), Some("2"));
    assert_eq!(latch.count_down().await.unwrap(), 1);
    assert_eq!(latch.count().await.unwrap(), 1);
    assert!(!latch.wait(Some(Duration::from_millis(50))).await.unwrap(), "still counting down");
    assert_eq!(latch.count_down().await.unwrap(), 0);
    assert_eq!(messages.next().await.unwrap().get_payload::<String>().unwrap(), "0", "opening publishes 0");
    assert!(!raw.exists::<_, bool>("ready").await.unwrap(), "an open latch is deleted");
    assert_eq!(latch.count_down().await.unwrap(), 0, "counting down an open latch changes nothing");
    eventually(Duration::from_secs(10), "reply latches swept", || {
        let mut raw = raw.clone();
        async move { keys(&mut raw).await.is_empty() }
    })
    .await;
    client.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_waiter_wakes_when_it_opens() {
    let server = RedisServer::start();
    let raw = server.raw().await;
    let a = client(&server.url(), 3000).await;
    let b = client(&server.url(), 3000).await;
    assert!(a.count_down_latch("ready").unwrap().try_set_count(3).await.unwrap());
    let mut waiters = Vec::new();
    for c in [&a, &b, &b] {
        let latch = c.count_down_latch("ready").unwrap();
        waiters.push(tokio::spawn(async move { latch.wait(None).await }));
    }
    eventually(Duration::from_secs(5), "both clients subscribed", || {
        let mut raw = raw.clone();
        async move { numsub(&mut raw, CHANNEL).await == 2 }
    })
    .await;
    for _ in 0..3 {
        b.count_down_latch("ready").unwrap().count_down().await.unwrap();
    }
    for w in waiters {
        let opened = tokio::time::timeout(Duration::from_secs(10), w).await.expect("woken by the message").unwrap();
        assert!(opened.unwrap());
    }
    eventually(Duration::from_secs(5), "unsubscribed", || {
        let mut raw = raw.clone();
        async move { numsub(&mut raw, CHANNEL).await == 0 }
    })
    .await;
    // A dropped wait leaves no subscription either.
    assert!(a.count_down_latch("ready").unwrap().try_set_count(1).await.unwrap());
    let latch = a.count_down_latch("ready").unwrap();
    assert!(tokio::time::timeout(Duration::from_millis(100), latch.wait(None)).await.is_err());
    eventually(Duration::from_secs(5), "the dropped wait unsubscribed", || {
        let mut raw = raw.clone();
        async move { numsub(&mut raw, CHANNEL).await == 0 }
    })
    .await;
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
}

#[tokio::test]
async fn bad_input_and_wrong_types_are_refused() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    let client = client(&server.url(), 3000).await;
    let latch = client.count_down_latch("l").unwrap();
    assert_eq!(latch.try_set_count(0).await.unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(latch.try_set_count(i64::MAX as u64 + 1).await.unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(latch.wait(Some(Duration::from_secs(8 * 86400))).await.unwrap_err().kind(), ErrorKind::InvalidArgument);
    let _: () = raw.hset("a-lock", "owner", 1).await.unwrap();
    let latch = client.count_down_latch("a-lock").unwrap();
    for err in [
        latch.count().await.unwrap_err(),
        latch.count_down().await.unwrap_err(),
        latch.wait(None).await.unwrap_err(),
        latch.try_set_count(1).await.unwrap_err(),
    ] {
        assert_eq!(err.kind(), ErrorKind::WrongType, "{err}");
    }
    client.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_count_down_retried_after_a_lost_reply_counts_once() {
    let server = RedisServer::start();
    let proxy = FaultProxy::start(server.port).await;
    let c = client(&proxy.url(), 3000).await;
    let latch = c.count_down_latch("lossy").unwrap();
    assert!(latch.try_set_count(3).await.unwrap());
    proxy.cut_next_reply_to(b"ferrolock_reply:{lossy}");
    assert_eq!(latch.count_down().await.unwrap(), 2);
    assert_eq!(latch.count().await.unwrap(), 2);
    c.shutdown().await.unwrap();
}
