//! What the replica acknowledgement (conn/acked.rs) knows of a master: the replicas
//! it should have, those connected now, and its server version (WAITAOF came in Redis
//! 7.2). Kept per master: one behind Sentinel (made again with every connection), one
//! per cluster slot that an acknowledged call went to (forgotten when the topology
//! changes). Parsed here from ROLE, INFO server, SENTINEL REPLICAS and CLUSTER NODES.

use std::collections::HashMap;
use std::sync::Mutex;

use redis::{Role, Value};

/// A master as the acknowledgement sees it.
#[derive(Debug, Clone)]
pub(crate) struct Facts {
    /// Replicas its sentinels (or the cluster's nodes) know as healthy: what it should
    /// have. A replica being promoted by a manual failover, detached from the master
    /// already, still counts here, so `all` cannot be met by the one left connected.
    pub known: u32,
    /// Replicas connected to it at the last look (ROLE).
    pub connected: u32,
    /// `major.minor` of its server, when known.
    pub version: Option<(u32, u32)>,
    /// Its `redis_version` as INFO gives it, for messages.
    pub version_text: String,
    /// Where it is, for messages.
    pub address: String,
    /// Look again before the next acknowledged call (a WAIT fell short, too few were
    /// connected): replicas come and go.
    pub stale: bool,
    /// When it was looked at (a look asks the sentinels or the cluster's nodes: waiters
    /// retrying by the dozen share one per [`Facts::FRESH`]).
    pub looked: std::time::Instant,
}

impl Facts {
    /// How long a look stands even if stale.
    pub const FRESH: std::time::Duration = std::time::Duration::from_millis(100);

    /// Whether to look again before an acknowledged call.
    pub fn outdated(&self) -> bool {
        self.stale && self.looked.elapsed() >= Self::FRESH
    }

    /// The replicas the master should have: connected now, or more if its view says so.
    pub fn replicas(&self) -> u32 {
        self.known.max(self.connected)
    }

    /// Whether it has WAITAOF (Redis 7.2 or later); `None` while unknown.
    pub fn has_waitaof(&self) -> Option<bool> {
        self.version.map(|v| v >= (7, 2))
    }
}

/// The facts of each master, keyed by cluster slot (`None` behind Sentinel).
#[derive(Default)]
pub(crate) struct Known {
    masters: Mutex<HashMap<Option<u16>, Facts>>,
}

impl Known {
    pub fn get(&self, slot: Option<u16>) -> Option<Facts> {
        self.masters.lock().unwrap().get(&slot).cloned()
    }

    pub fn set(&self, slot: Option<u16>, facts: Facts) {
        self.masters.lock().unwrap().insert(slot, facts);
    }

    /// After an acknowledged call: the replicas connected then, and whether to look again.
    pub fn update(&self, slot: Option<u16>, connected: u32, stale: bool) {
        if let Some(facts) = self.masters.lock().unwrap().get_mut(&slot) {
            facts.connected = connected;
            facts.stale |= stale;
        }
    }

    /// Forgets every master (a reconnect, a changed topology).
    pub fn clear(&self) {
        self.masters.lock().unwrap().clear();
    }
}

/// ROLE's answer: `Some(connected replicas)` on a master, `None` on anything else.
pub(crate) fn connected_of_role(role: Value) -> redis::RedisResult<Option<u32>> {
    Ok(match redis::from_redis_value::<Role>(role)? {
        Role::Primary { replicas, .. } => Some(replicas.len() as u32),
        _ => None,
    })
}

/// A field of INFO's text (`name:value` lines).
pub(crate) fn info_field<'a>(info: &'a str, name: &str) -> Option<&'a str> {
    info.lines().find_map(|line| line.strip_prefix(name)?.strip_prefix(':')).map(str::trim)
}

/// `major.minor` of a `redis_version`.
pub(crate) fn parse_version(text: &str) -> Option<(u32, u32)> {
    let mut parts = text.split('.');
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// The replicas one sentinel lists for a master (SENTINEL REPLICAS) that it does not
/// flag as down. `disconnected` is the sentinel's own link to the replica, not the
/// replica's health: a sentinel flags every replica record it makes at a
/// `+switch-master`, and every replica whose clients another sentinel's REPLICAOF
/// killed, so for a moment after each failover. Not counting them made `all` mean
/// the one replica connected then (the failover harness: an acquire that replica
/// alone acknowledged, lost when it resynced from a master promoted without it: a
/// fencing token handed out twice). A replica really gone is flagged `s_down` after
/// down-after.
pub(crate) fn healthy_in_sentinel_view(replicas: &[HashMap<String, String>]) -> u32 {
    replicas
        .iter()
        .filter(|r| {
            let flags = r.get("flags").map(String::as_str).unwrap_or("");
            !flags.split(',').any(|f| matches!(f, "s_down" | "o_down"))
        })
        .count() as u32
}

/// The replicas of the node that answered CLUSTER NODES (the `myself` line) that the
/// cluster does not flag as failed, address-less or still joining.
pub(crate) fn replicas_in_cluster_nodes(nodes: &str) -> u32 {
    let lines: Vec<Vec<&str>> = nodes.lines().map(|l| l.split_whitespace().collect()).filter(|f: &Vec<&str>| f.len() >= 8).collect();
    let Some(me) = lines.iter().find(|f| f[2].split(',').any(|flag| flag == "myself")).map(|f| f[0]) else {
        return 0;
    };
    lines
        .iter()
        .filter(|f| f[3] == me && !f[2].split(',').any(|flag| matches!(flag, "fail" | "noaddr" | "handshake")))
        .count() as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn views_count_healthy_replicas() {
        let replica = |flags: &str| HashMap::from([("flags".to_string(), flags.to_string())]);
        let view = [replica("slave"), replica("slave,s_down"), replica("slave,disconnected"), replica("slave,promoted"), replica("slave,s_down,disconnected")];
        assert_eq!(healthy_in_sentinel_view(&view), 3, "a link the sentinel lost is not a replica down");
        let nodes = "a 127.0.0.1:1@2 myself,master - 0 0 1 connected 0-100\n\
                     b 127.0.0.1:3@4 slave a 0 0 1 connected\n\
                     c 127.0.0.1:5@6 slave,fail a 0 0 1 connected\n\
                     d 127.0.0.1:7@8 slave,fail? a 0 0 1 connected\n\
                     e 127.0.0.1:9@10 slave f 0 0 1 connected\n";
        assert_eq!(replicas_in_cluster_nodes(nodes), 2);
        assert_eq!(parse_version("7.0.15"), Some((7, 0)));
        assert_eq!(info_field("# Server\r\nredis_version:7.2.6\r\nrun_id:abc\r\n", "run_id"), Some("abc"));
    }
}
