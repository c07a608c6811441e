//! A mixed fleet on a Redis Cluster: Redisson in cluster mode and ferrolock on one
//! lock wake each other by message, with whichever pub/sub the cluster has. Both ask
//! the server at connect: sharded (SSUBSCRIBE/SPUBLISH) from Redis 7.0, classic
//! PUBLISH/SUBSCRIBE before (which the cluster broadcasts to every node).
//! scripts/test-servers.sh runs this against a Redis 6.2 cluster too.

use std::time::{Duration, Instant};

use ferrolock::{AcquireOptions, Client};
use ferrolock_harness::{eventually, Cluster};

use crate::driver::{wake_up, Redisson, LEASE};

/// Subscribers of `channel` anywhere in the cluster: classic ones on every node,
/// sharded ones (a server before 7.0 refuses SHARDNUMSUB: none there).
async fn subscribers(cluster: &Cluster, channel: &str) -> i64 {
    let mut n = 0;
    for port in cluster.ports() {
        let mut raw = cluster.raw(port).await;
        for sub in ["NUMSUB", "SHARDNUMSUB"] {
            let counted: redis::RedisResult<(String, i64)> = redis::cmd("PUBSUB").arg(sub).arg(channel).query_async(&mut raw).await;
            n += counted.map_or(0, |(_, k)| k);
        }
    }
    n
}

pub async fn mixed_fleet_on_a_cluster(version: &'static str) {
    let cluster = Cluster::start().await;
    let seeds: Vec<String> = cluster.ports().iter().map(|p| format!("redis://127.0.0.1:{p}")).collect();
    let mut java = Redisson::start(version, LEASE, &[format!("cluster:{}", seeds.join(","))]).await;
    let client = Client::builder(cluster.url()).watchdog_timeout(LEASE).connect().await.unwrap();
    let name = "fleet-lock";
    let channel = format!("redisson_lock__channel:{{{name}}}");
    let ours = client.lock(name).unwrap();

    // Redisson holds; its release message wakes a waiting ferrolock acquire.
    assert_eq!(java.call(&format!("lock try {name} 0")).await, "ok");
    let lock = ours.clone();
    let waiter = tokio::spawn(async move {
        let hold = lock.acquire_hold(AcquireOptions::wait(LEASE)).await.unwrap().expect("acquired within 30 s");
        (hold, Instant::now())
    });
    eventually(Duration::from_secs(20), "the ferrolock acquire parked", || async { client.waiting_acquires() == 1 }).await;
    let released = Instant::now();
    assert_eq!(java.call(&format!("lock unlock {name}")).await, "ok");
    let (_hold, acquired) = waiter.await.unwrap();
    wake_up(version, "Redisson's release -> ferrolock on a cluster", acquired - released);

    // ferrolock holds; its release message wakes Redisson's waiting tryLock.
    // ferrolock's subscription lingers 100 ms after its waiter left: then nobody waits.
    eventually(Duration::from_secs(10), "nobody subscribed to the lock's channel", || async {
        subscribers(&cluster, &channel).await == 0
    })
    .await;
    java.send(&format!("lock try {name} {}", LEASE.as_millis()));
    eventually(Duration::from_secs(20), "Redisson subscribed to the lock's channel", || async {
        subscribers(&cluster, &channel).await >= 1
    })
    .await;
    let released = Instant::now();
    ours.release().await.unwrap();
    assert_eq!(java.reply(LEASE + Duration::from_secs(10)).await, "ok");
    wake_up(version, "ferrolock's release -> Redisson on a cluster", released.elapsed());
    assert_eq!(java.call(&format!("lock unlock {name}")).await, "ok");
    assert!(!ours.is_locked().await.unwrap());
    client.shutdown().await.unwrap();
}
