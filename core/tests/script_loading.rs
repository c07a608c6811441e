//! When scripts are loaded: by the first call that needs one on a server (EVALSHA,
//! NOSCRIPT, SCRIPT LOAD, EVALSHA), never by a new connection; once per server,
//! however many clients and connections; again after a SCRIPT FLUSH, on every kind
//! of call (one call, a renewal batch, a request made idempotent by its latch, the
//! replica-ack pipeline); on the new master after a failover and on each cluster
//! master; and a user refused SCRIPT LOAD runs the scripts others loaded.

mod common;

use std::time::Duration;

use common::*;
use ferrolock::{Client, ErrorKind};

async fn loads(raw: &mut redis::aio::MultiplexedConnection) -> u64 {
    command_calls(raw, &["script|load"]).await
}

/// The scripts the server holds (INFO memory).
async fn cached(raw: &mut redis::aio::MultiplexedConnection) -> u64 {
    let info: String = redis::cmd("INFO").arg("memory").query_async(raw).await.unwrap();
    info.lines().find_map(|l| l.strip_prefix("number_of_cached_scripts:")).unwrap().trim().parse().unwrap()
}

async fn flush(raw: &mut redis::aio::MultiplexedConnection) {
    let _: () = redis::cmd("SCRIPT").arg("FLUSH").query_async(raw).await.unwrap();
}

async fn cycle(client: &Client, name: &str) {
    client.lock(name).unwrap().acquire().await.unwrap().release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_loads_nothing_and_a_script_is_loaded_once_per_server() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    let a = client(&server.url(), 5000).await;
    assert!(!a.lock("first").unwrap().is_locked().await.unwrap());
    assert_eq!(loads(&mut raw).await, 0, "the connection is made and loaded nothing");

    cycle(&a, "first").await;
    let used = cached(&mut raw).await;
    assert!(used >= 2, "the acquire's and the release's scripts: {used}");
    assert_eq!(loads(&mut raw).await, used, "each script the calls ran loaded once, no other");
    assert_eq!(failed_evalsha(&mut raw).await, 0, "none met NOSCRIPT: each went behind its load, in one round-trip");

    // Another client, on connections of its own: the server has them already.
    let b = client(&server.url(), 5000).await;
    cycle(&b, "second").await;
    cycle(&a, "first").await;
    assert_eq!(loads(&mut raw).await, used, "loaded once per server, not per connection or client");

    // Calls racing to a script's first use after a flush all go through.
    flush(&mut raw).await;
    let racing: Vec<_> = (0..8)
        .map(|i| {
            let lock = b.lock(format!("racing:{i}")).unwrap();
            tokio::spawn(async move { lock.acquire().await?.release().await })
        })
        .collect();
    for task in racing {
        task.await.unwrap().unwrap();
    }
    assert_eq!(cached(&mut raw).await, used);
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_kind_of_call_loads_its_script_again_after_a_flush() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    let c = client(&server.url(), 5000).await;

    // A lock call alone, and a renewal batch (several holds in one script call).
    let locks: Vec<_> = (0..3).map(|i| c.lock(format!("flushed:{i}")).unwrap()).collect();
    let mut holds = Vec::new();
    for lock in &locks {
        flush(&mut raw).await;
        holds.push(lock.acquire().await.unwrap());
    }
    flush(&mut raw).await;
    assert_eq!(c.renew_held_locks().await.unwrap().renewed, 3);
    for hold in holds {
        flush(&mut raw).await;
        hold.release().await.unwrap();
    }

    // The other kinds: fair, read and write.
    flush(&mut raw).await;
    cycle_fair(&c).await;
    let rw = c.read_write_lock("flushed:rw").unwrap();
    flush(&mut raw).await;
    rw.read().acquire().await.unwrap().release().await.unwrap();
    flush(&mut raw).await;
    rw.write().acquire().await.unwrap().release().await.unwrap();

    // Requests made idempotent by a reply latch (semaphores, latches).
    let sem = c.semaphore("flushed:sem").unwrap();
    flush(&mut raw).await;
    assert!(sem.try_set_permits(1).await.unwrap());
    flush(&mut raw).await;
    let permits = sem.acquire(1).await.unwrap();
    flush(&mut raw).await;
    assert_eq!(permits.release().await.unwrap(), 1);
    let expirable = c.permit_expirable_semaphore("flushed:permits").unwrap();
    assert!(expirable.try_set_permits(1).await.unwrap());
    flush(&mut raw).await;
    let permit = expirable.acquire(None).await.unwrap();
    flush(&mut raw).await;
    assert!(permit.release().await.unwrap());
    let latch = c.count_down_latch("flushed:latch").unwrap();
    flush(&mut raw).await;
    assert!(latch.try_set_count(1).await.unwrap());
    flush(&mut raw).await;
    assert_eq!(latch.count_down().await.unwrap(), 0);

    assert!(loads(&mut raw).await >= 15, "each call above loaded its script again");
    c.shutdown().await.unwrap();
}

async fn cycle_fair(c: &Client) {
    c.fair_lock("flushed:fair").unwrap().acquire().await.unwrap().release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_refused_script_load_runs_the_scripts_others_loaded() {
    let server = RedisServer::start();
    let mut raw = server.raw().await;
    let _: () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg("runner")
        .arg(&["on", ">pw", "~*", "&*", "+@all", "-script|load"][..])
        .query_async(&mut raw)
        .await
        .unwrap();
    let url = format!("redis://runner:pw@127.0.0.1:{}", server.port);
    let runner = client(&url, 5000).await;

    // Nobody loaded the acquire's script yet: the user cannot, and is told what to grant.
    let lock = runner.lock("refused").unwrap();
    let err = lock.acquire().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::PermissionDenied, "{err}");
    assert!(err.message().contains("+script|load"), "names the rule: {err}");
    assert!(!lock.is_locked().await.unwrap(), "nothing locked");

    // Once another client used them, the user runs them, on its existing connection too.
    let admin = client(&server.url(), 5000).await;
    cycle(&admin, "loaded-by-admin").await;
    cycle(&runner, "refused").await;
    assert_eq!(loads(&mut raw).await, cached(&mut raw).await, "only the admin loaded");
    admin.shutdown().await.unwrap();
    runner.shutdown().await.unwrap();
}

/// The new master of a failover may lack the scripts (here: flushed on the replica
/// first): the first acquire there meets NOSCRIPT in its replica-ack pipeline
/// (EVALSHA + WAIT), loads the script and sends the pipeline again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_new_master_of_a_failover_gets_the_scripts_its_calls_need() {
    let set = SentinelSet::start().await;
    let c = builder(&set.url(), 5000)
        .connect_timeout(Duration::from_secs(2))
        .response_timeout(Duration::from_secs(2))
        .connect()
        .await
        .unwrap();
    cycle(&c, "s:before").await;
    let replica = set.replica_port().await;
    let mut new_master = set.raw(replica).await;
    flush(&mut new_master).await;
    assert_eq!(cached(&mut new_master).await, 0);
    let (evalsha_failed_before, loads_before) = (failed_evalsha(&mut new_master).await, loads(&mut new_master).await);

    assert_eq!(set.failover().await, replica);
    // The old master replicates the new one before the client reconnects, so that
    // the client's acquire waits for it (the pipeline).
    eventually(Duration::from_secs(20), "the old master to replicate the new one", || {
        let set = &set;
        async move {
            let mut conn = set.raw(replica).await;
            let info: String = redis::cmd("INFO").arg("replication").query_async(&mut conn).await.unwrap_or_default();
            info.lines().any(|l| l.starts_with("connected_slaves:") && l.trim() != "connected_slaves:0")
        }
    })
    .await;
    // The client follows the failover (the old master dropped its clients): one lock
    // call after another until one succeeds on the new master.
    let probe = c.lock("s:after").unwrap();
    eventually(Duration::from_secs(10), "an acquire on the new master", || {
        let probe = probe.clone();
        async move {
            match probe.try_acquire().await {
                Ok(Some(hold)) => hold.release().await.is_ok(),
                _ => false,
            }
        }
    })
    .await;
    // A new connection: Sentinel made the promoted replica drop its clients.
    let mut new_master = set.raw(replica).await;
    assert!(failed_evalsha(&mut new_master).await > evalsha_failed_before, "the new master answered NOSCRIPT");
    assert!(loads(&mut new_master).await > loads_before, "and the client loaded the script there");
    assert!(command_calls(&mut new_master, &["wait"]).await > 0, "in the replica-ack pipeline");
    c.shutdown().await.unwrap();
}

/// EVALSHA calls that failed (NOSCRIPT among them), from INFO commandstats.
async fn failed_evalsha(raw: &mut redis::aio::MultiplexedConnection) -> u64 {
    let info: String = redis::cmd("INFO").arg("commandstats").query_async(raw).await.unwrap();
    let line = info.lines().find(|l| l.starts_with("cmdstat_evalsha:")).unwrap_or("");
    line.split("failed_calls=").nth(1).map_or(0, |n| n.trim().parse().unwrap())
}

/// A cluster: the first call loads its script on every node (SCRIPT LOAD goes to
/// all), and a master that alone lost its scripts gets them again at its next call
/// (one call, a renewal batch across masters, a release).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_cluster_master_gets_the_scripts_of_its_calls() {
    let cluster = Cluster::start().await;
    let c = client(&cluster.url(), 5000).await;
    let masters = cluster.masters().await;
    let mut names = Vec::new();
    for master in &masters {
        let mut i = 0;
        while cluster.owner_of(format!("c:{i}").as_bytes()).await != *master {
            i += 1;
        }
        names.push(format!("c:{i}"));
    }
    let mut holds = Vec::new();
    for name in &names {
        holds.push(c.lock(name).unwrap().acquire().await.unwrap());
    }
    for master in &masters {
        assert!(cached(&mut cluster.raw(*master).await).await >= 1, "master {master} has the acquire's script");
    }
    let mut first = cluster.raw(masters[0]).await;
    flush(&mut first).await;
    assert_eq!(c.renew_held_locks().await.unwrap().renewed, holds.len());
    for hold in holds {
        hold.release().await.unwrap();
    }
    flush(&mut first).await;
    cycle(&c, &names[0]).await;
    c.shutdown().await.unwrap();
}
