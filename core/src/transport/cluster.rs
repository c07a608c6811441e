//! Redis Cluster, on redis-rs's cluster connection: it routes each command to the
//! slot's master and follows MOVED/ASK/TRYAGAIN itself. Messages use sharded pub/sub
//! (SSUBSCRIBE/SPUBLISH, as Redisson in cluster mode), which needs RESP3 and a push
//! channel; the connection re-subscribes a node it reconnects to. A cluster before
//! Redis 7.0 has no sharded pub/sub: there, as Redisson does (it probes PUBSUB
//! SHARDNUMSUB at connect), classic PUBLISH/SUBSCRIBE, which the cluster broadcasts
//! to every node, so one subscription on any node hears every lock.

use std::time::Duration;

use redis::cluster::{ClusterClient, ClusterClientBuilder};
use redis::cluster_async::ClusterConnection;
use redis::{ConnectionInfo, PushInfo, RedisResult};
use tokio::sync::mpsc;

/// The seed nodes of a cluster and how to talk to them.
pub(crate) struct Nodes {
    seeds: Vec<ConnectionInfo>,
    /// The masters of the latest slot map the watcher saw (`host`, `port`): a new
    /// command connection starts from them. From the URL's seeds it waited for every
    /// seed to answer or time out, and after a failover one of them is often the old
    /// master, stopped: the connect timeout went by before the first hold was checked.
    masters: std::sync::Mutex<Vec<(String, u16)>>,
    connect_timeout: Duration,
    response_timeout: Duration,
    pub describe: String,
}

impl Nodes {
    pub fn new(seeds: Vec<ConnectionInfo>, connect_timeout: Duration, response_timeout: Duration) -> Nodes {
        let describe =
            format!("cluster via {}", seeds.iter().map(|i| super::describe(i.addr())).collect::<Vec<_>>().join(","));
        Nodes { seeds, masters: Default::default(), connect_timeout, response_timeout, describe }
    }

    fn builder(&self) -> ClusterClientBuilder {
        self.builder_from(self.seeds.clone())
    }

    fn builder_from(&self, seeds: Vec<ConnectionInfo>) -> ClusterClientBuilder {
        // redis-rs waits 1.28 s or more before each of 16 tries of a TRYAGAIN or
        // CLUSTERDOWN by default: far past the response timeout, so the caller saw that
        // timeout ("the connection failed") instead of the reason. Its 16 tries take
        // about half the response timeout this way (all of it at the most), and the last
        // error reaches the caller.
        let max_wait = (self.response_timeout.as_millis() as u64 / 12).max(10);
        ClusterClientBuilder::new(seeds)
            .connection_timeout(self.connect_timeout)
            .retries(16)
            .min_retry_wait(5)
            .max_retry_wait(max_wait)
    }

    fn client(builder: ClusterClientBuilder) -> RedisResult<ClusterClient> {
        builder.build()
    }

    /// A command connection (connects to the nodes of the current slot map), made
    /// from the latest slot map's masters when known, else from the URL's seeds.
    /// Without a response timeout of redis-rs's own, as a single node's (conn/mod.rs):
    /// each request carries ours. redis-rs's also made it reconnect to a node that
    /// stopped answering (a master SIGSTOPped before its failover), and while it
    /// reconnects every request to every node waits, up to the connect timeout: the
    /// failover was noticed, and the holds checked, only after that.
    pub async fn connection(&self) -> RedisResult<ClusterConnection> {
        let masters = self.masters_as_seeds();
        if !masters.is_empty() {
            match Self::client(self.builder_from(masters))?.get_async_connection().await {
                Ok(conn) => return Ok(conn),
                Err(e) => tracing::debug!(error = %e, "could not connect through the latest slot map's masters; trying the URL's seeds"),
            }
        }
        Self::client(self.builder())?.get_async_connection().await
    }

    /// Remembers the masters of a slot map the watcher saw.
    fn saw_masters(&self, map: &SlotMap) {
        let mut masters: Vec<(String, u16)> = map
            .iter()
            .filter_map(|(_, _, address)| {
                let (host, port) = address.rsplit_once(':')?;
                Some((host.trim_start_matches('[').trim_end_matches(']').to_string(), port.parse().ok()?))
            })
            .collect();
        masters.sort();
        masters.dedup();
        *self.masters.lock().unwrap() = masters;
    }

    /// The remembered masters as seeds: the URL's first seed's settings (credentials,
    /// TLS, database) at each master's address.
    fn masters_as_seeds(&self) -> Vec<ConnectionInfo> {
        let masters = self.masters.lock().unwrap().clone();
        let Some(first) = self.seeds.first() else { return Vec::new() };
        masters
            .into_iter()
            .filter_map(|(host, port)| {
                let addr = match first.addr() {
                    redis::ConnectionAddr::Tcp(..) => redis::ConnectionAddr::Tcp(host, port),
                    redis::ConnectionAddr::TcpTls { insecure, tls_params, .. } => {
                        redis::ConnectionAddr::TcpTls { host, port, insecure: *insecure, tls_params: tls_params.clone() }
                    }
                    _ => return None,
                };
                Some(first.clone().set_addr(addr))
            })
            .collect()
    }

    /// What the seeds' server supports: asked of the first seed that answers.
    pub async fn capabilities(&self) -> RedisResult<super::Capabilities> {
        let mut last = None;
        for seed in &self.seeds {
            match self.plain(seed).await {
                Ok(mut conn) => return super::Capabilities::learn(&mut conn).await,
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| std::io::Error::other("no cluster seed").into()))
    }

    /// A RESP2 pub/sub connection to the first seed that answers, for classic pub/sub
    /// without RESP3 (any node hears every node's PUBLISH).
    pub async fn classic_pubsub(&self) -> RedisResult<redis::aio::PubSub> {
        let mut last = None;
        for seed in &self.seeds {
            let attempt = async { redis::Client::open(seed.clone())?.get_async_pubsub().await };
            match tokio::time::timeout(self.connect_timeout, attempt).await {
                Ok(Ok(pubsub)) => return Ok(pubsub),
                Ok(Err(e)) => last = Some(e),
                Err(_) => last = Some(std::io::Error::new(std::io::ErrorKind::TimedOut, "timed out connecting").into()),
            }
        }
        Err(last.unwrap_or_else(|| std::io::Error::other("no cluster seed").into()))
    }

    async fn plain(&self, seed: &ConnectionInfo) -> RedisResult<redis::aio::MultiplexedConnection> {
        let config = redis::AsyncConnectionConfig::new()
            .set_connection_timeout(Some(self.connect_timeout))
            .set_response_timeout(Some(self.response_timeout));
        redis::Client::open(seed.clone())?.get_multiplexed_async_connection_with_config(&config).await
    }

    /// A subscriber connection and the pushes it receives (messages, subscription
    /// changes, and a `Disconnection` when a node's connection broke).
    pub async fn subscriber(&self) -> RedisResult<(ClusterConnection, mpsc::UnboundedReceiver<PushInfo>)> {
        let (tx, rx) = mpsc::unbounded_channel();
        let builder = self.builder().response_timeout(self.response_timeout).use_protocol(redis::ProtocolVersion::RESP3).push_sender(tx);
        Ok((Self::client(builder)?.get_async_connection().await?, rx))
    }
}

/// Which master serves each range of slots (CLUSTER SLOTS), sorted.
type SlotMap = Vec<(i64, i64, String)>;

/// How often the slot map is looked at: while the client holds something, when it
/// holds nothing (only to keep the last map recent), and after a hint (a node's
/// connection broke, a MOVED, a server-side SUNSUBSCRIBE) for how long at what pace:
/// a failover follows a node's failure by the cluster's node timeout, a few seconds.
const LOOK: Duration = Duration::from_secs(1);
const IDLE_LOOK: Duration = Duration::from_secs(10);
const HINTED_LOOK: Duration = Duration::from_millis(100);
const HINTED_FOR: Duration = Duration::from_secs(15);

/// Watches the slot map for as long as the future lives: a slot range served by
/// another master than at the last look is a failover noticed (or a migration: its
/// holds are checked the same way), and the command connection is made again so
/// that it routes by the new map at once. Looks when it starts, then every [`LOOK`]
/// while `busy` (the client holds something, else every [`IDLE_LOOK`]), every
/// [`HINTED_LOOK`] for [`HINTED_FOR`] after a hint.
pub(crate) async fn watch(
    conn: super::Conn,
    nodes: &Nodes,
    failovers: std::sync::Arc<super::failover::Failovers>,
    busy: impl Fn() -> bool,
) {
    let mut last: Option<SlotMap> = slot_map(&conn).await.ok();
    if let Some(map) = &last {
        nodes.saw_masters(map);
    }
    let mut hinted_until = tokio::time::Instant::now();
    loop {
        let pace = match () {
            _ if tokio::time::Instant::now() < hinted_until => HINTED_LOOK,
            _ if busy() => LOOK,
            _ => IDLE_LOOK,
        };
        tokio::select! {
            _ = failovers.hinted() => hinted_until = tokio::time::Instant::now() + HINTED_FOR,
            _ = tokio::time::sleep(pace) => {}
        }
        let Ok(map) = slot_map(&conn).await else { continue };
        nodes.saw_masters(&map);
        if let Some(before) = &last {
            if *before != map {
                let moved: Vec<String> = map
                    .iter()
                    .filter(|range| !before.contains(range))
                    .map(|(start, end, master)| format!("slots {start}-{end} now on {master}"))
                    .collect();
                conn.retire_now();
                failovers.notice(format!("the cluster's slot map changed: {}", moved.join(", ")));
            }
        }
        last = Some(map);
    }
}

async fn slot_map(conn: &super::Conn) -> RedisResult<SlotMap> {
    // Sent to any node: one that times out (stopped, about to be failed over) says
    // nothing of the connections to the others, and a connection made again then would
    // start from a map that still names it (waiting for it the connect timeout).
    let reply = conn.best_effort().request(redis::cmd("CLUSTER").arg("SLOTS")).await?;
    let redis::Value::Array(ranges) = reply else {
        return Err((redis::ErrorKind::UnexpectedReturnType, "CLUSTER SLOTS did not answer a list").into());
    };
    let mut map = SlotMap::new();
    for range in ranges {
        let redis::Value::Array(parts) = range else { continue };
        let (Some(redis::Value::Int(start)), Some(redis::Value::Int(end)), Some(redis::Value::Array(master))) =
            (parts.first(), parts.get(1), parts.get(2))
        else {
            continue;
        };
        let host = master.first().and_then(|h| redis::from_redis_value_ref::<String>(h).ok()).unwrap_or_default();
        let port = master.get(1).and_then(|p| redis::from_redis_value_ref::<i64>(p).ok()).unwrap_or_default();
        map.push((*start, *end, format!("{host}:{port}")));
    }
    map.sort();
    Ok(map)
}
