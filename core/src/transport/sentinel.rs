//! Redis Sentinel: the data connections go to the master the sentinels name, asked
//! again on every (re)connect, so a client follows a failover by itself (redis-rs's
//! sentinel client answers one question; following is ours). Sentinel disconnects
//! the clients of a master it demotes, and a demoted master's READONLY reply retires
//! the connection too (conn.rs): either way the next connection asks again.

use redis::sentinel::{Sentinel, SentinelNodeConnectionInfo};
use redis::{ConnectionAddr, ConnectionInfo, RedisResult, TlsMode};
use tokio::sync::Mutex;

use crate::config::SentinelAuth;
use crate::error::{Error, Result};

/// The master of one name, as the sentinels say.
pub(crate) struct Master {
    sentinels: Mutex<Sentinel>,
    name: String,
    node: SentinelNodeConnectionInfo,
    pub describe: String,
}

impl Master {
    pub fn new(sentinels: Vec<String>, name: String, data: &ConnectionInfo, auth: &SentinelAuth) -> Result<Master> {
        let infos = sentinels
            .iter()
            .map(|url| {
                let info = super::url::single(url)?;
                let mut settings = info.redis_settings().clone();
                if let Some(user) = &auth.username {
                    settings = settings.set_username(user);
                }
                if let Some(password) = &auth.password {
                    settings = settings.set_password(password);
                }
                Ok(info.set_redis_settings(settings))
            })
            .collect::<Result<Vec<_>>>()?;
        let describe = format!(
            "master \"{name}\" via sentinels {}",
            infos.iter().map(|i| super::describe(i.addr())).collect::<Vec<_>>().join(",")
        );
        let mut node = SentinelNodeConnectionInfo::default().set_redis_connection_info(data.redis_settings().clone());
        if let ConnectionAddr::TcpTls { insecure, .. } = data.addr() {
            node = node.set_tls_mode(if *insecure { TlsMode::Insecure } else { TlsMode::Secure });
        }
        let sentinels = Sentinel::build(infos)
            .map_err(|e| Error::invalid(format!("invalid sentinel addresses ({:?})", e.kind())))?;
        Ok(Master { sentinels: Mutex::new(sentinels), name, node, describe })
    }

    /// A client for the current master: the first sentinel that answers names it,
    /// and the node confirms it is a master (ROLE).
    pub async fn client(&self) -> RedisResult<redis::Client> {
        self.sentinels.lock().await.async_master_for(&self.name, Some(&self.node)).await
    }
}

/// `connected_slaves` of INFO replication: the replicas a WAIT can ask for.
pub(crate) async fn connected_replicas(conn: &mut impl redis::aio::ConnectionLike) -> RedisResult<u32> {
    let info: String = redis::cmd("INFO").arg("replication").query_async(conn).await?;
    Ok(info
        .lines()
        .find_map(|line| line.strip_prefix("connected_slaves:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0))
}
