//! A master with N replicas behind 3 sentinels (quorum 2), on 127.0.0.1: the harness's
//! SentinelSet has one replica, and the replica-ack policies' counts (majority, all)
//! only differ from one's with two or more. Every process is killed on drop.

use std::collections::HashMap;
use std::time::Duration;

use ferrolock_harness::{eventually, RedisServer};
use redis::aio::MultiplexedConnection;

pub const MASTER: &str = "mymaster";

pub struct Replicated {
    /// The master first, then its replicas (roles as started; nothing here fails over).
    pub data: Vec<RedisServer>,
    pub sentinels: Vec<RedisServer>,
}

/// One command on a fresh connection with short timeouts (a stopped node must not hang a test).
pub async fn ask<T: redis::FromRedisValue>(port: u16, cmd: &redis::Cmd) -> Result<T, String> {
    let config = redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(Duration::from_secs(2)))
        .set_response_timeout(Some(Duration::from_secs(2)));
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}")).map_err(|e| e.to_string())?;
    let mut conn = client.get_multiplexed_async_connection_with_config(&config).await.map_err(|e| format!("{port}: {e}"))?;
    cmd.query_async(&mut conn).await.map_err(|e| format!("{port}: {e}"))
}

fn pairs(flat: &[String]) -> HashMap<&str, &str> {
    flat.chunks(2).filter_map(|kv| Some((kv.first()?.as_str(), kv.get(1)?.as_str()))).collect()
}

impl Replicated {
    /// Starts the master, `replicas` replicas and 3 sentinels; returns once every
    /// replica's link is up and every sentinel names the master, knows every replica
    /// in good shape and the two other sentinels.
    pub async fn start(replicas: usize) -> Replicated {
        let diskless = ["--repl-diskless-sync-delay", "0"];
        let master = RedisServer::start_with(&diskless);
        let port = master.port.to_string();
        let mut data = vec![master];
        for _ in 0..replicas {
            data.push(RedisServer::start_with(&["--replicaof", "127.0.0.1", &port, "--repl-diskless-sync-delay", "0"]));
        }
        let config = format!(
            "sentinel monitor {MASTER} 127.0.0.1 {port} 2\nsentinel down-after-milliseconds {MASTER} 1000\n\
             sentinel failover-timeout {MASTER} 5000\nsentinel parallel-syncs {MASTER} 2\n"
        );
        let mut set = Replicated { data, sentinels: Vec::new() };
        for _ in 0..3 {
            let sentinel = RedisServer::try_start_with_config(&config, &["--sentinel"]).unwrap();
            // INFO every second, hellos every half second (Redis 7.0+; older: slower, same result).
            let speed = redis::cmd("SENTINEL").arg("DEBUG").arg("info-period").arg(1000).arg("publish-period").arg(500).clone();
            let _ = ask::<redis::Value>(sentinel.port, &speed).await;
            set.sentinels.push(sentinel);
        }
        let replica_ports: Vec<u16> = set.data[1..].iter().map(|r| r.port).collect();
        let master_port = set.data[0].port;
        let sentinel_ports: Vec<u16> = set.sentinels.iter().map(|s| s.port).collect();
        eventually(Duration::from_secs(60), "the replicas linked and every sentinel settled", || {
            let (replica_ports, sentinel_ports) = (replica_ports.clone(), sentinel_ports.clone());
            async move { settled(master_port, &replica_ports, &sentinel_ports).await.is_ok() }
        })
        .await;
        set
    }

    /// `redis+sentinel://` with the sentinels at `order` (indexes into `sentinels`).
    pub fn url_of(&self, order: &[usize]) -> String {
        let hosts: Vec<String> = order.iter().map(|i| format!("127.0.0.1:{}", self.sentinels[*i].port)).collect();
        format!("redis+sentinel://{}/{MASTER}", hosts.join(","))
    }

    pub fn url(&self) -> String {
        self.url_of(&[0, 1, 2])
    }

    pub fn master(&self) -> &RedisServer {
        &self.data[0]
    }

    pub async fn raw_master(&self) -> MultiplexedConnection {
        self.data[0].raw().await
    }

    /// Waits until every sentinel flags the replica on `port` down (s_down): it no
    /// longer counts among the master's healthy replicas.
    pub async fn wait_flagged_down(&self, port: u16) {
        let sentinels: Vec<u16> = self.sentinels.iter().map(|s| s.port).collect();
        eventually(Duration::from_secs(30), "every sentinel to flag the replica down", || {
            let sentinels = sentinels.clone();
            async move {
                for s in sentinels {
                    let cmd = redis::cmd("SENTINEL").arg("REPLICAS").arg(MASTER).clone();
                    let Ok(replicas) = ask::<Vec<Vec<String>>>(s, &cmd).await else { return false };
                    let down = replicas.iter().map(|r| pairs(r)).any(|r| {
                        r.get("port") == Some(&port.to_string().as_str()) && r.get("flags").is_some_and(|f| f.contains("s_down"))
                    });
                    if !down {
                        return false;
                    }
                }
                true
            }
        })
        .await;
    }
}

async fn settled(master: u16, replicas: &[u16], sentinels: &[u16]) -> Result<(), String> {
    for r in replicas {
        let info: String = ask(*r, redis::cmd("INFO").arg("replication")).await?;
        if !info.contains("master_link_status:up") {
            return Err(format!("replica {r} not linked"));
        }
    }
    for s in sentinels {
        let cmd = redis::cmd("SENTINEL").arg("GET-MASTER-ADDR-BY-NAME").arg(MASTER).clone();
        let (_, port): (String, u16) = ask(*s, &cmd).await?;
        if port != master {
            return Err(format!("sentinel {s} names {port}"));
        }
        let cmd = redis::cmd("SENTINEL").arg("REPLICAS").arg(MASTER).clone();
        let listed: Vec<Vec<String>> = ask(*s, &cmd).await?;
        let good = listed
            .iter()
            .map(|r| pairs(r))
            .filter(|r| r.get("master-link-status") == Some(&"ok") && r.get("flags").is_some_and(|f| !f.contains("down")))
            .count();
        if good != replicas.len() {
            return Err(format!("sentinel {s} sees {good} good replicas"));
        }
        let cmd = redis::cmd("SENTINEL").arg("SENTINELS").arg(MASTER).clone();
        let others: Vec<Vec<String>> = ask(*s, &cmd).await?;
        if others.len() != sentinels.len() - 1 {
            return Err(format!("sentinel {s} knows {} others", others.len()));
        }
    }
    Ok(())
}
