//! ferrolock on Redis Cluster and behind Sentinel, each started here (the test
//! harness's topologies on loopback): ratios against the same run's round-trip to
//! the node that serves the lock.
//!
//! cargo run --release -p ferrolock --example topology_bench   (scripts/bench-topologies.sh)

#[path = "shared/measure.rs"]
mod measure;

use ferrolock::Client;
use ferrolock_harness::{Cluster, SentinelSet};
use measure::{contended, ms, uncontended};

#[tokio::main]
async fn main() {
    cluster().await;
    sentinel().await;
}

async fn cluster() {
    let cluster = Cluster::start().await;
    let client = Client::connect(cluster.url()).await.unwrap();
    let name = "bench:uncontended";
    let mut raw = cluster.raw(cluster.owner_of(name.as_bytes()).await).await;
    let (rtt, cycle) = uncontended(&mut raw, &client.lock(name).unwrap()).await;
    println!("== Redis Cluster (3 masters + 3 replicas), uncontended, one holder");
    println!("PING to the key's node p50      {}", ms(rtt));
    println!("acquire+release cycle           {}  ({:.0} cycles/s)", ms(cycle), 1.0 / cycle.as_secs_f64());
    println!("cycle / (2 x PING p50)          {:.2}", cycle.as_secs_f64() / (2.0 * rtt.as_secs_f64()));
    let mut raw = cluster.raw(cluster.owner_of(b"bench:contended").await).await;
    for clients in [1usize, 8] {
        let mut pool = vec![client.clone()];
        for _ in 1..clients {
            pool.push(Client::connect(cluster.url()).await.unwrap());
        }
        let locks: Vec<_> = (0..8).map(|i| pool[i % pool.len()].lock("bench:contended").unwrap()).collect();
        print!("(cluster) ");
        contended(&mut raw, &locks, clients).await;
    }
}

/// What the replica acknowledgement (WAIT) costs per cycle.
async fn sentinel() {
    let set = SentinelSet::start().await;
    let mut raw = set.raw_master().await;
    println!("== Sentinel (1 master + 1 replica + 3 sentinels), uncontended, one holder");
    let mut cycles = Vec::new();
    for ack in [false, true] {
        let policy = if ack { ferrolock::ReplicaAck::One } else { ferrolock::ReplicaAck::Off };
        let client = Client::builder(set.url()).replica_ack(policy).connect().await.unwrap();
        let (rtt, cycle) = uncontended(&mut raw, &client.lock("bench:sentinel").unwrap()).await;
        println!(
            "replica ack {:<3}: cycle {}  ({:.0} cycles/s), PING p50 {}, cycle / (2 x PING) {:.2}",
            if ack { "on" } else { "off" },
            ms(cycle),
            1.0 / cycle.as_secs_f64(),
            ms(rtt),
            cycle.as_secs_f64() / (2.0 * rtt.as_secs_f64())
        );
        cycles.push(cycle);
        client.shutdown().await.unwrap();
    }
    let wait_cost = cycles[1].saturating_sub(cycles[0]);
    println!("WAIT costs per cycle            {}  (on / off = {:.2})", ms(wait_cost), cycles[1].as_secs_f64() / cycles[0].as_secs_f64());
}
