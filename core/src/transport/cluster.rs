//! Redis Cluster, on redis-rs's cluster connection: it routes each command to the
//! slot's master and follows MOVED/ASK/TRYAGAIN itself. Messages use sharded pub/sub
//! (SSUBSCRIBE/SPUBLISH, as Redisson in cluster mode), which needs RESP3 and a push
//! channel; the connection re-subscribes a node it reconnects to.

use std::time::Duration;

use redis::cluster::{ClusterClient, ClusterClientBuilder};
use redis::cluster_async::ClusterConnection;
use redis::{ConnectionInfo, PushInfo, RedisResult};
use tokio::sync::mpsc;

/// The seed nodes of a cluster and how to talk to them.
pub(crate) struct Nodes {
    seeds: Vec<ConnectionInfo>,
    connect_timeout: Duration,
    response_timeout: Duration,
    pub describe: String,
}

impl Nodes {
    pub fn new(seeds: Vec<ConnectionInfo>, connect_timeout: Duration, response_timeout: Duration) -> Nodes {
        let describe =
            format!("cluster via {}", seeds.iter().map(|i| super::describe(i.addr())).collect::<Vec<_>>().join(","));
        Nodes { seeds, connect_timeout, response_timeout, describe }
    }

    fn builder(&self) -> ClusterClientBuilder {
        ClusterClientBuilder::new(self.seeds.clone())
            .connection_timeout(self.connect_timeout)
            .response_timeout(self.response_timeout)
    }

    fn client(builder: ClusterClientBuilder) -> RedisResult<ClusterClient> {
        builder.build()
    }

    /// A command connection (connects to the nodes of the current slot map).
    pub async fn connection(&self) -> RedisResult<ClusterConnection> {
        Self::client(self.builder())?.get_async_connection().await
    }

    /// A subscriber connection and the pushes it receives (messages, subscription
    /// changes, and a `Disconnection` when a node's connection broke).
    pub async fn subscriber(&self) -> RedisResult<(ClusterConnection, mpsc::UnboundedReceiver<PushInfo>)> {
        let (tx, rx) = mpsc::unbounded_channel();
        let builder = self.builder().use_protocol(redis::ProtocolVersion::RESP3).push_sender(tx);
        Ok((Self::client(builder)?.get_async_connection().await?, rx))
    }
}
