//! Multi-locks take their members at once: an uncontended acquire costs one
//! round-trip whatever N (measured through fault proxies that delay every member),
//! a busy member is waited on holding only the members before it, a round that
//! cannot reach its quorum gives back what it took, and holders sharing one client
//! per server (as the bindings' Redlock does) keep an exact count without stalls.

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use ferrolock::{AcquireOptions, Client, ErrorKind, Lock, Quorum};

const DELAY: Duration = Duration::from_millis(100); // each way: a round-trip is 200 ms

async fn exists(server: &RedisServer, key: &str) -> bool {
    redis::cmd("EXISTS").arg(key).query_async::<bool>(&mut server.raw().await).await.unwrap()
}

async fn connect_all(urls: &[String], watchdog_ms: u64) -> Vec<Client> {
    let mut clients = Vec::new();
    for url in urls {
        clients.push(builder(url, watchdog_ms).response_timeout(Duration::from_secs(3)).connect().await.unwrap());
    }
    clients
}

fn multi(clients: &[Client], name: &str, quorum: Quorum) -> Lock {
    Lock::multi(clients.iter().map(|c| c.lock(name).unwrap()).collect(), quorum).unwrap()
}

/// Five masters, each behind a proxy, and one client per proxy.
async fn proxied(n: usize) -> (Vec<RedisServer>, Vec<FaultProxy>, Vec<Client>) {
    let servers: Vec<RedisServer> = (0..n).map(|_| RedisServer::start()).collect();
    let mut proxies = Vec::new();
    for server in &servers {
        proxies.push(FaultProxy::start(server.port).await);
    }
    let clients = connect_all(&proxies.iter().map(FaultProxy::url).collect::<Vec<_>>(), 30_000).await;
    (servers, proxies, clients)
}

/// With every member's replies a round-trip of 200 ms away, acquiring and releasing
/// a Redlock over 5 (and a MultiLock over 3) each take about one round-trip, not one
/// per member: every try is sent before any reply arrives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_uncontended_acquire_and_release_cost_one_round_trip_whatever_n() {
    let (_servers, proxies, clients) = proxied(5).await;
    let redlock = multi(&clients, "rc:fast", Quorum::Majority);
    let all = multi(&clients[..3], "rc:fast:all", Quorum::All);
    // Connections, subscriptions and scripts ready before the delay.
    for lock in [&redlock, &all] {
        lock.acquire().await.unwrap().release().await.unwrap();
    }
    for proxy in &proxies {
        proxy.set_one_way_delay(DELAY);
    }
    let round_trip = DELAY * 2;
    for (lock, n) in [(&redlock, 5), (&all, 3)] {
        let started = Instant::now();
        let guard = lock.acquire_with(AcquireOptions::wait(Duration::from_secs(20))).await.unwrap().expect("uncontended");
        let acquired = started.elapsed();
        let started = Instant::now();
        guard.release().await.unwrap();
        let released = started.elapsed();
        eprintln!("{n} members, {round_trip:?} round-trips: acquire {acquired:?}, release {released:?}");
        // One after another would take n round-trips (at least 3 for a majority of 5).
        assert!(acquired >= round_trip, "{acquired:?}");
        assert!(acquired < round_trip * 2, "acquiring {n} members took {acquired:?}: not all at once");
        assert!(released < round_trip * 2, "releasing {n} members took {released:?}: not all at once");
    }
}

/// A MultiLock whose second member is busy keeps the first, gives back the third and
/// waits on the second (a waiter holds only members before the one it waits on, so
/// waiters never hold parts of the lock each other needs); once the member is free
/// it takes all three.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_member_is_waited_on_holding_only_the_members_before_it() {
    let servers: Vec<RedisServer> = (0..3).map(|_| RedisServer::start()).collect();
    let urls: Vec<String> = servers.iter().map(RedisServer::url).collect();
    let ours = connect_all(&urls, 30_000).await;
    let others = connect_all(&urls, 30_000).await;
    let blocker = others[1].lock("rc:order").unwrap().acquire().await.unwrap();
    let all = multi(&ours, "rc:order", Quorum::All);
    let waiter = tokio::spawn({
        let all = all.clone();
        async move { all.acquire_with(AcquireOptions::wait(Duration::from_secs(20))).await.map(|g| g.map(|g| g.into_hold())) }
    });
    // Its first round takes members 1 and 3 and gives 3 back before waiting on 2.
    eventually(Duration::from_secs(10), "waiting on member 2", || async { numsub(&mut servers[1].raw().await, "redisson_lock__channel:{rc:order}").await > 0 }).await;
    assert!(exists(&servers[0], "rc:order").await, "member 1, before the busy one, kept");
    assert!(!exists(&servers[2], "rc:order").await, "member 3, after the busy one, given back");
    assert!(!waiter.is_finished());
    blocker.release().await.unwrap();
    let hold = waiter.await.unwrap().unwrap().expect("acquired once member 2 was free");
    assert_eq!(hold.hold_count(), 1);
    for server in &servers {
        assert!(exists(server, "rc:order").await, "every member held");
    }
    all.release().await.unwrap();
}

/// Members 1-3 of 5 never answer (black-holed): the two that answer are taken at
/// once, then the other three fail by the response timeout, the quorum is out of
/// reach, and the two are given back before the error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quorum_lost_mid_acquire_gives_back_the_members_taken() {
    let servers: Vec<RedisServer> = (0..5).map(|_| RedisServer::start()).collect();
    let mut proxies = Vec::new();
    for server in &servers {
        proxies.push(FaultProxy::start(server.port).await);
    }
    let mut clients = Vec::new();
    for proxy in &proxies {
        clients.push(client(&proxy.url(), 30_000).await); // response timeout 500 ms
    }
    let lock = multi(&clients, "rc:lost", Quorum::Majority);
    lock.acquire().await.unwrap().release().await.unwrap();
    for proxy in &proxies[..3] {
        proxy.set_blackhole(true);
    }
    let probe = tokio::spawn({
        let servers: Vec<String> = servers[3..].iter().map(RedisServer::url).collect();
        async move {
            // Both answering members are held at some point during the acquire.
            let mut conns = Vec::new();
            for url in servers {
                conns.push(redis::Client::open(url).unwrap().get_multiplexed_async_connection().await.unwrap());
            }
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                let mut held = 0;
                for conn in &mut conns {
                    held += redis::cmd("EXISTS").arg("rc:lost").query_async::<i64>(conn).await.unwrap();
                }
                if held == 2 {
                    return true;
                }
                tokio::task::yield_now().await;
            }
            false
        }
    });
    let started = Instant::now();
    let err = lock.acquire_with(AcquireOptions::wait(Duration::from_secs(10))).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connection, "{err:?}");
    assert!(err.message().contains("3 member(s) failed"), "{}", err.message());
    assert!(started.elapsed() < Duration::from_secs(8), "{:?}", started.elapsed());
    assert!(probe.await.unwrap(), "members 4 and 5 were taken while 1-3 were unanswered");
    for server in &servers[3..] {
        assert!(!exists(server, "rc:lost").await, "what it took was given back");
    }
    assert_eq!(lock.local_hold_count(), 0);
    for proxy in &proxies[..3] {
        proxy.set_blackhole(false);
    }
}

/// 8 holders sharing one client per server (the bindings' Redlock), 3 and 5
/// masters: an exact count of non-atomic increments, and no holder stalls.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn holders_sharing_clients_keep_an_exact_count_without_stalls() {
    let servers: Vec<RedisServer> = (0..5).map(|_| RedisServer::start()).collect();
    let urls: Vec<String> = servers.iter().map(RedisServer::url).collect();
    let clients = connect_all(&urls, 30_000).await;
    for n in [3, 5] {
        let counter = Arc::new(Mutex::new(0u64));
        let longest = Arc::new(Mutex::new(Duration::ZERO));
        let started = Instant::now();
        let mut tasks = Vec::new();
        for _ in 0..8 {
            let (lock, counter, longest) = (multi(&clients[..n], "rc:count", Quorum::Majority), counter.clone(), longest.clone());
            tasks.push(tokio::spawn(async move {
                for _ in 0..25 {
                    let asked = Instant::now();
                    let guard = lock.acquire().await.unwrap();
                    let waited = asked.elapsed();
                    let seen = *counter.lock().unwrap();
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    *counter.lock().unwrap() = seen + 1;
                    guard.release().await.unwrap();
                    let mut l = longest.lock().unwrap();
                    *l = (*l).max(waited);
                }
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
        let longest = *longest.lock().unwrap();
        eprintln!("N={n}: 8 x 25 sections in {:?}, longest wait {longest:?}", started.elapsed());
        assert_eq!(*counter.lock().unwrap(), 200);
        // A holder waits for the others' sections (about 8 x 2 ms), never for a round's
        // whole wait (1.5 s per member): that would be waiters holding each other's members.
        assert!(longest < Duration::from_millis(1_500), "N={n}: a holder waited {longest:?}");
        for server in &servers[..n] {
            assert!(!exists(server, "rc:count").await, "nothing left behind");
        }
    }
}
