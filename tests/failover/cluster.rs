//! Redis Cluster for the failover harness: 3 masters with 1 replica each on 127.0.0.1,
//! every node reached through two proxies (proxy.rs), its client port and its bus port,
//! which are the addresses it announces (cluster-announce-port, -bus-port), so the harness
//! can cut a master off from its replica and its cluster peers while clients reach it.
//! The faults hit the master of the shard that holds slot `target_slot`.

use std::time::Duration;

use ferrolock_harness::{free_port, info_field, query, role, RedisServer};

use crate::common::{blocking, until, FaultKind, NodeSettings, Rng, Timers};
use crate::proxy::{Isolation, Kind, Proxies};

const SLOTS: usize = 16384;

struct Node {
    server: RedisServer,
    proxy: u16,
    bus_proxy: u16,
    id: String,
    down: bool,
}

pub struct ClusterTopo {
    proxies: Proxies,
    nodes: Vec<Node>,
    timers: Timers,
    target_slot: u16,
    aof: bool,
}

/// One range of CLUSTER SLOTS: first slot, master and replicas (proxy ports).
type Range = (u16, u16, Vec<u16>);

impl ClusterTopo {
    pub async fn start(settings: NodeSettings, timers: Timers, target_slot: u16) -> Result<ClusterTopo, String> {
        let proxies = Proxies::default();
        let mut nodes = Vec::new();
        for _ in 0..6 {
            let proxy = proxies.add(Kind::Data, 0).await;
            let bus_proxy = proxies.add(Kind::Bus, 0).await;
            let mut last = String::new();
            let mut started = None;
            for _ in 0..5 {
                let bus = free_port();
                let mut args = settings.args(&format!("cluster-{proxy}"));
                args.extend(
                    [
                        "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                        "--cluster-node-timeout", &timers.node_timeout.as_millis().to_string(),
                        "--cluster-port", &bus.to_string(),
                        "--cluster-announce-port", &proxy.to_string(),
                        "--cluster-announce-bus-port", &bus_proxy.to_string(),
                        // Promote a replica however long it lost its master; ping replicas every second
                        // (CLUSTER SLOTS hides a replica at offset 0).
                        "--cluster-replica-validity-factor", "0", "--repl-ping-replica-period", "1",
                    ]
                    .map(String::from),
                );
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                match blocking(|| RedisServer::try_start(&args)) {
                    Ok(s) => {
                        started = Some((s, bus));
                        break;
                    }
                    Err(e) => last = e,
                }
            }
            let (server, bus) = started.ok_or_else(|| format!("a cluster node did not start: {last}"))?;
            proxies.set_upstream(proxy, server.port);
            proxies.set_upstream(bus_proxy, bus);
            let id: String = query(server.port, None, redis::cmd("CLUSTER").arg("MYID")).await?;
            nodes.push(Node { server, proxy, bus_proxy, id, down: false });
        }
        let topo = ClusterTopo { proxies, nodes, timers, target_slot, aof: settings.aof };
        for (n, node) in topo.nodes.iter().enumerate() {
            query::<()>(node.server.port, None, redis::cmd("CLUSTER").arg("SET-CONFIG-EPOCH").arg(n + 1)).await?;
        }
        for (n, node) in topo.nodes[..3].iter().enumerate() {
            let cmd = redis::cmd("CLUSTER").arg("ADDSLOTSRANGE").arg(n * SLOTS / 3).arg((n + 1) * SLOTS / 3 - 1).clone();
            query::<()>(node.server.port, None, &cmd).await?;
        }
        let seed = topo.nodes[0].server.port;
        for node in &topo.nodes[1..] {
            let cmd = redis::cmd("CLUSTER").arg("MEET").arg("127.0.0.1").arg(node.proxy).arg(node.bus_proxy).clone();
            query::<()>(seed, None, &cmd).await?;
        }
        until(Duration::from_secs(60), "every node to know all 6", || topo.all_known()).await?;
        for (replica, master) in topo.nodes[3..].iter().zip(&topo.nodes[..3]) {
            query::<()>(replica.server.port, None, redis::cmd("CLUSTER").arg("REPLICATE").arg(&master.id)).await?;
        }
        topo.settled(Duration::from_secs(60)).await?;
        Ok(topo)
    }

    /// `redis+cluster://` with the three first masters as seeds.
    pub fn url(&self) -> String {
        let hosts: Vec<String> = self.nodes[..3].iter().map(|n| format!("127.0.0.1:{}", n.proxy)).collect();
        format!("redis+cluster://{}", hosts.join(","))
    }

    /// Direct ports of the running masters (for the end-of-run check).
    pub async fn master_ports(&self) -> Result<Vec<u16>, String> {
        let map = self.map_of(self.reachable()[0]).await?;
        Ok(map.iter().filter_map(|(_, m, _)| self.by_proxy(*m).map(|n| n.server.port)).collect())
    }

    fn by_proxy(&self, proxy: u16) -> Option<&Node> {
        self.nodes.iter().find(|n| n.proxy == proxy)
    }

    fn index(&self, proxy: u16) -> usize {
        self.nodes.iter().position(|n| n.proxy == proxy).expect("a node's proxy")
    }

    fn reachable(&self) -> Vec<u16> {
        self.nodes.iter().filter(|n| !n.down).map(|n| n.server.port).collect()
    }

    /// The target shard's master and replica if it has one (proxy ports), as a node reports them.
    async fn target_shard(&self, asked: u16) -> Result<(u16, Option<u16>), String> {
        let map = self.map_of(asked).await?;
        let (_, m, r) = map.iter().rev().find(|(start, _, _)| *start <= self.target_slot).ok_or("slot not served")?;
        Ok((*m, r.first().copied()))
    }

    pub async fn fault(&mut self, kind: FaultKind, rng: &mut Rng) -> Result<(u16, u16, String), String> {
        self.settled(Duration::from_secs(30)).await?;
        let (before, replica) = self.target_shard(self.reachable()[0]).await?;
        let replica = replica.ok_or_else(|| format!("master {before} has no replica"))?;
        let limit = self.timers.settle_limit();
        let m = self.index(before);
        let detail = match kind {
            FaultKind::KillRestart => {
                let delay = rng.between(Duration::ZERO, self.timers.node_timeout * 3 / 2);
                blocking(|| self.nodes[m].server.kill());
                tokio::time::sleep(delay).await; // the supervisor's restart delay (the fault itself)
                blocking(|| self.nodes[m].server.restart());
                self.proxies.set_upstream(before, self.nodes[m].server.port);
                format!("restarted {} after {} ms", if self.aof { "from its AOF" } else { "empty" }, delay.as_millis())
            }
            FaultKind::KillReplica => {
                blocking(|| self.nodes[m].server.kill());
                self.nodes[m].down = true;
                let promoted = self.promoted(before, replica, limit).await;
                blocking(|| self.nodes[m].server.restart());
                self.nodes[m].down = false;
                self.proxies.set_upstream(before, self.nodes[m].server.port);
                promoted?;
                "restarted once its replica was promoted (rejoins as a replica)".into()
            }
            FaultKind::Stop => {
                blocking(|| self.nodes[m].server.pause());
                self.nodes[m].down = true;
                let promoted = self.promoted(before, replica, limit).await;
                blocking(|| self.nodes[m].server.resume());
                self.nodes[m].down = false;
                promoted?;
                "resumed once its replica was promoted".into()
            }
            FaultKind::Manual => {
                // A manual failover that does not complete within 5 s is dropped: ask again.
                let direct = self.nodes[self.index(replica)].server.port;
                let mut tries = 0;
                loop {
                    tries += 1;
                    query::<()>(direct, None, redis::cmd("CLUSTER").arg("FAILOVER")).await?;
                    match self.promoted(before, replica, Duration::from_secs(15)).await {
                        Ok(()) => break,
                        Err(e) if tries == 3 => return Err(e),
                        Err(_) => {}
                    }
                }
                format!("CLUSTER FAILOVER on its replica ({tries} asked)")
            }
            FaultKind::Partition => {
                let isolation = Isolation { data_proxy: before, bus_proxy: Some(self.nodes[m].bus_proxy), node_id: Some(self.nodes[m].id.clone()) };
                let cuts = self.proxies.cuts();
                self.proxies.isolate(Some(isolation)).await;
                self.nodes[m].down = true; // its view is stale: leave it out of the checks
                let promoted = self.promoted(before, replica, limit).await;
                self.proxies.isolate(None).await;
                self.nodes[m].down = false;
                promoted?;
                format!("cut off from its replica and peers ({} connections cut) until its replica was promoted", self.proxies.cuts() - cuts)
            }
        };
        self.settled(limit).await?;
        let (after, _) = self.target_shard(self.reachable()[0]).await?;
        Ok((before, after, detail))
    }

    /// Waits until `replica` is ROLE master and every other reachable node maps the target
    /// slot to it.
    async fn promoted(&self, old: u16, replica: u16, limit: Duration) -> Result<(), String> {
        let direct = self.nodes[self.index(replica)].server.port;
        until(limit, &format!("replica {replica} to replace master {old}"), || async move {
            match role(direct, None).await? {
                r if r == "master" => {}
                r => return Err(format!("{replica} has ROLE {r}")),
            }
            for port in self.reachable() {
                let (m, _) = self.target_shard(port).await?;
                if m != replica {
                    return Err(format!("node {port} maps the slot to {m}"));
                }
            }
            Ok(())
        })
        .await
    }

    /// Waits until every node runs, reports cluster_state:ok and the same slot map (3
    /// masters with one replica each), and every replica's link is up.
    pub async fn settled(&self, limit: Duration) -> Result<(), String> {
        until(limit, "the cluster to settle", || async {
            if let Some(n) = self.nodes.iter().find(|n| n.down) {
                return Err(format!("{} is down", n.proxy));
            }
            let mut first: Option<Vec<Range>> = None;
            for n in &self.nodes {
                let info: String = query(n.server.port, None, redis::cmd("CLUSTER").arg("INFO")).await?;
                if info_field(&info, "cluster_state") != Some("ok") {
                    return Err(format!("{} is not cluster_state:ok", n.proxy));
                }
                let map = self.map_of(n.server.port).await?;
                if map.len() != 3 || map.iter().any(|(_, _, r)| r.len() != 1) {
                    return Err(format!("{} maps {map:?}", n.proxy));
                }
                match &first {
                    Some(f) if *f != map => return Err(format!("maps differ: {f:?} and {map:?}")),
                    _ => first = Some(map),
                }
            }
            for (_, master, replicas) in first.unwrap_or_default() {
                let info: String = query(self.nodes[self.index(replicas[0])].server.port, None, redis::cmd("INFO").arg("replication")).await?;
                if info_field(&info, "master_link_status") != Some("up") || info_field(&info, "master_port") != Some(&master.to_string()) {
                    return Err(format!("replica {} of {master} is not linked", replicas[0]));
                }
            }
            Ok(())
        })
        .await
    }

    async fn all_known(&self) -> Result<(), String> {
        for n in &self.nodes {
            let text: String = query(n.server.port, None, redis::cmd("CLUSTER").arg("NODES")).await?;
            let known = text.lines().filter(|l| !l.contains("handshake") && !l.contains("noaddr")).count();
            if known != 6 {
                return Err(format!("{} knows {known} nodes", n.proxy));
            }
        }
        Ok(())
    }

    /// CLUSTER SLOTS of one node: (first slot, master, replicas) by proxy port, sorted.
    async fn map_of(&self, port: u16) -> Result<Vec<Range>, String> {
        let reply: Vec<redis::Value> = query(port, None, redis::cmd("CLUSTER").arg("SLOTS")).await?;
        let mut map = Vec::new();
        for range in reply {
            let redis::Value::Array(items) = range else { return Err("odd CLUSTER SLOTS".into()) };
            let int = |v: &redis::Value| match v {
                redis::Value::Int(i) => Some(*i as u16),
                _ => None,
            };
            let node = |v: &redis::Value| match v {
                redis::Value::Array(n) => n.get(1).and_then(int),
                _ => None,
            };
            let start = items.first().and_then(int).ok_or("odd CLUSTER SLOTS")?;
            let mut ports = items.iter().skip(2).filter_map(node);
            let master = ports.next().ok_or("a range without master")?;
            let mut replicas: Vec<u16> = ports.collect();
            replicas.sort();
            map.push((start, master, replicas));
        }
        map.sort();
        Ok(map)
    }
}

/// CRC16/XMODEM, as Redis Cluster maps a key to its slot (no hash tags in our names).
pub fn slot_of(key: &str) -> u16 {
    let mut crc: u16 = 0;
    for &b in key.as_bytes() {
        crc ^= (b as u16) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 { (crc << 1) ^ 0x1021 } else { crc << 1 };
        }
    }
    crc % SLOTS as u16
}
