//! Making the command connection: connect, name it, ask which scripts the server
//! lacks, and behind Sentinel confirm that the node named is the master.

use std::sync::Arc;
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, RedisResult, Value};

use super::super::replicas::{self, Facts};
use super::super::Target;
use super::{loading, Link};

/// Connects and asks which scripts the server lacks (loading none: loading.rs).
/// Under Sentinel, also confirms the node is the master and learns its replicas.
pub(super) async fn connect(target: Arc<Target>, name: Arc<str>, timeout: Duration) -> RedisResult<(Link, Option<Facts>, u64)> {
    let config = AsyncConnectionConfig::new().set_connection_timeout(Some(timeout)).set_response_timeout(None);
    let attempt = async {
        let (mut link, facts) = match &*target {
            Target::Single(client) => (Link::Node(client.get_multiplexed_async_connection_with_config(&config).await?), None),
            Target::Sentinel(master) => {
                let found = master.locate().await?;
                let mut conn = found.client.get_multiplexed_async_connection_with_config(&config).await?;
                let facts = confirm_master(&mut conn, &found).await?;
                master.landed(&found.address, &facts.1);
                (Link::Node(conn), Some(facts.0))
            }
            Target::Cluster(nodes) => (Link::Cluster(nodes.connection().await?), None),
        };
        super::super::set_name(&mut link, &name).await?;
        let missing = loading::missing_on(&mut link).await?;
        Ok((link, facts, missing))
    };
    match tokio::time::timeout(timeout * 2, attempt).await {
        Ok(result) => result,
        Err(_) => Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "timed out connecting").into()),
    }
}

/// ROLE master on the node the sentinels named (a refusal otherwise: nothing was sent),
/// with what the acknowledgement needs of it and its run id.
async fn confirm_master(conn: &mut MultiplexedConnection, found: &super::super::sentinel::Located) -> RedisResult<(Facts, String)> {
    let (role, info): (Value, String) = redis::pipe().cmd("ROLE").cmd("INFO").arg("server").query_async(conn).await?;
    let Some(connected) = replicas::connected_of_role(role)? else {
        let why = format!("the sentinels name {} as the master, but it is not one (ROLE); retrying", found.address);
        return Err(std::io::Error::new(std::io::ErrorKind::ConnectionRefused, why).into());
    };
    let version_text = replicas::info_field(&info, "redis_version").unwrap_or("").to_string();
    let facts = Facts {
        known: found.known_replicas,
        connected,
        version: replicas::parse_version(&version_text),
        version_text,
        address: found.address.clone(),
        stale: false,
        looked: std::time::Instant::now(),
    };
    Ok((facts, replicas::info_field(&info, "run_id").unwrap_or("").to_string()))
}
