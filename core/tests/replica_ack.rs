//! The replica-ack policies against real topologies: behind Sentinel (a master with
//! two replicas, so that majority and all differ from one) and on a Cluster (the slot
//! master's replicas). Every acquire that grants exclusivity is acknowledged, one the
//! policy did not confirm is undone (nothing held, nothing kept), a master with no
//! replica refuses every acquire but under `off`, and WAITAOF is refused by name on a
//! server that lacks it.

mod common;

use std::time::Duration;

use common::replicated::Replicated;
use common::*;
use ferrolock::{Client, ErrorKind, LockKind, LockOptions, ReplicaAck, ReplicaShortfall};
use redis::AsyncCommands;

/// Where every replica should acknowledge: long enough for a busy machine's replicas.
const ACKED: Duration = Duration::from_secs(3);
/// Where a replica cannot acknowledge (stopped): the shortfall is reported this soon.
const SHORT: Duration = Duration::from_millis(300);

async fn connect(url: &str, policy: ReplicaAck, ack_timeout: Duration) -> Client {
    builder(url, 10_000)
        .connect_timeout(Duration::from_secs(2))
        .response_timeout(Duration::from_secs(2))
        .replica_ack(policy)
        .replica_ack_timeout(ack_timeout)
        .connect()
        .await
        .unwrap()
}

/// What one try of each primitive came to: `Ok` taken (and given back), or the error.
async fn take_each(client: &Client, prefix: &str) -> Vec<(&'static str, ferrolock::Result<()>)> {
    let mut out = Vec::new();
    for (what, kind) in [
        ("reentrant", LockKind::Reentrant),
        ("fenced", LockKind::Fenced),
        ("fair", LockKind::Fair),
        ("read", LockKind::Read),
        ("write", LockKind::Write),
    ] {
        let lock = client.lock_with(format!("{prefix}:{what}"), LockOptions::kind(kind)).unwrap();
        let taken = match lock.try_acquire().await {
            Ok(Some(guard)) => guard.release().await.map(|_| ()),
            Ok(None) => panic!("{what}: nobody else holds it"),
            Err(e) => Err(e),
        };
        out.push((what, taken));
    }
    let semaphore = client.semaphore(format!("{prefix}:semaphore")).unwrap();
    semaphore.try_set_permits(2).await.unwrap();
    let taken = match semaphore.try_acquire(1).await {
        Ok(Some(permits)) => permits.release().await.map(|_| ()),
        Ok(None) => panic!("semaphore: 2 permits are free"),
        Err(e) => Err(e),
    };
    out.push(("semaphore", taken));
    let permits = client.permit_expirable_semaphore(format!("{prefix}:permits")).unwrap();
    permits.try_set_permits(2).await.unwrap();
    let taken = match permits.try_acquire(None).await {
        Ok(Some(permit)) => permit.release().await.map(|_| ()),
        Ok(None) => panic!("permits: 2 are free"),
        Err(e) => Err(e),
    };
    out.push(("permit", taken));
    out
}

/// After a take that failed: no lock key and no grant record, both semaphores' counts
/// back at 2, no permit out.
async fn nothing_kept(master: &mut redis::aio::MultiplexedConnection, prefix: &str) {
    let prefix = prefix.to_string();
    eventually(Duration::from_secs(10), "every undone take to leave nothing behind", || {
        let (mut master, prefix) = (master.clone(), prefix.clone());
        async move {
            let keys = keys(&mut master).await;
            let locks = ["reentrant", "fenced", "fair", "read", "write"].map(|k| format!("{prefix}:{k}"));
            let free: Option<String> = master.get(format!("{prefix}:semaphore")).await.unwrap();
            let permits: Option<String> = master.get(format!("{prefix}:permits")).await.unwrap();
            let out: i64 = master.zcard(permits_key(&format!("{prefix}:permits"))).await.unwrap();
            !keys.iter().any(|k| locks.contains(k) || k.starts_with("ferrolock_grant"))
                && free.as_deref() == Some("2")
                && permits.as_deref() == Some("2")
                && out == 0
        }
    })
    .await;
}

/// The permits-out zset of a permit-expirable semaphore (Redisson's `{n}:timeout`).
fn permits_key(name: &str) -> String {
    if name.contains('{') {
        format!("{name}:timeout")
    } else {
        format!("{{{name}}}:timeout")
    }
}

fn shortfall(e: &ferrolock::Error) -> ReplicaShortfall {
    assert_eq!(e.kind(), ErrorKind::NotReplicated, "{e:?}");
    *e.replica_shortfall().unwrap_or_else(|| panic!("no numbers on {e:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_policy_counts_the_replicas_the_master_should_have_and_undoes_what_it_did_not_confirm() {
    let set = Replicated::start(2).await;
    let mut master = set.raw_master().await;
    let policies = [ReplicaAck::One, ReplicaAck::Majority, ReplicaAck::All];
    for policy in policies {
        let client = connect(&set.url(), policy, ACKED).await;
        for (what, taken) in take_each(&client, &format!("healthy:{policy}")).await {
            taken.unwrap_or_else(|e| panic!("{policy}, {what}, both replicas up: {e:?}"));
        }
        client.shutdown().await.unwrap();
    }
    // One replica stops acknowledging; the master still counts it connected, so it
    // should have 2: one acknowledgement meets `one`, not `majority` (2) nor `all` (2).
    set.data[1].pause();
    let mut clients = Vec::new();
    for policy in policies {
        // `one` is met by the replica still running: it gets the time to answer.
        let timeout = if policy == ReplicaAck::One { ACKED } else { SHORT };
        clients.push((policy, connect(&set.url(), policy, timeout).await));
    }
    for (policy, client) in &clients {
        let prefix = format!("one-stopped:{policy}");
        for (what, taken) in take_each(client, &prefix).await {
            match policy {
                ReplicaAck::One => taken.unwrap_or_else(|e| panic!("one, {what}: {e:?}")),
                _ => {
                    let err = taken.expect_err(&format!("{policy}, {what}: taken with 1 of 2 replicas"));
                    let s = shortfall(&err);
                    assert_eq!((s.acknowledged, s.replicas, s.needed, s.policy), (1, 2, 2, *policy), "{what}: {err:?}");
                    assert!(err.message().contains("1 of the master's 2 replica(s)"), "{}", err.message());
                }
            }
        }
        nothing_kept(&mut master, &prefix).await;
    }
    set.data[1].resume();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_master_without_replicas_refuses_every_policy_but_off_and_sends_nothing() {
    let set = Replicated::start(2).await;
    let mut master = set.raw_master().await;
    for replica in &set.data[1..] {
        replica.pause();
    }
    let _: i64 = redis::cmd("CLIENT").arg("KILL").arg("TYPE").arg("replica").query_async(&mut master).await.unwrap();
    for replica in &set.data[1..] {
        set.wait_flagged_down(replica.port).await;
    }
    for policy in [ReplicaAck::One, ReplicaAck::Majority, ReplicaAck::All] {
        // A fresh client: what it learns connecting is what it acts on.
        let client = connect(&set.url(), policy, SHORT).await;
        let scripts = command_calls(&mut master, &["evalsha"]).await;
        for (what, taken) in take_each(&client, &format!("alone:{policy}")).await {
            let err = taken.expect_err(&format!("{policy}, {what}: taken on a master with no replica"));
            let s = shortfall(&err);
            assert_eq!((s.acknowledged, s.replicas, s.policy), (0, 0, policy), "{what}: {err:?}");
            assert!(err.message().contains("no replica") && err.message().contains("nothing was taken"), "{}", err.message());
        }
        // Only the semaphores' try_set_permits and the fair lock's leaving its queue ran
        // a script: no take was sent.
        assert_eq!(command_calls(&mut master, &["evalsha"]).await - scripts, 3, "{policy}: a take was sent");
        nothing_kept(&mut master, &format!("alone:{policy}")).await;
        client.shutdown().await.unwrap();
    }
    let off = connect(&set.url(), ReplicaAck::Off, SHORT).await;
    for (what, taken) in take_each(&off, "alone:off").await {
        taken.unwrap_or_else(|e| panic!("off, {what}: {e:?}"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waitaof_is_used_where_the_server_has_it_and_refused_by_name_where_not() {
    // Debian's 7.0 (the test command) checks the refusal; scripts/test-servers.sh runs it
    // on 7.2 and newer, where an AOF-writing replica's acknowledgement is required.
    let set = SentinelSet::start().await;
    let mut master = set.raw_master().await;
    let info: String = redis::cmd("INFO").arg("server").query_async(&mut master).await.unwrap();
    let version = info.lines().find_map(|l| l.strip_prefix("redis_version:")).unwrap().trim().to_string();
    let numbers: Vec<u32> = version.split('.').filter_map(|p| p.parse().ok()).collect();
    let client = builder(&set.url(), 10_000).replica_ack_aof(true).replica_ack_timeout(Duration::from_millis(300)).connect().await.unwrap();
    let lock = client.lock("aof:lock").unwrap();
    let err = lock.try_acquire().await.expect_err("the replicas have no AOF (and 7.0 has no WAITAOF)");
    let has_waitaof = (numbers[0], numbers[1]) >= (7, 2);
    if !has_waitaof {
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err:?}");
        assert!(err.message().contains("WAITAOF") && err.message().contains(&format!("Redis {version}")), "{}", err.message());
        assert!(err.message().contains("7.2"), "{}", err.message());
    } else {
        // WAITAOF exists, but no replica writes an AOF: none acknowledges.
        assert_eq!(shortfall(&err).acknowledged, 0, "{err:?}");
        assert!(shortfall(&err).aof);
    }
    eventually(Duration::from_secs(5), "nothing of it left", || {
        let mut master = master.clone();
        async move { keys(&mut master).await.is_empty() }
    })
    .await;
    if !has_waitaof {
        return;
    }
    // The replica turns its AOF on (the master needs none: WAITAOF 0 1), fsynced on every
    // write: once its first rewrite is done, it acknowledges, and the acquire holds.
    let mut replica = set.raw(set.replica_port().await).await;
    let _: () = redis::cmd("CONFIG").arg("SET").arg("appendfsync").arg("always").query_async(&mut replica).await.unwrap();
    let _: () = redis::cmd("CONFIG").arg("SET").arg("appendonly").arg("yes").query_async(&mut replica).await.unwrap();
    eventually(Duration::from_secs(30), "the replica's AOF written", || {
        let mut replica = replica.clone();
        async move {
            let info: String = redis::cmd("INFO").arg("persistence").query_async(&mut replica).await.unwrap();
            [("aof_enabled", "1"), ("aof_rewrite_in_progress", "0"), ("aof_rewrite_scheduled", "0")]
                .iter()
                .all(|(field, value)| info_field(&info, field) == Some(*value))
        }
    })
    .await;
    // A replica reports what it fsynced in its acknowledgements, and the one that
    // answers WAITAOF's request is sent before the write's fsync: the covering one
    // can be its next once-a-second report (Redis 7.2.6: up to about a second).
    let client = builder(&set.url(), 10_000).replica_ack_aof(true).replica_ack_timeout(ACKED).connect().await.unwrap();
    let lock = client.lock("aof:lock:kept").unwrap();
    let guard = lock.try_acquire().await.unwrap_or_else(|e| panic!("the replica writes an AOF now: {e:?}"));
    let guard = guard.expect("nobody else holds it");
    assert!(master.pttl::<_, i64>("aof:lock:kept").await.unwrap() > 0, "held on the master");
    guard.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cluster_acknowledges_on_the_slot_masters_replicas() {
    let cluster = Cluster::start().await;
    let client = connect(&cluster.url(), ReplicaAck::One, ACKED).await;
    let prefix = "{acked}";
    let owner = cluster.owner_of(prefix.as_bytes()).await;
    let masters = cluster.masters().await;
    for port in &masters {
        let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query_async(&mut cluster.raw(*port).await).await.unwrap();
    }
    for (what, taken) in take_each(&client, prefix).await {
        taken.unwrap_or_else(|e| panic!("{what}: {e:?}"));
    }
    // The WAIT went with each take to the slot's master, and nowhere else.
    for port in &masters {
        let waits = command_calls(&mut cluster.raw(*port).await, &["wait"]).await;
        if *port == owner {
            assert!(waits >= 7, "master {port} of the slot ran {waits} WAITs");
        } else {
            assert_eq!(waits, 0, "master {port} of other slots ran WAITs");
        }
    }
    // The slot master's replica stops: nothing is acknowledged there, and undone.
    let replica = cluster.replica_of(owner).await;
    cluster.pause(replica).await;
    let stopped = connect(&cluster.url(), ReplicaAck::One, SHORT).await;
    for (what, taken) in take_each(&stopped, prefix).await {
        let err = taken.expect_err(&format!("{what}: taken with the slot master's replica stopped"));
        assert_eq!(shortfall(&err).acknowledged, 0, "{what}: {err:?}");
    }
    nothing_kept(&mut cluster.raw(owner).await, prefix).await;
    // Another slot's master keeps its replica: acquires there go on.
    let other = cluster_name_elsewhere(&cluster, owner).await;
    client.lock(&other).unwrap().acquire().await.unwrap().release().await.unwrap();
    cluster.resume(replica);
    cluster.wait_stable().await;
}

/// A name whose slot another master than `not` serves.
async fn cluster_name_elsewhere(cluster: &Cluster, not: u16) -> String {
    for i in 0.. {
        let name = format!("elsewhere:{i}");
        if cluster.owner_of(name.as_bytes()).await != not {
            return name;
        }
    }
    unreachable!()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sentinel_errors_are_connection_errors_naming_what_each_sentinel_said() {
    let set = Replicated::start(1).await;
    // No such master: Connection (retried by code that retries those), not Internal.
    let url = set.url().replace("/mymaster", "/nosuchmaster");
    let err = builder(&url, 10_000).connect().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connection, "{err:?}");
    assert!(err.message().matches("knows no such master").count() == 3, "{}", err.message());
}
