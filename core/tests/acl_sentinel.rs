//! Behind Sentinel as the least-privilege users of the operating guide: the data
//! nodes' user (on master and replica) and the sentinels' own user (the client's
//! sentinel username/password) run the whole family, follow a failover told by
//! `+switch-master`, and no data node or sentinel refused them anything (ACL LOG).
//! A refused command is `PermissionDenied` naming the rule that would allow it.

mod common;

use std::time::Duration;

use common::acl::{nothing_refused, run_family, set_user, SENTINELS, SENTINEL_DATA};
use common::*;
use ferrolock::{ClientBuilder, ErrorKind};

/// The data nodes' and the sentinels' users on every process of `set`.
async fn users(set: &SentinelSet, data_rules: &str, sentinel_rules: &str) {
    for port in set.data_ports() {
        set_user(&mut set.raw(port).await, "locker", data_rules).await;
    }
    for port in set.sentinel_ports() {
        set_user(&mut set.raw(port).await, "watcher", sentinel_rules).await;
    }
}

fn as_users(set: &SentinelSet) -> ClientBuilder {
    let hosts: Vec<String> = set.sentinel_ports().iter().map(|p| format!("127.0.0.1:{p}")).collect();
    let url = format!("redis+sentinel://locker:locker-pw@{}/{MASTER_NAME}", hosts.join(","));
    builder(&url, 10_000)
        .connect_timeout(Duration::from_secs(2))
        .response_timeout(Duration::from_secs(2))
        .sentinel_username("watcher")
        .sentinel_password("watcher-pw")
}

/// How many of the sentinels' clients are `user`'s subscriptions (CLIENT LIST there).
async fn subscribed_as(set: &SentinelSet, user: &str) -> usize {
    let mut n = 0;
    for port in set.sentinel_ports() {
        let list: String = redis::cmd("CLIENT").arg("LIST").query_async(&mut set.raw(port).await).await.unwrap();
        n += list.lines().filter(|l| l.contains(&format!(" user={user} ")) && l.contains(" sub=1 ")).count();
    }
    n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sentinel_users_run_the_whole_family_and_follow_a_failover() {
    let set = SentinelSet::start().await;
    users(&set, SENTINEL_DATA, SENTINELS).await;
    let a = as_users(&set).connect().await.unwrap();
    let b = as_users(&set).connect().await.unwrap();
    run_family(&a, &b, "app:").await;

    // Both clients listen for +switch-master on every sentinel, as the sentinels' user.
    eventually(Duration::from_secs(10), "both clients subscribed on the 3 sentinels", || async {
        subscribed_as(&set, "watcher").await == 6
    })
    .await;
    let guard = a.lock("app:across").unwrap().acquire().await.unwrap();
    let noticed = a.metrics().failovers_noticed;
    let new_master = set.failover().await;
    eventually(Duration::from_secs(10), "the failover noticed", || async { a.metrics().failovers_noticed > noticed }).await;
    // The family keeps working on the new master.
    a.renew_held_locks().await.unwrap();
    let _ = guard.release().await;
    let mut raw = set.raw(new_master).await;
    let role: Vec<redis::Value> = redis::cmd("ROLE").query_async(&mut raw).await.unwrap();
    assert_eq!(role.first(), Some(&redis::Value::BulkString(b"master".to_vec())));
    run_family(&a, &b, "app:after:").await;
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();

    let mut data = Vec::new();
    for port in set.data_ports() {
        data.push((port, set.raw(port).await));
    }
    nothing_refused(&mut data, "locker").await;
    let mut sentinels = Vec::new();
    for port in set.sentinel_ports() {
        sentinels.push((port, set.raw(port).await));
    }
    nothing_refused(&mut sentinels, "watcher").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_behind_sentinel_names_the_rule() {
    let set = SentinelSet::start().await;
    // The data nodes' user without WAIT (the acknowledgement of every acquire).
    users(&set, &SENTINEL_DATA.replace(" +wait ", " "), SENTINELS).await;
    let c = as_users(&set).connect().await.unwrap();
    let lock = c.lock("app:refused").unwrap();
    let err = lock.acquire().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::PermissionDenied, "{err}");
    assert!(err.message().contains("+wait"), "names the rule: {err}");
    assert_eq!(lock.local_hold_count(), 0);
    c.shutdown().await.unwrap();

    // The sentinels' user without the master's address...
    users(&set, SENTINEL_DATA, &SENTINELS.replace(" +sentinel|get-master-addr-by-name ", " ")).await;
    let err = as_users(&set).connect().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::PermissionDenied, "{err}");
    assert!(err.message().contains("+sentinel|get-master-addr-by-name"), "names the rule: {err}");
    assert!(err.message().contains("sentinels' user"), "says which user: {err}");
    // ... or without its replicas (what the acknowledgement counts on).
    users(&set, SENTINEL_DATA, &SENTINELS.replace(" +sentinel|replicas ", " ")).await;
    let err = as_users(&set).connect().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::PermissionDenied, "{err}");
    assert!(err.message().contains("+sentinel|replicas"), "names the rule: {err}");

    // The sentinels' user without the +switch-master channel: locks work, and the
    // client says once that failovers are noticed late, and what to grant.
    let log = warnings();
    users(&set, SENTINEL_DATA, &SENTINELS.replace(" &+switch-master", "")).await;
    let c = as_users(&set).connect().await.unwrap();
    c.lock("app:unwatched").unwrap().acquire().await.unwrap().release().await.unwrap();
    let told = || log.lock().unwrap().iter().filter(|m| m.contains("+switch-master")).cloned().collect::<Vec<_>>();
    eventually(Duration::from_secs(10), "the refused subscription told", || async { !told().is_empty() }).await;
    assert!(told()[0].contains("+subscribe &+switch-master"), "names the rule: {:?}", told());
    // Every sentinel refused it (and is asked again): still one warning.
    let mut sentinels = Vec::new();
    for port in set.sentinel_ports() {
        sentinels.push(set.raw(port).await);
    }
    eventually(Duration::from_secs(10), "every sentinel refused it", || {
        let mut sentinels = sentinels.clone();
        async move {
            for raw in sentinels.iter_mut() {
                if !common::acl::refused(raw, "watcher").await.iter().any(|r| r.contains("+switch-master")) {
                    return false;
                }
            }
            true
        }
    })
    .await;
    assert_eq!(told().len(), 1, "told once per client: {:?}", told());
    c.shutdown().await.unwrap();
}
