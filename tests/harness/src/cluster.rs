//! A real Redis Cluster: 3 masters + 3 replicas on 127.0.0.1, built with CLUSTER
//! ADDSLOTS / MEET / REPLICATE (no redis-cli, which can hang on a stopped node).
//! Every process is killed on drop.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use redis::aio::MultiplexedConnection;

use crate::topology::{connect, info_field, node_url, query, replica_link_up, role, url_encode, value_text, wait_until, SETTLE};
use crate::{free_port, RedisServer};

/// Number of hash slots of a Redis Cluster.
pub const CLUSTER_SLOTS: u16 = 16384;

/// Settings of a [`Cluster`]; `Default` gives no password and a 2 s node timeout.
#[derive(Clone, Debug)]
pub struct ClusterOptions {
    /// `requirepass` + `masterauth` on every node.
    pub password: Option<String>,
    /// `cluster-node-timeout`: how long a node may not answer before failover starts.
    pub node_timeout: Duration,
    /// More options for every node's command line (`--rename-command HELLO x`).
    pub extra_args: Vec<String>,
}

impl Default for ClusterOptions {
    fn default() -> Self {
        ClusterOptions { password: None, node_timeout: Duration::from_millis(2000), extra_args: Vec::new() }
    }
}

/// One entry of the slot map (CLUSTER SLOTS): slots `start..=end` served by `master`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlotRange {
    /// First slot of the range.
    pub start: u16,
    /// Last slot of the range (inclusive).
    pub end: u16,
    /// Port of the master serving the range.
    pub master: u16,
    /// Sorted; failed replicas are left out (as CLUSTER SLOTS does).
    pub replicas: Vec<u16>,
}

struct Node {
    server: RedisServer,
    id: String,
    bus_port: u16,
}

/// 3 masters + 3 replicas. Roles change on failover and slots on migration, so the
/// role accessors ask a live node each time.
pub struct Cluster {
    nodes: Vec<Node>,
    opts: ClusterOptions,
    first_masters: Vec<u16>,
    /// For each master paused by [`Cluster::pause`], its replica at that time: once it is
    /// promoted no node remembers the pair.
    replica_when_paused: Mutex<HashMap<u16, u16>>,
}

impl Cluster {
    /// [`Cluster::start_with`] with default options.
    pub async fn start() -> Cluster {
        Self::start_with(ClusterOptions::default()).await
    }

    /// Starts 6 nodes and joins them; returns once every node reports cluster_state:ok,
    /// all 6 report the same slot map (3 masters, each with its replica) and every
    /// replica's link is up.
    pub async fn start_with(opts: ClusterOptions) -> Cluster {
        let mut nodes = Vec::new();
        for n in 0..6 {
            let (server, bus_port) = start_node(&opts, n);
            let id: String = query(server.port, opts.password.as_deref(), redis::cmd("CLUSTER").arg("MYID"))
                .await
                .unwrap_or_else(|e| panic!("Cluster::start: CLUSTER MYID: {e}"));
            nodes.push(Node { server, id, bus_port });
        }
        let first_masters = nodes[..3].iter().map(|n| n.server.port).collect();
        let cluster = Cluster { nodes, opts, first_masters, replica_when_paused: Mutex::new(HashMap::new()) };
        let pw = cluster.opts.password.as_deref();
        let must = |what: &str, r: Result<redis::Value, String>| {
            r.unwrap_or_else(|e| panic!("Cluster::start: {what}: {e}"));
        };

        for (n, node) in cluster.nodes.iter().enumerate() {
            // Distinct epochs up front, as redis-cli does, so no epoch collision has to be resolved.
            let cmd = redis::cmd("CLUSTER").arg("SET-CONFIG-EPOCH").arg(n + 1).clone();
            must("CLUSTER SET-CONFIG-EPOCH", query(node.server.port, pw, &cmd).await);
        }
        for (n, node) in cluster.nodes[..3].iter().enumerate() {
            let slots = CLUSTER_SLOTS as usize;
            let (start, end) = (n * slots / 3, (n + 1) * slots / 3 - 1);
            let cmd = redis::cmd("CLUSTER").arg("ADDSLOTS").arg((start..=end).collect::<Vec<_>>()).clone();
            must("CLUSTER ADDSLOTS", query(node.server.port, pw, &cmd).await);
        }
        let seed = cluster.nodes[0].server.port;
        for node in &cluster.nodes[1..] {
            // The bus port is explicit: the default (port + 10000) may be out of range.
            let cmd = redis::cmd("CLUSTER").arg("MEET").arg("127.0.0.1").arg(node.server.port).arg(node.bus_port).clone();
            must("CLUSTER MEET", query(seed, pw, &cmd).await);
        }
        // CLUSTER REPLICATE needs the replica to know its master already.
        wait_until(SETTLE, "Cluster::start: every node to know all 6 nodes", || cluster.all_known()).await;
        for (replica, master) in cluster.nodes[3..].iter().zip(&cluster.nodes[..3]) {
            let cmd = redis::cmd("CLUSTER").arg("REPLICATE").arg(&master.id).clone();
            must("CLUSTER REPLICATE", query(replica.server.port, pw, &cmd).await);
        }
        cluster.wait_stable_for("Cluster::start").await;
        cluster
    }

    /// `redis+cluster://[:password@]127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3`: the 3 nodes that
    /// were masters at start (seeds: a cluster client finds the current roles itself).
    pub fn url(&self) -> String {
        let hosts: Vec<String> = self.first_masters.iter().map(|p| format!("127.0.0.1:{p}")).collect();
        format!("redis+cluster://{}{}", self.auth(), hosts.join(","))
    }

    /// `redis://[:password@]127.0.0.1:p1`: one node (the first master at start).
    pub fn seed_url(&self) -> String {
        node_url(self.first_masters[0], self.opts.password.as_deref())
    }

    fn auth(&self) -> String {
        self.opts.password.as_deref().map(|pw| format!(":{}@", url_encode(pw))).unwrap_or_default()
    }

    /// All 6 node ports, the masters at start first.
    pub fn ports(&self) -> Vec<u16> {
        self.nodes.iter().map(|n| n.server.port).collect()
    }

    /// The options the cluster was started with.
    pub fn options(&self) -> &ClusterOptions {
        &self.opts
    }

    /// The slot map as one answering node sees it now (no waiting), sorted by slot.
    pub async fn slot_map(&self) -> Vec<SlotRange> {
        let port = self.any_reachable();
        slot_map(port, self.opts.password.as_deref()).await.unwrap_or_else(|e| panic!("Cluster::slot_map: {e}"))
    }

    /// Ports of the masters serving slots, sorted (from [`Cluster::slot_map`]).
    pub async fn masters(&self) -> Vec<u16> {
        let mut masters: Vec<u16> = self.slot_map().await.iter().map(|r| r.master).collect();
        masters.sort();
        masters.dedup();
        masters
    }

    /// Ports of the replicas of those masters, sorted (from [`Cluster::slot_map`]).
    pub async fn replicas(&self) -> Vec<u16> {
        let mut replicas: Vec<u16> = self.slot_map().await.into_iter().flat_map(|r| r.replicas).collect();
        replicas.sort();
        replicas.dedup();
        replicas
    }

    /// The replica of `master_port` (from [`Cluster::slot_map`]); panics if it has none.
    pub async fn replica_of(&self, master_port: u16) -> u16 {
        let map = self.slot_map().await;
        map.iter()
            .find(|r| r.master == master_port)
            .and_then(|r| r.replicas.first().copied())
            .unwrap_or_else(|| panic!("Cluster::replica_of: {master_port} is not a master with a replica in {map:?}"))
    }

    /// The hash slot of `key` (CLUSTER KEYSLOT).
    pub async fn slot_of(&self, key: &[u8]) -> u16 {
        let cmd = redis::cmd("CLUSTER").arg("KEYSLOT").arg(key).clone();
        query(self.any_reachable(), self.opts.password.as_deref(), &cmd)
            .await
            .unwrap_or_else(|e| panic!("Cluster::slot_of: {e}"))
    }

    /// The master serving `key`'s slot, per [`Cluster::slot_map`].
    pub async fn owner_of(&self, key: &[u8]) -> u16 {
        let slot = self.slot_of(key).await;
        self.owner_of_slot(slot).await
    }

    /// The master serving `slot`, per [`Cluster::slot_map`].
    pub async fn owner_of_slot(&self, slot: u16) -> u16 {
        let map = self.slot_map().await;
        owner(&map, slot).unwrap_or_else(|| panic!("Cluster: slot {slot} is not served in {map:?}"))
    }

    /// `key`'s slot and a master other than the one serving it (a target to move it to).
    pub async fn slot_and_another_master(&self, key: &[u8]) -> (u16, u16) {
        let slot = self.slot_of(key).await;
        let from = self.owner_of_slot(slot).await;
        let to = *self.masters().await.iter().find(|p| **p != from).expect("Cluster: another master");
        (slot, to)
    }

    /// A raw (non-cluster) connection to one node, with the password; replies time out
    /// after 5 s, so a paused node cannot hang the caller.
    pub async fn raw(&self, port: u16) -> MultiplexedConnection {
        connect(port, self.opts.password.as_deref()).await.unwrap_or_else(|e| panic!("Cluster::raw: {e}"))
    }

    /// Moves `slot` and its keys to the master `to` (see [`Cluster::begin_migration`]);
    /// returns once all nodes agree `to` serves it, with the number of keys moved.
    pub async fn migrate_slot(&self, slot: u16, to: u16) -> usize {
        let migration = self.begin_migration(slot, to).await;
        let moved = migration.move_keys().await;
        migration.finish().await;
        moved
    }

    /// Marks `slot` IMPORTING on `to` and MIGRATING on its owner: from now on the owner
    /// answers ASK for keys it no longer holds. No waiting.
    pub async fn begin_migration(&self, slot: u16, to: u16) -> Migration<'_> {
        let from = self.owner_of_slot(slot).await;
        assert_ne!(from, to, "Cluster::begin_migration: slot {slot} is already on {to}");
        let pw = self.opts.password.as_deref();
        let (from_id, to_id) = (self.node(from).id.clone(), self.node(to).id.clone());
        let cmd = redis::cmd("CLUSTER").arg("SETSLOT").arg(slot).arg("IMPORTING").arg(&from_id).clone();
        query::<()>(to, pw, &cmd).await.unwrap_or_else(|e| panic!("Cluster::begin_migration: SETSLOT IMPORTING: {e}"));
        let cmd = redis::cmd("CLUSTER").arg("SETSLOT").arg(slot).arg("MIGRATING").arg(&to_id).clone();
        query::<()>(from, pw, &cmd).await.unwrap_or_else(|e| panic!("Cluster::begin_migration: SETSLOT MIGRATING: {e}"));
        Migration { cluster: self, slot, from, to, to_id }
    }

    /// CLUSTER FAILOVER on the replica of `master_port`; waits until the replica is ROLE
    /// master, the old master replicates from it with link up, and every node reports
    /// cluster_state:ok and the same slot map. Returns the new master.
    pub async fn failover(&self, master_port: u16) -> u16 {
        let replica = self.replica_of(master_port).await;
        let pw = self.opts.password.as_deref();
        let asked = Mutex::new(None::<Instant>);
        wait_until(SETTLE, format!("Cluster::failover: replica {replica} of {master_port} to become master"), || async {
            match role(replica, pw).await? {
                r if r == "master" => Ok(()),
                r => {
                    // A manual failover is dropped if it does not complete in 5 s (a busy
                    // machine): ask again after that, never while one may be under way.
                    let due = asked.lock().unwrap().is_none_or(|t| t.elapsed() > Duration::from_secs(10));
                    if due {
                        *asked.lock().unwrap() = Some(Instant::now());
                        query::<()>(replica, pw, redis::cmd("CLUSTER").arg("FAILOVER")).await?;
                    }
                    Err(format!("{replica} has ROLE {r}"))
                }
            }
        })
        .await;
        let what = format!("Cluster::failover: old master {master_port} to replicate from {replica}, the cluster stable");
        wait_until(SETTLE, what, || async {
            replica_link_up(master_port, replica, pw).await?;
            let map = self.stable_map().await?;
            match map.iter().find(|r| r.master == replica) {
                Some(r) if r.replicas.contains(&master_port) => Ok(()),
                _ => Err(format!("slot map {map:?}")),
            }
        })
        .await;
        replica
    }

    /// SIGSTOPs the node on `port` (it keeps its sockets, answers nothing); returns once
    /// the process is stopped. If it is a master, its replica is remembered for
    /// [`Cluster::wait_for_promotion`].
    pub async fn pause(&self, port: u16) {
        let map = self.slot_map().await;
        if let Some(replica) = map.iter().find(|r| r.master == port).and_then(|r| r.replicas.first()) {
            self.replica_when_paused.lock().unwrap().insert(port, *replica);
        }
        self.node(port).server.pause();
    }

    /// SIGCONTs the node on `port`; returns once it runs again, without waiting for it to
    /// rejoin (a resumed old master may briefly believe it still serves its slots):
    /// [`Cluster::wait_stable`] waits for that.
    pub fn resume(&self, port: u16) {
        self.node(port).server.resume();
    }

    /// Waits until the replica of the paused master `of_master_port` is ROLE master and
    /// every other (unpaused) node reports cluster_state:ok and the same slot map, which
    /// no longer has the paused node. The paused node is never queried. Returns the new master.
    pub async fn wait_for_promotion(&self, of_master_port: u16, limit: Duration) -> u16 {
        let remembered = self.replica_when_paused.lock().unwrap().get(&of_master_port).copied();
        let replica = match remembered {
            Some(r) => r,
            None => self.replica_of(of_master_port).await,
        };
        let pw = self.opts.password.as_deref();
        let what = format!("Cluster::wait_for_promotion: replica {replica} to replace master {of_master_port}");
        wait_until(limit, what, || async {
            match role(replica, pw).await? {
                r if r == "master" => {}
                r => return Err(format!("{replica} has ROLE {r}")),
            }
            let map = self.stable_map().await?;
            if map.iter().any(|r| r.master == of_master_port || r.replicas.contains(&of_master_port)) {
                return Err(format!("slot map still has {of_master_port}: {map:?}"));
            }
            Ok(())
        })
        .await;
        replica
    }

    /// Waits until every unpaused node reports cluster_state:ok and the same slot map, each
    /// of them is in it, and every replica's link is up.
    pub async fn wait_stable(&self) {
        self.wait_stable_for("Cluster::wait_stable").await
    }

    async fn wait_stable_for(&self, caller: &str) {
        let what = format!("{caller}: cluster_state:ok and one slot map on every node, all replicas linked");
        wait_until(SETTLE, what, || self.stable_map()).await;
    }

    /// The slot map when the cluster is stable (see [`Cluster::wait_stable`]), else what is not.
    async fn stable_map(&self) -> Result<Vec<SlotRange>, String> {
        let pw = self.opts.password.as_deref();
        let mut first: Option<(u16, Vec<SlotRange>)> = None;
        for port in self.reachable() {
            let info: String = query(port, pw, redis::cmd("CLUSTER").arg("INFO")).await?;
            match info_field(&info, "cluster_state") {
                Some("ok") => {}
                state => return Err(format!("{port} has cluster_state:{}", state.unwrap_or("?"))),
            }
            let map = slot_map(port, pw).await?;
            match &first {
                None => first = Some((port, map)),
                Some((p, m)) if *m != map => return Err(format!("{p} has slot map {m:?} but {port} has {map:?}")),
                Some(_) => {}
            }
        }
        let (_, map) = first.ok_or("no node is reachable")?;
        for port in self.reachable() {
            if let Some(r) = map.iter().find(|r| r.replicas.contains(&port)) {
                replica_link_up(port, r.master, pw).await?;
            } else if !map.iter().any(|r| r.master == port) {
                return Err(format!("{port} is not in the slot map {map:?}"));
            }
        }
        Ok(map)
    }

    /// Ok once every node knows all 6 (no handshake under way).
    async fn all_known(&self) -> Result<(), String> {
        for node in &self.nodes {
            let port = node.server.port;
            let text: String = query(port, self.opts.password.as_deref(), redis::cmd("CLUSTER").arg("NODES")).await?;
            let known = text
                .lines()
                .filter(|l| {
                    let mut f = l.split(' ');
                    let (id, flags) = (f.next().unwrap_or(""), f.nth(1).unwrap_or(""));
                    self.nodes.iter().any(|n| n.id == id) && !flags.split(',').any(|f| f == "handshake" || f == "noaddr")
                })
                .count();
            if known != self.nodes.len() {
                return Err(format!("{port} knows {known} nodes:\n{text}"));
            }
        }
        Ok(())
    }

    /// Ports of nodes that are running and not paused: safe to query.
    fn reachable(&self) -> Vec<u16> {
        self.nodes
            .iter()
            .filter(|n| n.server.is_running() && !n.server.is_paused())
            .map(|n| n.server.port)
            .collect()
    }

    fn any_reachable(&self) -> u16 {
        *self.reachable().first().unwrap_or_else(|| panic!("Cluster: every node is paused or killed"))
    }

    fn node(&self, port: u16) -> &Node {
        self.nodes
            .iter()
            .find(|n| n.server.port == port)
            .unwrap_or_else(|| panic!("Cluster: {port} is not a node of this cluster ({:?})", self.ports()))
    }
}

/// A slot being moved by [`Cluster::begin_migration`]: keys move with
/// [`Migration::move_keys`], ownership with [`Migration::finish`]. Dropping it leaves the
/// slot half-migrated.
pub struct Migration<'a> {
    cluster: &'a Cluster,
    /// The slot being moved.
    pub slot: u16,
    /// Port of the master it is moving from.
    pub from: u16,
    /// Port of the master it is moving to.
    pub to: u16,
    to_id: String,
}

impl Migration<'_> {
    /// MIGRATEs the slot's keys from the source to the target, in batches, until the
    /// source has none left; returns how many moved.
    pub async fn move_keys(&self) -> usize {
        let pw = self.cluster.opts.password.as_deref();
        let mut moved = 0;
        loop {
            let cmd = redis::cmd("CLUSTER").arg("GETKEYSINSLOT").arg(self.slot).arg(100).clone();
            let keys: Vec<Vec<u8>> = query(self.from, pw, &cmd)
                .await
                .unwrap_or_else(|e| panic!("Migration::move_keys: GETKEYSINSLOT {}: {e}", self.slot));
            if keys.is_empty() {
                return moved;
            }
            let mut cmd = redis::cmd("MIGRATE");
            cmd.arg("127.0.0.1").arg(self.to).arg("").arg(0).arg(5000);
            if let Some(pw) = pw {
                cmd.arg("AUTH").arg(pw);
            }
            cmd.arg("KEYS").arg(&keys);
            query::<()>(self.from, pw, &cmd)
                .await
                .unwrap_or_else(|e| panic!("Migration::move_keys: MIGRATE of {} keys {} -> {}: {e}", keys.len(), self.from, self.to));
            moved += keys.len();
        }
    }

    /// Moves any keys left, then CLUSTER SETSLOT NODE on the target, the source and every
    /// other master; waits until every node reports the target as the slot's owner (and
    /// the cluster is stable).
    pub async fn finish(self) {
        self.move_keys().await;
        let cluster = self.cluster;
        let pw = cluster.opts.password.as_deref();
        let masters = slot_map(self.to, pw).await.unwrap_or_else(|e| panic!("Migration::finish: {e}"));
        let reachable = cluster.reachable();
        let mut others: Vec<u16> = masters.iter().map(|r| r.master).filter(|p| *p != self.to && *p != self.from && reachable.contains(p)).collect();
        others.sort();
        others.dedup();
        // The target first: it then bumps its epoch, so its claim wins over stale gossip.
        let order = [self.to, self.from].into_iter().chain(others);
        for port in order {
            let cmd = redis::cmd("CLUSTER").arg("SETSLOT").arg(self.slot).arg("NODE").arg(&self.to_id).clone();
            query::<()>(port, pw, &cmd)
                .await
                .unwrap_or_else(|e| panic!("Migration::finish: SETSLOT {} NODE on {port}: {e}", self.slot));
        }
        let (slot, to) = (self.slot, self.to);
        wait_until(SETTLE, format!("Migration::finish: every node to report slot {slot} on {to}"), || async move {
            let map = cluster.stable_map().await?;
            match owner(&map, slot) {
                Some(p) if p == to => Ok(()),
                other => Err(format!("slot {slot} is on {other:?}")),
            }
        })
        .await
    }
}

/// Starts one cluster node. Its bus port is chosen here, so a clash with another process
/// only shows when redis-server fails to start: then try again with other ports.
fn start_node(opts: &ClusterOptions, n: usize) -> (RedisServer, u16) {
    let timeout = opts.node_timeout.as_millis().to_string();
    let mut last_error = String::new();
    // `cluster-port` is Redis 7.0+; before, the bus listens on the port + 10000 (a node
    // whose bus port is out of range or taken fails to start, and is started again
    // on another port).
    let bus_port_option = crate::redis_server_version() >= (7, 0, 0);
    for _ in 0..5 {
        let bus_port = free_port().to_string();
        let mut args = vec![
            "--cluster-enabled",
            "yes",
            // Relative to the node's own --dir, so each node has its own.
            "--cluster-config-file",
            "nodes.conf",
            "--cluster-node-timeout",
            &timeout,
            // Promote a replica however long it lost its master (the default refuses after 10 node timeouts).
            "--cluster-replica-validity-factor",
            "0",
            "--repl-diskless-sync-delay",
            "0",
            // CLUSTER SLOTS hides replicas at replication offset 0; a replica of an empty
            // master only moves past 0 with the master's replication PING (every 10 s by default).
            "--repl-ping-replica-period",
            "1",
        ];
        if bus_port_option {
            args.extend(["--cluster-port", &bus_port]);
        }
        args.extend(opts.extra_args.iter().map(String::as_str));
        if let Some(pw) = &opts.password {
            args.extend(["--requirepass", pw, "--masterauth", pw]);
        }
        match RedisServer::try_start(&args) {
            Ok(server) if bus_port_option => return (server, bus_port.parse().expect("a port")),
            Ok(server) => {
                let bus = server.port + 10000;
                return (server, bus);
            }
            Err(e) => last_error = e,
        }
    }
    panic!("Cluster: node {n} did not start: {last_error}")
}

fn owner(map: &[SlotRange], slot: u16) -> Option<u16> {
    map.iter().find(|r| (r.start..=r.end).contains(&slot)).map(|r| r.master)
}

/// CLUSTER SLOTS of one node, as sorted ranges.
async fn slot_map(port: u16, password: Option<&str>) -> Result<Vec<SlotRange>, String> {
    let reply: redis::Value = query(port, password, redis::cmd("CLUSTER").arg("SLOTS")).await?;
    let odd = |what: &dyn std::fmt::Debug| format!("{port}: odd CLUSTER SLOTS reply {what:?}");
    let redis::Value::Array(ranges) = &reply else { return Err(odd(&reply)) };
    let mut map = Vec::new();
    for range in ranges {
        let redis::Value::Array(items) = range else { return Err(odd(range)) };
        let int = |v: Option<&redis::Value>| match v {
            Some(redis::Value::Int(i)) => u16::try_from(*i).ok(),
            _ => None,
        };
        // Each node is [ip, port, id, ...].
        let node_port = |v: &redis::Value| match v {
            redis::Value::Array(node) if node.first().and_then(value_text).as_deref() == Some("127.0.0.1") => int(node.get(1)),
            _ => None,
        };
        let (Some(start), Some(end)) = (int(items.first()), int(items.get(1))) else { return Err(odd(range)) };
        let mut ports = items.iter().skip(2).map(|n| node_port(n).ok_or_else(|| odd(n)));
        let master = ports.next().ok_or_else(|| odd(range))??;
        let mut replicas = ports.collect::<Result<Vec<u16>, String>>()?;
        replicas.sort();
        map.push(SlotRange { start, end, master, replicas });
    }
    map.sort_by_key(|r| r.start);
    Ok(map)
}
