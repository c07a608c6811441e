//! Client::inspect and Client::scan: every kind told from its keys with what is
//! going on there, and the names under a prefix, on one server and on a Cluster
//! (where the names spread over every master).

mod common;

use std::time::Duration;

use common::*;
use ferrolock::{Client, ErrorKind, ObjectKind};

const LIMIT: Duration = Duration::from_secs(10);

async fn connect(url: &str) -> Client {
    builder(url, 30_000)
        .connect_timeout(Duration::from_secs(2))
        .response_timeout(Duration::from_secs(2))
        .connect()
        .await
        .unwrap()
}

async fn kind_of(client: &Client, name: &str) -> ObjectKind {
    client.inspect(name).await.unwrap().kind
}

/// Every kind, its holders, waiters and numbers, and the names scan lists.
async fn every_kind_is_told_and_listed(url: &str) {
    let (a, b) = (connect(url).await, connect(url).await);

    let lock = a.lock("ins:lock").unwrap();
    let guard = lock.acquire().await.unwrap();
    lock.set_holder_info(Some(r#"{"host":"h1","pid":42,"cmd":"job"}"#)).await.unwrap();
    let fenced = a.fenced_lock("ins:fenced").unwrap();
    fenced.acquire().await.unwrap().release().await.unwrap();
    let _fair = a.fair_lock("ins:fair").unwrap().acquire().await.unwrap();
    let fair_waiter = b.fair_lock("ins:fair").unwrap();
    let fair_waiting = tokio::spawn(async move { fair_waiter.acquire().await.map(drop) });
    let rw = a.read_write_lock("ins:rw").unwrap();
    let _read = rw.read().acquire().await.unwrap();
    let semaphore = a.semaphore("ins:sem").unwrap();
    // Every permit out: a number nothing waits on would not tell a semaphore from a latch.
    assert!(semaphore.try_set_permits(1).await.unwrap());
    let _one = semaphore.acquire(1).await.unwrap();
    let expirable = a.permit_expirable_semaphore("ins:pes").unwrap();
    assert!(expirable.try_set_permits(1).await.unwrap());
    let _permit = expirable.acquire(Some(Duration::from_secs(60))).await.unwrap();
    let latch = a.count_down_latch("ins:latch").unwrap();
    assert!(latch.try_set_count(2).await.unwrap());
    let latch_waiter = b.count_down_latch("ins:latch").unwrap();
    let latch_waiting = tokio::spawn(async move { latch_waiter.wait(None).await.map(drop) });
    let _other = a.lock("other:lock").unwrap().acquire().await.unwrap();

    let names: Vec<String> = a.scan("ins:").await.unwrap().into_iter().map(|n| String::from_utf8(n).unwrap()).collect();
    assert_eq!(names, ["ins:fair", "ins:fenced", "ins:latch", "ins:lock", "ins:pes", "ins:rw", "ins:sem"]);
    assert!(a.scan("").await.unwrap().contains(&b"other:lock".to_vec()));
    assert!(a.scan("nothing-here:").await.unwrap().is_empty());

    let seen = a.inspect("ins:lock").await.unwrap();
    assert_eq!(seen.kind, ObjectKind::Lock);
    assert_eq!(seen.holders().len(), 1);
    assert_eq!(seen.holders()[0].owner, lock.owner());
    assert_eq!(seen.holders()[0].info.as_deref(), Some(r#"{"host":"h1","pid":42,"cmd":"job"}"#));
    assert!(seen.lease_left().is_some_and(|left| left > Duration::ZERO && left <= Duration::from_secs(30)), "{seen:?}");
    assert_eq!(seen.waiters, 0);
    let seen = a.inspect("ins:fenced").await.unwrap();
    assert_eq!((seen.kind, seen.holders().len(), seen.last_token()), (ObjectKind::FencedLock, 0, Some(1)), "{seen:?}");
    assert_eq!(seen.lease_left(), None);

    eventually(LIMIT, "the fair waiter to queue", || async { a.inspect("ins:fair").await.unwrap().waiters == 1 }).await;
    let seen = a.inspect("ins:fair").await.unwrap();
    assert_eq!((seen.kind, seen.holders().len(), seen.queue.len()), (ObjectKind::FairLock, 1, 1), "{seen:?}");
    let seen = a.inspect("ins:rw").await.unwrap();
    assert_eq!((seen.kind, seen.mode.as_deref(), seen.holders().len()), (ObjectKind::ReadWriteLock, Some("read"), 1), "{seen:?}");
    let seen = a.inspect("ins:sem").await.unwrap();
    assert_eq!((seen.kind, seen.permits, seen.lock.is_none()), (ObjectKind::Semaphore, Some(0), true), "{seen:?}");
    let seen = a.inspect("ins:pes").await.unwrap();
    assert_eq!((seen.kind, seen.permits, seen.permits_out.len()), (ObjectKind::PermitExpirableSemaphore, Some(0), 1), "{seen:?}");
    assert_eq!(seen.permits_out[0].id, _permit.id());
    assert!(seen.permits_out[0].lease_left_ms.is_some_and(|ms| ms > 0 && ms <= 60_000), "{seen:?}");
    eventually(LIMIT, "the latch waiter to subscribe", || async { a.inspect("ins:latch").await.unwrap().waiters == 1 }).await;
    let seen = a.inspect("ins:latch").await.unwrap();
    assert_eq!((seen.kind, seen.count), (ObjectKind::CountDownLatch, Some(2)), "{seen:?}");

    // A waiter on the plain lock is counted, and a release shows at once.
    let waiter = b.lock("ins:lock").unwrap();
    let waiting = tokio::spawn(async move { waiter.acquire().await.map(drop) });
    eventually(LIMIT, "the lock's waiter to subscribe", || async { a.inspect("ins:lock").await.unwrap().waiters == 1 }).await;
    guard.release().await.unwrap();
    tokio::time::timeout(LIMIT, waiting).await.unwrap().unwrap().unwrap();
    assert_eq!(kind_of(&a, "ins:lock").await, ObjectKind::Lock);

    // A kind forced on a key that cannot be one is refused; a told one is read as asked.
    let e = a.inspect_as("ins:sem", ObjectKind::FairLock).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::WrongType);
    assert!(e.message().contains("holds a string, not a fair lock"), "{e}");
    let seen = a.inspect_as("ins:sem", ObjectKind::CountDownLatch).await.unwrap();
    assert_eq!((seen.kind, seen.count), (ObjectKind::CountDownLatch, Some(0)));
    // A name nobody used is a free lock.
    let seen = a.inspect("ins:never").await.unwrap();
    assert_eq!((seen.kind, seen.holders().len()), (ObjectKind::Lock, 0));

    latch.count_down().await.unwrap();
    latch.count_down().await.unwrap();
    tokio::time::timeout(LIMIT, latch_waiting).await.unwrap().unwrap().unwrap();
    drop(_fair);
    tokio::time::timeout(LIMIT, fair_waiting).await.unwrap().unwrap().unwrap();
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_server() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    // A number nothing waits on, and keys that are no lock-family object.
    let _: () = redis::cmd("SET").arg("ins:n").arg("3").query_async(&mut raw).await.unwrap();
    let _: () = redis::cmd("SET").arg("ins:text").arg("hello").query_async(&mut raw).await.unwrap();
    let _: () = redis::cmd("RPUSH").arg("ins:list").arg("x").query_async(&mut raw).await.unwrap();
    let client = connect(&server.url()).await;
    let seen = client.inspect("ins:n").await.unwrap();
    assert_eq!((seen.kind, seen.permits, seen.count), (ObjectKind::SemaphoreOrLatch, Some(3), Some(3)));
    let e = client.inspect("ins:list").await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::WrongType);
    assert_eq!(client.scan("ins:").await.unwrap(), [b"ins:n".to_vec()]);
    let _: () = redis::cmd("DEL").arg("ins:n").arg("ins:text").arg("ins:list").query_async(&mut raw).await.unwrap();
    client.shutdown().await.unwrap();
    every_kind_is_told_and_listed(&server.url()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster() {
    let cluster = Cluster::start().await;
    // The names live on more than one master: scan has to ask each.
    let mut owners = std::collections::BTreeSet::new();
    for name in ["ins:fair", "ins:fenced", "ins:latch", "ins:lock", "ins:pes", "ins:rw", "ins:sem"] {
        owners.insert(cluster.owner_of(name.as_bytes()).await);
    }
    assert!(owners.len() > 1, "the names all hash to one master: {owners:?}");
    every_kind_is_told_and_listed(&cluster.url()).await;
}
