//! ACL users: the one-server least-privilege user of the operating guide runs every
//! lock operation and the whole family, and no command, key or channel of it is
//! refused (ACL LOG; Sentinel's and Cluster's users: acl_sentinel.rs, acl_cluster.rs); a
//! user refused a command gets `PermissionDenied` naming the rule that would allow
//! it (and nothing stays locked); a user refused pub/sub still gets its locks, and
//! the client warns once that waiting is slow.

mod common;

use std::time::Duration;

use common::*;
use ferrolock::{AcquireOptions, ErrorKind};
use redis::AsyncCommands;

async fn acl_setuser(raw: &mut redis::aio::MultiplexedConnection, user: &str, rules: &str) {
    common::acl::set_user(raw, user, rules).await;
}

fn url_as(server: &RedisServer, user: &str, password: &str) -> String {
    format!("redis://{user}:{password}@127.0.0.1:{}", server.port)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_least_privilege_user_runs_the_whole_lock_cycle() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    acl_setuser(&mut raw, "locker", common::acl::ONE_SERVER).await;
    let url = url_as(&server, "locker", "locker-pw");
    let a = builder(&url, 1500).connect().await.unwrap();
    let b = builder(&url, 1500).connect().await.unwrap();

    // Acquire, re-enter, renew, status, wait and wake by message, release.
    let lock = a.lock("app:orders").unwrap();
    let guard = lock.acquire().await.unwrap();
    lock.acquire().await.unwrap().into_hold();
    assert_eq!(lock.hold_count().await.unwrap(), 2);
    assert_eq!(a.renew_held_locks().await.unwrap().renewed, 1);
    let status = lock.status().await.unwrap();
    assert_eq!(status.holders.len(), 1);
    let waiter = b.lock("app:orders").unwrap();
    let waiting = tokio::spawn(async move { waiter.acquire().await.map(|g| g.into_hold()).map(|_| waiter) });
    eventually(Duration::from_secs(5), "the waiter subscribed", || {
        let n = b.subscribed_channels();
        async move { n == 1 }
    })
    .await;
    lock.release().await.unwrap();
    let started = std::time::Instant::now();
    guard.release().await.unwrap();
    let waiter = waiting.await.unwrap().unwrap();
    assert!(started.elapsed() < Duration::from_secs(1), "woken by the release message: {:?}", started.elapsed());
    waiter.release().await.unwrap();

    // Fenced, force unlock, explicit lease.
    let fenced = a.fenced_lock("app:ledger").unwrap();
    let token = fenced.acquire().await.unwrap().into_hold().token().unwrap();
    assert!(fenced.force_unlock().await.unwrap());
    let next = b.fenced_lock("app:ledger").unwrap().acquire().await.unwrap();
    assert_eq!(next.token(), Some(token + 1));
    next.release().await.unwrap();
    let leased = a.lock("app:lease").unwrap();
    let guard = leased.acquire_with(AcquireOptions::wait(Duration::ZERO).with_lease(Duration::from_secs(5))).await.unwrap().unwrap();
    assert!(leased.extend(Duration::from_secs(5)).await.unwrap() > Duration::from_secs(5));
    leased.set_holder_info(Some("host-1")).await.unwrap();
    assert_eq!(leased.status().await.unwrap().holders[0].info.as_deref(), Some("host-1"));
    leased.set_holder_info(None).await.unwrap();
    guard.release().await.unwrap();

    // Both clients' connections (b's subscriber too) carry their names.
    let list: String = redis::cmd("CLIENT").arg("LIST").query_async(&mut raw).await.unwrap();
    let named = |id: &str| list.lines().filter(|l| l.contains(&format!(" name=ferrolock:{id} "))).count();
    assert_eq!((named(a.id()), named(b.id())), (1, 2), "{list}");

    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
    // Only the fencing-token counter stays, as with Redisson (unlock latches are swept too).
    assert_eq!(keys(&mut raw).await, vec!["redisson_lock_token:{app:ledger}".to_string()]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_one_server_user_runs_the_whole_family_and_nothing_is_refused() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    acl_setuser(&mut raw, "locker", common::acl::ONE_SERVER).await;
    let url = url_as(&server, "locker", "locker-pw");
    let a = builder(&url, 10_000).connect().await.unwrap();
    let b = builder(&url, 10_000).connect().await.unwrap();
    common::acl::run_family(&a, &b, "app:").await;
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
    common::acl::nothing_refused(&mut [(server.port, raw)], "locker").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_command_is_permission_denied_and_names_the_rule() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    acl_setuser(&mut raw, "limited", "on >pw ~* &* +@all -hincrby").await;
    let c = client(&url_as(&server, "limited", "pw"), 1500).await;
    let lock = c.lock("refused").unwrap();
    let err = lock.acquire().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::PermissionDenied, "{err}");
    assert!(err.message().contains("+hincrby"), "names the rule: {err}");
    assert!(err.message().contains("\"refused\""), "names the lock: {err}");
    assert_eq!(lock.local_hold_count(), 0);
    assert!(!raw.exists::<_, bool>("refused").await.unwrap(), "nothing locked");
    let logged = common::acl::refused(&mut raw, "limited").await;
    assert!(logged.iter().any(|r| r.contains("hincrby")), "the server's ACL LOG shows it (what nothing_refused reads): {logged:?}");

    // A key outside the user's patterns.
    acl_setuser(&mut raw, "keyless", "on >pw ~other:* &* +@all").await;
    let k = client(&url_as(&server, "keyless", "pw"), 1500).await;
    let err = k.lock("refused").unwrap().acquire().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::PermissionDenied, "{err}");
    assert!(err.message().contains("key access"), "says which access: {err}");
    c.shutdown().await.unwrap();
    k.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_subscribe_waiters_still_acquire_and_the_client_warns_once() {
    let log = warnings();
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    acl_setuser(&mut raw, "nosub", "on >pw ~* &* +@all -subscribe").await;
    let holder = client(&server.url(), 1500).await;
    let c = client(&url_as(&server, "nosub", "pw"), 1500).await;
    for round in 0..2 {
        let name = format!("nosub-{round}");
        let held = holder.lock(&name).unwrap();
        let _hold = held.acquire_with(AcquireOptions::wait(Duration::ZERO).with_lease(Duration::from_millis(800))).await.unwrap().unwrap();
        let got = c.lock(&name).unwrap().acquire_with(AcquireOptions::wait(Duration::from_secs(10))).await.unwrap();
        got.expect("acquired once the lease ran out").release().await.unwrap();
    }
    let said: Vec<String> = log.lock().unwrap().iter().filter(|m| m.contains("waiting for locks is slow")).cloned().collect();
    assert_eq!(said.len(), 1, "warned once per client: {said:?}");
    assert!(said[0].contains("+subscribe"), "says why: {}", said[0]);
    holder.shutdown().await.unwrap();
    c.shutdown().await.unwrap();
}

/// The operating guide (and the README, for one server) shows exactly the users the
/// tests run as (acl.rs, acl_sentinel.rs, acl_cluster.rs).
#[test]
fn the_guide_shows_exactly_the_tested_users() {
    use common::acl::{CLUSTER_NODES, ONE_SERVER, SENTINELS, SENTINEL_DATA};
    let flat = |text: &str| text.replace("\\\n", " ").split_whitespace().collect::<Vec<_>>().join(" ");
    let shown = |user: &str, rules: &str| {
        flat(&format!("ACL SETUSER {user} {}", rules.replace(">locker-pw", ">secret").replace(">watcher-pw", ">secret")))
    };
    let guide = flat(&std::fs::read_to_string(repo_root().join("docs/site/guides/operating.md")).unwrap());
    for (user, rules) in [("locker", ONE_SERVER), ("locker", SENTINEL_DATA), ("watcher", SENTINELS), ("locker", CLUSTER_NODES)] {
        assert!(guide.contains(&shown(user, rules)), "the operating guide shows:\n{}", shown(user, rules));
    }
    let readme = flat(&std::fs::read_to_string(repo_root().join("README.md")).unwrap());
    assert!(readme.contains(&shown("locker", ONE_SERVER)), "the README shows:\n{}", shown("locker", ONE_SERVER));
    assert!(readme.contains(&shown("watcher", SENTINELS)), "the README shows:\n{}", shown("watcher", SENTINELS));
}
