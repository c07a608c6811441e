//! Same-client permit hand-off: a release that finds a waiter of its own client
//! queued for the permits it returns gives them to it inside the client (no
//! script, no message, the count never moves), and still lets other clients in
//! after a streak; the acquire that comes back after it queues without a try the
//! client knows fails.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use ferrolock::{Client, Semaphore};
use futures_util::StreamExt;
use redis::AsyncCommands;

/// Spawns `sem.acquire(permits)` (kept: forgotten) and returns once it is waiting:
/// subscribed, its tries (if any) done, and parked (so a release may hand to it).
async fn spawn_waiter(client: &Client, sem: &Semaphore, permits: u64) -> tokio::task::JoinHandle<u64> {
    let parked = client.waiting_acquires();
    let waiting = tokio::spawn({
        let sem = sem.clone();
        async move { sem.acquire(permits).await.unwrap().forget() }
    });
    eventually(Duration::from_secs(5), "the waiter parked", || {
        let now_parked = client.waiting_acquires();
        async move { now_parked == parked + 1 }
    })
    .await;
    waiting
}

async fn value(raw: &mut redis::aio::MultiplexedConnection, key: &str) -> Option<String> {
    raw.get(key).await.unwrap()
}

/// A server, a raw connection to it, a client and its semaphore `name` set to `permits`.
async fn set_up(name: &str, permits: u64) -> (RedisServer, redis::aio::MultiplexedConnection, Client, Semaphore) {
    let server = RedisServer::start();
    let raw = server.raw().await;
    let c = client(&server.url(), 10_000).await;
    let sem = c.semaphore(name).unwrap();
    assert!(sem.try_set_permits(permits).await.unwrap());
    (server, raw, c, sem)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_hands_its_permits_to_a_waiter_of_the_same_client_without_freeing_them() {
    let (server, mut raw, c, sem) = set_up("slots", 1).await;
    let _: () = redis::cmd("CONFIG").arg("SET").arg("notify-keyspace-events").arg("KA").query_async(&mut raw).await.unwrap();
    let other = client(&server.url(), 10_000).await;
    sem.acquire(1).await.unwrap().forget();
    // Another client waits first: the permit still goes to the releaser's own waiter.
    let outsider = spawn_waiter(&other, &other.semaphore("slots").unwrap(), 1).await;
    let mine = spawn_waiter(&c, &c.semaphore("slots").unwrap(), 1).await;
    // Everything that happens to the key or on its channel, in order.
    let mut events = redis::Client::open(server.url()).unwrap().get_async_pubsub().await.unwrap();
    events.subscribe(&["redisson_sc:{slots}", "__keyspace@0__:slots"]).await.unwrap();
    let mut events = events.into_on_message();
    let (scripts, publishes) = (script_calls(&mut raw).await, command_calls(&mut raw, &["publish"]).await);

    assert_eq!(sem.release(1).await.unwrap(), 0, "no permit free after the release");
    assert_eq!(tokio::time::timeout(Duration::from_secs(10), mine).await.expect("handed over").unwrap(), 1);

    assert_eq!(script_calls(&mut raw).await - scripts, 0, "no script: the permit changed hands inside the client");
    assert_eq!(command_calls(&mut raw, &["publish"]).await, publishes, "nothing published: the permit never went free");
    assert_eq!(value(&mut raw, "slots").await.as_deref(), Some("0"));
    let _: i64 = raw.publish("redisson_sc:{slots}", "marker").await.unwrap();
    let first = events.next().await.unwrap();
    assert_eq!(
        (first.get_channel_name().to_string(), first.get_payload::<String>().unwrap()),
        ("redisson_sc:{slots}".to_string(), "marker".to_string()),
        "the key was never written and nothing was published before the marker"
    );
    assert!(!outsider.is_finished(), "the other client's waiter never saw a free permit");

    // With no waiter of its own left, a release frees the permit for everyone.
    sem.release(1).await.unwrap();
    assert_eq!(tokio::time::timeout(Duration::from_secs(10), outsider).await.expect("woken by the message").unwrap(), 1);
    assert_eq!(value(&mut raw, "slots").await.as_deref(), Some("0"));
    c.shutdown().await.unwrap();
    other.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_for_other_permits_is_not_handed_any() {
    let (_server, mut raw, c, sem) = set_up("pairs", 0).await;
    let waiting = spawn_waiter(&c, &sem, 2).await;
    let publishes = command_calls(&mut raw, &["publish"]).await;
    assert_eq!(sem.release(1).await.unwrap(), 1, "one permit is not what it waits for: freed");
    assert_eq!(command_calls(&mut raw, &["publish"]).await, publishes + 1);
    assert_eq!(sem.release(1).await.unwrap(), 2);
    assert_eq!(tokio::time::timeout(Duration::from_secs(10), waiting).await.expect("woken").unwrap(), 2);
    assert_eq!(value(&mut raw, "pairs").await.as_deref(), Some("0"));
    c.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streak_of_permit_hand_offs_ends_with_a_release_that_publishes() {
    let (_server, mut raw, c, sem) = set_up("streak", 0).await;
    let mut published_at = Vec::new();
    for release in 1..=39 {
        let waiting = spawn_waiter(&c, &sem, 1).await;
        let publishes = command_calls(&mut raw, &["publish"]).await;
        sem.release(1).await.unwrap();
        waiting.await.unwrap();
        if command_calls(&mut raw, &["publish"]).await > publishes {
            published_at.push(release);
        }
    }
    // STREAK hand-offs in a row, then a release that frees the permit for everyone.
    assert_eq!(published_at, vec![13, 26, 39], "releases that published");
    assert_eq!(value(&mut raw, "streak").await.as_deref(), Some("0"));
    c.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handing_permits_over_in_a_row_still_lets_other_clients_in() {
    let (server, mut raw, c, sem) = set_up("busy", 1).await;
    let outsider_client = client(&server.url(), 10_000).await;
    let stop = Arc::new(AtomicBool::new(false));
    let sections = Arc::new(AtomicU64::new(0));
    let passers: Vec<_> = (0..3)
        .map(|_| {
            let (sem, stop, sections) = (c.semaphore("busy").unwrap(), stop.clone(), sections.clone());
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    let permits = sem.acquire(1).await.unwrap();
                    sections.fetch_add(1, Ordering::Relaxed);
                    permits.release().await.unwrap();
                }
            })
        })
        .collect();
    eventually(Duration::from_secs(5), "the workers pass the permit around", || {
        let n = sections.load(Ordering::Relaxed);
        async move { n > 50 }
    })
    .await;
    let publishes = command_calls(&mut raw, &["publish"]).await;
    let outsider = outsider_client.semaphore("busy").unwrap();
    let got = outsider.acquire_with(1, Some(Duration::from_secs(10))).await.unwrap();
    assert!(got.is_some(), "another client got in while three workers kept handing the permit over");
    assert!(command_calls(&mut raw, &["publish"]).await > publishes, "woken by a release that freed the permit");
    stop.store(true, Ordering::Relaxed);
    got.unwrap().release().await.unwrap();
    for p in passers {
        p.await.unwrap();
    }
    assert_eq!(sem.available().await.unwrap(), 1, "no permit lost or made");
    c.shutdown().await.unwrap();
    outsider_client.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acquire_behind_waiters_of_its_client_skips_the_try_it_knows_fails() {
    let (server, mut raw, c, sem) = set_up("few", 0).await;
    let other = client(&server.url(), 10_000).await;
    let calls = script_calls(&mut raw).await;
    let first = spawn_waiter(&c, &sem, 1).await;
    assert_eq!(script_calls(&mut raw).await, calls + 2, "the first waiter tried before and after subscribing");
    let second = spawn_waiter(&c, &sem, 1).await;
    assert_eq!(script_calls(&mut raw).await, calls + 2, "no try: one for as many permits failed since the last message");

    // Each release of another client publishes and wakes one of them, which takes the permit.
    let theirs = other.semaphore("few").unwrap();
    theirs.release(1).await.unwrap();
    eventually(Duration::from_secs(10), "one waiter took the first permit", || {
        let done = first.is_finished() || second.is_finished();
        async move { done }
    })
    .await;
    theirs.release(1).await.unwrap();
    for w in [first, second] {
        assert_eq!(tokio::time::timeout(Duration::from_secs(10), w).await.expect("woken").unwrap(), 1);
    }
    assert_eq!(value(&mut raw, "few").await.as_deref(), Some("0"));
    c.shutdown().await.unwrap();
    other.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acquire_asks_the_server_when_it_wants_fewer_permits_or_a_message_came() {
    let (_server, mut raw, c, sem) = set_up("some", 1).await;
    let pair = spawn_waiter(&c, &sem, 2).await;

    // Two permits were short; one may not be.
    let calls = script_calls(&mut raw).await;
    let one = tokio::time::timeout(Duration::from_secs(10), sem.acquire(1)).await.expect("the free permit").unwrap();
    assert_eq!(script_calls(&mut raw).await, calls + 1);
    one.forget();

    // A message, any message, may follow a rise: the next try asks again.
    let quiet = spawn_waiter(&c, &sem, 1).await;
    let calls = script_calls(&mut raw).await;
    assert!(sem.try_acquire(1).await.unwrap().is_none());
    assert_eq!(script_calls(&mut raw).await, calls, "known short: no call");
    let _: i64 = raw.publish("redisson_sc:{some}", "0").await.unwrap();
    eventually(Duration::from_secs(5), "a try after the message asked the server", || {
        let (sem, mut raw) = (sem.clone(), raw.clone());
        async move { sem.try_acquire(1).await.unwrap().is_none() && script_calls(&mut raw).await > calls }
    })
    .await;

    sem.release(3).await.unwrap();
    assert_eq!(tokio::time::timeout(Duration::from_secs(10), pair).await.expect("woken").unwrap(), 2);
    assert_eq!(tokio::time::timeout(Duration::from_secs(10), quiet).await.expect("woken").unwrap(), 1);
    c.shutdown().await.unwrap();
}
