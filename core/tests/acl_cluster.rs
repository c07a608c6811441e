//! On a Redis Cluster as the least-privilege user of the operating guide (on every
//! node, replicas too): the whole family, waiters woken by sharded messages (classic
//! ones on 6.2), a failover and a resharding followed, and no node refused the user
//! anything (ACL LOG). A refused command is `PermissionDenied` naming the rule that would allow it.

mod common;

use std::time::Duration;

use common::acl::{cluster_nodes_for, nothing_refused, run_family, set_user};
use common::*;
use ferrolock::{ClientBuilder, ErrorKind};

async fn user_everywhere(cluster: &Cluster, rules: &str) {
    for port in cluster.ports() {
        set_user(&mut cluster.raw(port).await, "locker", rules).await;
    }
}

fn as_user(cluster: &Cluster) -> ClientBuilder {
    let seeds: Vec<String> = cluster.ports()[..3].iter().map(|p| format!("127.0.0.1:{p}")).collect();
    builder(&format!("redis+cluster://locker:locker-pw@{}", seeds.join(",")), 10_000)
        .connect_timeout(Duration::from_secs(2))
        .response_timeout(Duration::from_secs(2))
}

async fn every_node(cluster: &Cluster) -> Vec<(u16, redis::aio::MultiplexedConnection)> {
    let mut raws = Vec::new();
    for port in cluster.ports() {
        raws.push((port, cluster.raw(port).await));
    }
    raws
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cluster_user_runs_the_whole_family_and_follows_a_failover() {
    let cluster = Cluster::start().await;
    user_everywhere(&cluster, &cluster_nodes_for(redis_server_version())).await;
    let a = as_user(&cluster).connect().await.unwrap();
    let b = as_user(&cluster).connect().await.unwrap();
    run_family(&a, &b, "app:").await;

    // A failover of the master of a held lock's slot, noticed from the slot map
    // (CLUSTER SLOTS); the family works on.
    let guard = a.lock("app:across").unwrap().acquire().await.unwrap();
    let noticed = a.metrics().failovers_noticed;
    cluster.failover(cluster.owner_of(b"app:across").await).await;
    eventually(Duration::from_secs(15), "the failover noticed", || async { a.metrics().failovers_noticed > noticed }).await;
    a.renew_held_locks().await.unwrap();
    let _ = guard.release().await;
    run_family(&a, &b, "app:after:").await;

    // The slot of a held lock moving to another master: its renewal follows the ASK
    // redirect (ASKING; without +asking the renewal fails and the hold is reported lost).
    let held = a.lock("{app:moved}").unwrap().acquire().await.unwrap();
    let (slot, to) = cluster.slot_and_another_master(b"{app:moved}").await;
    let migration = cluster.begin_migration(slot, to).await;
    migration.move_keys().await;
    a.renew_held_locks().await.unwrap();
    assert!(!held.is_lost(), "renewed where its key moved");
    let stats: String = redis::cmd("INFO").arg("commandstats").query_async(&mut cluster.raw(to).await).await.unwrap();
    assert!(stats.contains("cmdstat_asking:"), "the ASK redirect was followed (ASKING on {to})");
    migration.finish().await;
    held.release().await.unwrap();
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
    nothing_refused(&mut every_node(&cluster).await, "locker").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_on_the_cluster_names_the_rule() {
    let cluster = Cluster::start().await;
    let rules = cluster_nodes_for(redis_server_version());
    user_everywhere(&cluster, &rules.replace(" +hincrby ", " ")).await;
    let c = as_user(&cluster).connect().await.unwrap();
    let lock = c.lock("app:refused").unwrap();
    let err = lock.acquire().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::PermissionDenied, "{err}");
    assert!(err.message().contains("+hincrby"), "names the rule: {err}");
    assert_eq!(lock.local_hold_count(), 0);
    c.shutdown().await.unwrap();

    // Without the slot map: refused at connect, naming it.
    user_everywhere(&cluster, &rules.replace(" +cluster|slots ", " ")).await;
    let err = as_user(&cluster).connect().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::PermissionDenied, "{err}");
    // Redis 6.2 names only the container command ("'cluster' command or its subcommand").
    let rule = if redis_server_version() < (7, 0, 0) { "+cluster" } else { "+cluster|slots" };
    assert!(err.message().contains(rule), "names the rule: {err}");
}
