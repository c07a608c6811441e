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
        let builder = self.builder().use_protocol(redis::ProtocolVersion::RESP3).push_sender(tx);
        Ok((Self::client(builder)?.get_async_connection().await?, rx))
    }
}
