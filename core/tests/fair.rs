//! The fair lock (Redisson's RFairLock) against real redis-servers: its queue and
//! per-waiter channels as Redisson writes them, FIFO order across clients, waiters
//! that give up or die leaving the line, wake-up by message.

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use ferrolock::{AcquireOptions, LockOptions};
use redis::AsyncCommands;

const QUEUE: &str = "redisson_lock_queue:{f}";
const TIMEOUTS: &str = "redisson_lock_timeout:{f}";

async fn queue(raw: &mut redis::aio::MultiplexedConnection) -> Vec<String> {
    raw.lrange(QUEUE, 0, -1).await.unwrap()
}

async fn queue_len_is(raw: &redis::aio::MultiplexedConnection, n: usize) {
    eventually(Duration::from_secs(10), &format!("{n} queued"), || {
        let mut raw = raw.clone();
        async move { queue(&mut raw).await.len() == n }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_and_channels_are_redissons() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    let a = client(&server.url(), 3000).await;
    let b = client(&server.url(), 3000).await;
    let holder = a.fair_lock("f").unwrap();
    let guard = holder.acquire().await.unwrap();
    assert_eq!(raw.hget::<_, _, u32>("f", holder.owner()).await.unwrap(), 1);

    let waiter = b.fair_lock("f").unwrap();
    let owner = waiter.owner().to_string();
    let waiting = tokio::spawn(async move { waiter.acquire().await.map(|g| g.into_hold()).map(|_| waiter) });
    let channel = format!("redisson_lock__channel:{{f}}:{owner}");
    eventually(Duration::from_secs(5), "the waiter queued and listens on its own channel", || {
        let (mut raw, channel) = (raw.clone(), channel.clone());
        async move { numsub(&mut raw, &channel).await == 1 }
    })
    .await;
    assert_eq!(queue(&mut raw).await, vec![owner.clone()]);
    let timeout: f64 = raw.zscore(TIMEOUTS, &owner).await.unwrap();
    let (s, us): (u64, u64) = redis::cmd("TIME").query_async(&mut raw).await.unwrap();
    let now = (s * 1000 + us / 1000) as f64;
    assert!(timeout > now + 300_000.0 - 100.0 && timeout <= now + 303_000.0, "now + lock TTL + 5 min: {timeout} vs {now}");
    assert_eq!(numsub(&mut raw, "redisson_lock__channel:{f}").await, 0, "nobody waits on the plain channel");

    let released = Instant::now();
    guard.release().await.unwrap();
    let waiter = tokio::time::timeout(Duration::from_secs(10), waiting).await.expect("woken").unwrap().unwrap();
    assert!(released.elapsed() < Duration::from_secs(2), "woken by the message, not the 3 s lease: {:?}", released.elapsed());
    assert!(queue(&mut raw).await.is_empty());
    assert_eq!(raw.zcard::<_, u64>(TIMEOUTS).await.unwrap(), 0);
    waiter.release().await.unwrap();
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grants_follow_arrival_across_eight_clients() {
    let server = RedisServer::start();
    let raw = server.raw().await;
    let first = client(&server.url(), 3000).await;
    let guard = first.fair_lock("f").unwrap().acquire().await.unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut clients = Vec::new();
    let mut tasks = Vec::new();
    for i in 0..8 {
        let c = client(&server.url(), 3000).await;
        let lock = c.fair_lock("f").unwrap();
        let order = order.clone();
        tasks.push(tokio::spawn(async move {
            let guard = lock.acquire().await.unwrap();
            order.lock().unwrap().push(i);
            guard.release().await.unwrap();
        }));
        // Each arrives after the one before is in line.
        queue_len_is(&raw, i + 1).await;
        clients.push(c);
    }
    guard.release().await.unwrap();
    for t in tasks {
        tokio::time::timeout(Duration::from_secs(30), t).await.expect("every waiter got its turn").unwrap();
    }
    assert_eq!(*order.lock().unwrap(), (0..8).collect::<Vec<_>>(), "grant order = arrival order");
    for c in clients {
        c.shutdown().await.unwrap();
    }
    first.shutdown().await.unwrap();
}

/// A take moves everyone still in line up a turn (their timeouts by the wait time,
/// as Redisson's acquire does), once: the shift follows the take's reply (fair_shift.lua).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_take_moves_the_line_up_a_turn_once() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    let first = client(&server.url(), 3000).await;
    let guard = first.fair_lock("f").unwrap().acquire().await.unwrap();
    let (mut clients, mut owners, mut tasks, mut go) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for i in 0..3 {
        let c = client(&server.url(), 3000).await;
        let lock = c.fair_lock("f").unwrap();
        owners.push(lock.owner().to_string());
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        go.push(tx);
        tasks.push(tokio::spawn(async move {
            let guard = lock.acquire().await.unwrap();
            let _ = rx.await;
            guard.release().await.unwrap();
        }));
        queue_len_is(&raw, i + 1).await;
        clients.push(c);
    }
    let mut before = Vec::new();
    for owner in &owners {
        before.push(raw.zscore::<_, _, f64>(TIMEOUTS, owner).await.unwrap());
    }
    assert!(before[0] < before[1] && before[1] < before[2], "each a turn behind the one before: {before:?}");
    guard.release().await.unwrap();
    queue_len_is(&raw, 2).await;
    let expected = [before[1] - 300_000.0, before[2] - 300_000.0];
    eventually(Duration::from_secs(10), "the two left in line moved up a turn", || {
        let (mut raw, owners) = (raw.clone(), owners.clone());
        async move {
            let second: Option<f64> = raw.zscore(TIMEOUTS, &owners[1]).await.unwrap();
            let third: Option<f64> = raw.zscore(TIMEOUTS, &owners[2]).await.unwrap();
            [second, third] == [Some(expected[0]), Some(expected[1])]
        }
    })
    .await;
    assert_eq!(raw.hget::<_, _, u32>("f", &owners[0]).await.unwrap(), 1);
    assert_eq!(queue(&mut raw).await, owners[1..].to_vec());
    // Once: the next take (the second waiter's) moves the last one up one more turn only.
    go.remove(0).send(()).unwrap();
    queue_len_is(&raw, 1).await;
    eventually(Duration::from_secs(10), "the last one moved up one more turn", || {
        let (mut raw, owner) = (raw.clone(), owners[2].clone());
        async move { raw.zscore::<_, _, Option<f64>>(TIMEOUTS, &owner).await.unwrap() == Some(expected[1] - 300_000.0) }
    })
    .await;
    assert_eq!(raw.hget::<_, _, u32>("f", &owners[1]).await.unwrap(), 1);
    for tx in go {
        tx.send(()).unwrap();
    }
    for t in tasks {
        tokio::time::timeout(Duration::from_secs(30), t).await.expect("every waiter got its turn").unwrap();
    }
    assert_eq!(raw.zcard::<_, u64>(TIMEOUTS).await.unwrap(), 0);
    for c in clients {
        c.shutdown().await.unwrap();
    }
    first.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_that_give_up_or_die_leave_the_line() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    let a = client(&server.url(), 3000).await;
    let b = client(&server.url(), 3000).await;
    let guard = a.fair_lock("f").unwrap().acquire().await.unwrap();

    // A bounded wait that runs out, and a dropped one, both leave the queue.
    let bounded = b.fair_lock("f").unwrap();
    assert!(bounded.acquire_with(AcquireOptions::wait(Duration::from_millis(300))).await.unwrap().is_none());
    queue_len_is(&raw, 0).await;
    let dropped = b.fair_lock("f").unwrap();
    assert!(tokio::time::timeout(Duration::from_millis(300), dropped.acquire()).await.is_err());
    queue_len_is(&raw, 0).await;

    // A waiter that died in line (as Redisson would leave it) is skipped once its turn passes.
    let (s, us): (u64, u64) = redis::cmd("TIME").query_async(&mut raw).await.unwrap();
    let now = s * 1000 + us / 1000;
    let _: () = raw.rpush(QUEUE, "dead:1").await.unwrap();
    let _: () = raw.zadd(TIMEOUTS, "dead:1", now + 1500).await.unwrap();
    let live = b.lock_with("f", LockOptions { fair_wait_timeout: Some(Duration::from_secs(2)), ..LockOptions::kind(ferrolock::LockKind::Fair) }).unwrap();
    let waiting = tokio::spawn(async move { live.acquire().await.map(|g| g.into_hold()).map(|_| live) });
    queue_len_is(&raw, 2).await;
    guard.release().await.unwrap();
    let live = tokio::time::timeout(Duration::from_secs(15), waiting).await.expect("the dead waiter was skipped").unwrap().unwrap();
    assert!(!queue(&mut raw).await.contains(&"dead:1".to_string()));
    live.release().await.unwrap();

    // A force unlock wakes the head of the line at once.
    let guard = a.fair_lock("f").unwrap().acquire().await.unwrap().into_hold();
    let waiter = b.fair_lock("f").unwrap();
    let waiting = tokio::spawn(async move { waiter.acquire().await.map(|g| g.into_hold()).map(|_| waiter) });
    queue_len_is(&raw, 1).await;
    let forced = Instant::now();
    assert!(a.fair_lock("f").unwrap().force_unlock().await.unwrap());
    let waiter = tokio::time::timeout(Duration::from_secs(10), waiting).await.unwrap().unwrap().unwrap();
    assert!(forced.elapsed() < Duration::from_secs(2), "woken by the force unlock's message: {:?}", forced.elapsed());
    waiter.release().await.unwrap();
    drop(guard);
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_fair_hold_is_reported_and_wrong_types_are_refused() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    let client = client(&server.url(), 3000).await;
    let lock = client.fair_lock("f").unwrap();
    let hold = lock.acquire().await.unwrap().into_hold();
    let _: () = raw.del("f").await.unwrap();
    client.renew_held_locks().await.unwrap();
    let lost = tokio::time::timeout(Duration::from_secs(5), hold.lost()).await.expect("reported");
    assert_eq!(lost.kind(), ferrolock::ErrorKind::LockLost);
    assert_eq!(lock.release().await.unwrap_err().kind(), ferrolock::ErrorKind::LockLost);
    let _: () = raw.set("s", "x").await.unwrap();
    let err = client.fair_lock("s").unwrap().try_acquire().await.err().unwrap();
    assert_eq!(err.kind(), ferrolock::ErrorKind::WrongType, "{err}");
    client.shutdown().await.unwrap();
}

/// Fair and read holds share the lock's handling of lost replies: an acquire whose
/// reply is cut is read back (one level, not two), a release is retried with its
/// latch (once).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_replies_act_once_for_fair_and_read_holds() {
    let server = RedisServer::start();
    let proxy = FaultProxy::start(server.port).await;
    let mut raw = server.raw().await;
    let client = client(&proxy.url(), 3000).await;
    let fair = client.fair_lock("fl").unwrap();
    proxy.cut_next_reply_to(b"redisson_lock_queue:{fl}");
    fair.acquire().await.unwrap().into_hold();
    assert_eq!(raw.hget::<_, _, u32>("fl", fair.owner()).await.unwrap(), 1);
    proxy.cut_next_reply_to(b"redisson_lock_queue:{fl}");
    assert_eq!(fair.release().await.unwrap(), ferrolock::Released::Unlocked);
    assert!(!raw.exists::<_, bool>("fl").await.unwrap());

    let read = client.read_write_lock("rl").unwrap().read();
    proxy.cut_next_reply_to(b"rwlock_timeout");
    read.acquire().await.unwrap().into_hold();
    assert_eq!(raw.hget::<_, _, u32>("rl", read.owner()).await.unwrap(), 1);
    let second = format!("{{rl}}:{}:rwlock_timeout:2", read.owner());
    assert!(!raw.exists::<_, bool>(&second).await.unwrap(), "one read hold");
    proxy.cut_next_reply_to(b"rwlock_timeout");
    assert_eq!(read.release().await.unwrap(), ferrolock::Released::Unlocked);
    assert!(!raw.exists::<_, bool>("rl").await.unwrap());
    client.shutdown().await.unwrap();
}

/// A waiter gone without leaving (its leave lost in a failover, say) whose turn ends far
/// ahead: the queue's timeouts move up a turn by a shift sent after each take
/// (fair_shift.lua, best effort), so every shift that never lands leaves them a turn
/// late, and a Cluster failover run left a ghost at the head with its turn 423 s away.
/// Once the lock is free it holds the line up for one wait at most, not until then.
#[tokio::test]
async fn a_gone_waiter_far_ahead_holds_the_line_up_one_wait_at_most() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    let client = client(&server.url(), 3000).await;
    let (s, us): (u64, u64) = redis::cmd("TIME").query_async(&mut raw).await.unwrap();
    let now = s * 1000 + us / 1000;
    let _: () = raw.rpush(QUEUE, "gone:1").await.unwrap();
    let _: () = raw.zadd(TIMEOUTS, "gone:1", now + 400_000).await.unwrap();
    let lock = client
        .lock_with("f", LockOptions { fair_wait_timeout: Some(Duration::from_millis(500)), ..LockOptions::kind(ferrolock::LockKind::Fair) })
        .unwrap();
    let taken = lock.acquire_with(AcquireOptions::wait(Duration::from_secs(20))).await.unwrap();
    assert!(taken.is_some(), "the line was held up past 20 s by a waiter that is gone");
    assert!(!queue(&mut raw).await.contains(&"gone:1".to_string()));
    taken.unwrap().release().await.unwrap();
    client.shutdown().await.unwrap();
}
