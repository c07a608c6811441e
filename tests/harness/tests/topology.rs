//! Self-test of the Sentinel and Cluster topologies of the harness: they start, report
//! the right addresses, and survive failovers, a slot migration and a paused master.

use std::time::{Duration, Instant};

use ferrolock_harness::*;

async fn set(conn: &mut redis::aio::MultiplexedConnection, key: &str, value: &str) {
    let _: () = redis::cmd("SET").arg(key).arg(value).query_async(conn).await.unwrap();
}

async fn get(conn: &mut redis::aio::MultiplexedConnection, key: &str) -> Option<String> {
    redis::cmd("GET").arg(key).query_async(conn).await.unwrap()
}

async fn role_of(conn: &mut redis::aio::MultiplexedConnection) -> String {
    let reply: redis::Value = redis::cmd("ROLE").query_async(conn).await.unwrap();
    let redis::Value::Array(items) = reply else { panic!("odd ROLE reply {reply:?}") };
    match &items[0] {
        redis::Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        other => panic!("odd ROLE reply {other:?}"),
    }
}

/// The host:port list of a `scheme://[auth@]hosts[/path]` URL.
fn url_hosts<'a>(url: &'a str, scheme: &str) -> Vec<&'a str> {
    let rest = url.strip_prefix(scheme).and_then(|r| r.strip_prefix("://")).unwrap_or_else(|| panic!("{url} is not {scheme}://"));
    let rest = rest.rsplit_once('@').map_or(rest, |(_, hosts)| hosts);
    rest.split('/').next().unwrap().split(',').collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sentinel_set_starts_and_fails_over_twice() {
    let started = Instant::now();
    let s = SentinelSet::start().await;
    eprintln!("SentinelSet::start took {:?}", started.elapsed());

    let ports = s.sentinel_ports();
    assert_eq!(ports.len(), 3);
    let want: Vec<String> = ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
    assert_eq!(url_hosts(&s.url(), "redis+sentinel"), want);
    assert!(s.url().ends_with("/mymaster"), "{}", s.url());

    let first = s.master_port().await;
    let replica = s.replica_port().await;
    assert_ne!(first, replica);
    let mut m = s.raw_master().await;
    set(&mut m, "k", "v1").await;
    assert_eq!(get(&mut m, "k").await.as_deref(), Some("v1"));

    let started = Instant::now();
    let second = s.failover().await;
    eprintln!("SentinelSet::failover took {:?}", started.elapsed());
    assert_eq!(second, replica);
    assert_eq!(s.master_port().await, second);
    let mut m = s.raw_master().await;
    assert_eq!(get(&mut m, "k").await.as_deref(), Some("v1"), "the replica had the key before it was promoted");
    set(&mut m, "k", "v2").await;
    assert_eq!(role_of(&mut s.raw(first).await).await, "slave");

    let started = Instant::now();
    let third = s.failover().await;
    eprintln!("SentinelSet::failover (back) took {:?}", started.elapsed());
    assert_eq!(third, first, "roles swap back");
    assert_eq!(get(&mut s.raw_master().await, "k").await.as_deref(), Some("v2"));
    assert_eq!(role_of(&mut s.raw(second).await).await, "slave");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sentinel_set_with_passwords_pauses_replica_and_survives_master_death() {
    let started = Instant::now();
    let mut s = SentinelSet::start_with(SentinelOptions {
        password: Some("data pw".into()),
        sentinel_password: Some("sentinel-pw".into()),
        ..SentinelOptions::default()
    })
    .await;
    eprintln!("SentinelSet::start_with(passwords) took {:?}", started.elapsed());
    assert!(s.url().starts_with("redis+sentinel://:data%20pw@127.0.0.1:"), "{}", s.url());
    assert_eq!(url_hosts(&s.url(), "redis+sentinel").len(), 3);

    // The passwords are really required.
    let plain = redis::Client::open(format!("redis://127.0.0.1:{}", s.master_port().await)).unwrap();
    let mut plain = plain.get_multiplexed_async_connection().await.unwrap();
    let err = redis::cmd("GET").arg("k").query_async::<Option<String>>(&mut plain).await.unwrap_err();
    assert!(err.to_string().contains("NOAUTH"), "{err}");
    let mut sentinel = s.raw(s.sentinel_ports()[0]).await;
    let _: Vec<String> = redis::cmd("SENTINEL").arg("GET-MASTER-ADDR-BY-NAME").arg("mymaster").query_async(&mut sentinel).await.unwrap();

    let mut m = s.raw_master().await;
    set(&mut m, "k", "v").await;

    // A stopped replica does not stop the master.
    let paused = s.pause_replica().await;
    set(&mut m, "k2", "v2").await;
    assert_eq!(s.resume_replica().await, paused, "resume_replica waits for the replica to catch up");
    assert_eq!(get(&mut s.raw(paused).await, "k2").await.as_deref(), Some("v2"));

    // Automatic failover needs the sentinels to vote, so they must reach each other with sentinel-pass.
    let old = s.kill_master().await;
    let started = Instant::now();
    let new = s.wait_for_new_master(old, Duration::from_secs(60)).await;
    eprintln!("SentinelSet: promotion after the master was killed took {:?}", started.elapsed());
    assert_eq!(new, paused);
    assert_eq!(s.master_port().await, new);
    assert_eq!(get(&mut s.raw_master().await, "k2").await.as_deref(), Some("v2"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_starts_migrates_a_slot_and_fails_over() {
    let started = Instant::now();
    let c = Cluster::start().await;
    eprintln!("Cluster::start took {:?}", started.elapsed());

    let ports = c.ports();
    assert_eq!(ports.len(), 6);
    let masters = c.masters().await;
    let replicas = c.replicas().await;
    assert_eq!(masters.len(), 3);
    assert_eq!(replicas.len(), 3);
    let mut all: Vec<u16> = masters.iter().chain(&replicas).copied().collect();
    all.sort();
    let mut sorted_ports = ports.clone();
    sorted_ports.sort();
    assert_eq!(all, sorted_ports);
    let want: Vec<String> = masters.iter().map(|p| format!("127.0.0.1:{p}")).collect();
    let mut hosts: Vec<String> = url_hosts(&c.url(), "redis+cluster").into_iter().map(String::from).collect();
    hosts.sort();
    assert_eq!(hosts, want);
    assert_eq!(url_hosts(&c.seed_url(), "redis").len(), 1);
    let map = c.slot_map().await;
    assert_eq!(map.first().unwrap().start, 0);
    assert_eq!(map.last().unwrap().end, CLUSTER_SLOTS - 1);

    // Keys sharing a hash tag share a slot.
    let keys = ["{t}a", "{t}b", "{t}c"];
    let slot = c.slot_of(b"{t}a").await;
    assert_eq!(slot, c.slot_of(b"{t}zzz").await);
    let from = c.owner_of(b"{t}a").await;
    assert!(masters.contains(&from));
    let mut m = c.raw(from).await;
    for k in keys {
        set(&mut m, k, k).await;
    }
    assert_eq!(get(&mut m, "{t}a").await.as_deref(), Some("{t}a"));

    // Half-way: the source answers ASK for a key it no longer has.
    let to = *masters.iter().find(|&&p| p != from).unwrap();
    let migration = c.begin_migration(slot, to).await;
    assert_eq!((migration.from, migration.to), (from, to));
    assert_eq!(migration.move_keys().await, keys.len());
    let err = redis::cmd("GET").arg("{t}a").query_async::<Option<String>>(&mut m).await.unwrap_err();
    assert!(err.to_string().to_uppercase().contains("ASK"), "{err}");
    migration.finish().await;
    assert_eq!(c.owner_of(b"{t}a").await, to);
    let mut t = c.raw(to).await;
    for k in keys {
        assert_eq!(get(&mut t, k).await.as_deref(), Some(k), "{k} moved to the target");
    }
    let err = redis::cmd("GET").arg("{t}a").query_async::<Option<String>>(&mut m).await.unwrap_err();
    assert!(err.to_string().to_uppercase().contains("MOVED"), "{err}");

    // And back in one call.
    let started = Instant::now();
    assert_eq!(c.migrate_slot(slot, from).await, keys.len());
    eprintln!("Cluster::migrate_slot took {:?}", started.elapsed());
    assert_eq!(c.owner_of(b"{t}b").await, from);
    assert_eq!(get(&mut c.raw(from).await, "{t}b").await.as_deref(), Some("{t}b"));

    let replica = c.replica_of(from).await;
    let started = Instant::now();
    let new = c.failover(from).await;
    eprintln!("Cluster::failover took {:?}", started.elapsed());
    assert_eq!(new, replica);
    assert_eq!(c.owner_of(b"{t}a").await, new);
    assert_eq!(c.replica_of(new).await, from);
    assert_eq!(role_of(&mut c.raw(from).await).await, "slave");
    assert_eq!(get(&mut c.raw(new).await, "{t}c").await.as_deref(), Some("{t}c"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_with_password_promotes_the_replica_of_a_paused_master() {
    let started = Instant::now();
    let c = Cluster::start_with(ClusterOptions { password: Some("cluster pw".into()), ..ClusterOptions::default() }).await;
    eprintln!("Cluster::start_with(password) took {:?}", started.elapsed());
    assert!(c.url().starts_with("redis+cluster://:cluster%20pw@127.0.0.1:"), "{}", c.url());
    assert!(c.seed_url().starts_with("redis://:cluster%20pw@127.0.0.1:"), "{}", c.seed_url());

    let key = b"{p}lock";
    let slot = c.slot_of(key).await;
    let master = c.owner_of(key).await;
    let mut m = c.raw(master).await;
    set(&mut m, "{p}lock", "held").await;
    // MIGRATE needs AUTH towards the target.
    let other = *c.masters().await.iter().find(|&&p| p != master).unwrap();
    assert_eq!(c.migrate_slot(slot, other).await, 1);
    let master = c.owner_of(key).await;
    assert_eq!(master, other);
    let mut m = c.raw(master).await;
    let _: i64 = redis::cmd("WAIT").arg(1).arg(5000).query_async(&mut m).await.unwrap();

    let replica = c.replica_of(master).await;
    c.pause(master).await;
    let started = Instant::now();
    let new = c.wait_for_promotion(master, Duration::from_secs(60)).await;
    eprintln!("Cluster: promotion after a master was paused took {:?}", started.elapsed());
    assert_eq!(new, replica);
    assert_eq!(c.owner_of(key).await, new);
    assert_eq!(get(&mut c.raw(new).await, "{p}lock").await.as_deref(), Some("held"));

    // The old master comes back as a replica of the promoted one.
    c.resume(master);
    c.wait_stable().await;
    assert_eq!(c.replica_of(new).await, master);
    assert_eq!(role_of(&mut c.raw(master).await).await, "slave");
}
