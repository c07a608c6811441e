//! A cluster's masters one by one: SCAN walks one node's keys only, so listing the
//! names of a cluster asks each master (as the connection's slot map knows them).

use redis::cluster_routing::{MultipleNodeRoutingInfo, RoutingInfo, SingleNodeRoutingInfo};
use redis::{Cmd, RedisResult, Value};

use super::{Conn, Link};

impl Conn {
    /// The address (`host:port`) of every master of a cluster; empty off a cluster,
    /// where the one server (or Sentinel's master) answers [`Conn::request`].
    pub async fn masters(&self) -> RedisResult<Vec<String>> {
        let (link, epoch) = self.current().await?;
        let Link::Cluster(mut conn) = link else { return Ok(Vec::new()) };
        // Without a response policy the cluster connection answers node by node.
        let everyone = RoutingInfo::MultiNode((MultipleNodeRoutingInfo::AllMasters, None));
        let reply = tokio::time::timeout(self.timeout, conn.route_command(redis::cmd("PING"), everyone)).await;
        let Value::Map(nodes) = self.settle(reply, epoch)? else {
            return Err((redis::ErrorKind::UnexpectedReturnType, "PING to every master did not answer per node").into());
        };
        Ok(nodes
            .into_iter()
            .filter_map(|(address, _)| match address {
                Value::BulkString(bytes) => String::from_utf8(bytes).ok(),
                Value::SimpleString(text) => Some(text),
                _ => None,
            })
            .collect())
    }

    /// `cmd` on the cluster node at `address` (as [`Conn::masters`] gives it); off a
    /// cluster, on the one server.
    pub async fn request_at(&self, cmd: Cmd, address: &str) -> RedisResult<Value> {
        let (link, epoch) = self.current().await?;
        let Link::Cluster(mut conn) = link else { return self.request(&cmd).await };
        let Some((host, port)) = address.rsplit_once(':').and_then(|(h, p)| Some((h.to_string(), p.parse().ok()?))) else {
            return Err((redis::ErrorKind::Client, "a cluster node's address is host:port").into());
        };
        let route = RoutingInfo::SingleNode(SingleNodeRoutingInfo::ByAddress { host, port });
        let reply = tokio::time::timeout(self.timeout, conn.route_command(cmd, route)).await;
        self.settle(reply, epoch)
    }
}
