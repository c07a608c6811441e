//! A write acknowledged by the master's replicas (DESIGN §3, "Topologies"): the call,
//! `WAIT <needed> <timeout>` (or `WAITAOF 0 <needed> <timeout>`) and `ROLE` in one
//! pipeline on one node (the script's master: a cluster's slot master, since WAIT
//! counts only what its own connection wrote, and the cluster connection would send a
//! lone WAIT to every master). The count needed comes from the replicas the master
//! should have: those connected now (the ROLE of each call) or, if more, those its
//! sentinels or the cluster's nodes know as healthy, looked at again when nothing is
//! known yet, when too few are connected to meet the policy, and after a WAIT fell
//! short. A master with no replica never meets a policy, and a call that cannot meet
//! it is not sent at all (a WAIT that must time out would hold up the connection).

use std::time::Duration;

use redis::cluster_routing::{Route, SingleNodeRoutingInfo, SlotAddr};
use redis::{Cmd, Pipeline, RedisError, RedisResult, Script, Value};

use super::{replicas, Conn, Facts, Link, Target};
use crate::ack::{ReplicaAck, ReplicaShortfall};
use crate::config::Config;

/// What became of an acknowledged call.
pub(crate) enum Acked {
    /// Not sent: the master cannot meet the policy (no replica, or too few connected).
    Refused(ReplicaShortfall),
    /// Not sent: `replica_ack_aof` and the master's server (version, address) lacks WAITAOF.
    NoWaitAof { version: String, address: String },
    /// Sent: the call's reply (maybe an error reply) and whether the policy was met;
    /// when it was not, whatever the call did is the caller's to undo.
    Sent(Value, Result<(), Unconfirmed>),
}

/// Why a call that ran was not confirmed.
pub(crate) enum Unconfirmed {
    Short(ReplicaShortfall),
    /// The WAIT itself failed (an ACL refusing it, say).
    Failed(RedisError),
}

impl Conn {
    /// Sends `call` (a write on `key`'s master: `script`'s EVALSHA, loaded after a
    /// NOSCRIPT) with the replica acknowledgement of `config`, whose policy is not off.
    pub async fn request_acked(&self, call: Cmd, script: Option<&Script>, key: &[u8], config: &Config) -> RedisResult<Acked> {
        let policy = config.replica_ack;
        let (link, epoch) = self.current().await?;
        let slot = matches!(link, Link::Cluster(_)).then(|| crate::names::slot(key));
        let mut facts = match self.inner.known.get(slot) {
            Some(facts) if !facts.outdated() => facts,
            _ => self.look(&link, epoch, slot).await?,
        };
        let short = |facts: &Facts| facts.replicas() == 0 || facts.connected < needed(policy, facts.replicas());
        if short(&facts) && facts.looked.elapsed() >= Facts::FRESH {
            facts = self.look(&link, epoch, slot).await?;
        }
        if config.replica_ack_aof && facts.has_waitaof() == Some(false) {
            return Ok(Acked::NoWaitAof { version: facts.version_text, address: facts.address });
        }
        let shortfall = |acknowledged, replicas| ReplicaShortfall {
            acknowledged,
            replicas,
            needed: needed(policy, replicas),
            policy,
            aof: config.replica_ack_aof,
        };
        if short(&facts) {
            self.inner.known.update(slot, facts.connected, true);
            return Ok(Acked::Refused(shortfall(0, facts.replicas())));
        }
        let asked = needed(policy, facts.replicas());
        let wait_ms = config.replica_ack_timeout.as_millis() as u64;
        let mut pipe = redis::pipe();
        pipe.add_command(call);
        if config.replica_ack_aof {
            pipe.cmd("WAITAOF").arg(0).arg(asked).arg(wait_ms);
        } else {
            pipe.cmd("WAIT").arg(asked).arg(wait_ms);
        }
        pipe.cmd("ROLE");
        let timeout = self.timeout + config.replica_ack_timeout;
        let mut replies = self.send_to_master(&pipe, slot, timeout).await?;
        // Neither refusal ran the call, and they come in any order, more than once (the
        // slot's new master, or a master restarted after the load, lacks the script).
        for _ in 0..crate::scripts::NOSCRIPT_RELOADS {
            let Some(Value::ServerError(e)) = replies.first() else { break };
            match (e.code(), script) {
                ("NOSCRIPT", Some(script)) => {
                    script.load_async(&mut self.clone()).await?;
                }
                ("MOVED" | "ASK", _) if slot.is_some() => {
                    // The slot has another master: a failover or a migration. The cluster
                    // connection learns where from a MOVED to a command of its own routing.
                    self.inner.failovers.hint();
                    let _ = self.request(redis::cmd("EXISTS").arg(key)).await;
                }
                _ => break,
            }
            replies = self.send_to_master(&pipe, slot, timeout).await?;
        }
        let [reply, wait, role]: [Value; 3] = replies
            .try_into()
            .map_err(|_| RedisError::from((redis::ErrorKind::UnexpectedReturnType, "an acknowledged call answered short")))?;
        let acknowledged = match wait.extract_error() {
            Ok(Value::Int(n)) => n,
            Ok(Value::Array(counts)) => match counts.get(1) {
                Some(Value::Int(n)) => *n,
                _ => 0,
            },
            Ok(_) => 0,
            Err(e) => return Ok(Acked::Sent(reply, Err(Unconfirmed::Failed(e)))),
        };
        let connected = replicas::connected_of_role(role).ok().flatten().unwrap_or(facts.connected);
        let replicas = facts.replicas().max(connected);
        let met = acknowledged >= i64::from(needed(policy, replicas));
        self.inner.known.update(slot, connected, !met);
        let outcome = if met { Ok(()) } else { Err(Unconfirmed::Short(shortfall(acknowledged.max(0) as u32, replicas))) };
        Ok(Acked::Sent(reply, outcome))
    }

    /// Looks at the master of `slot` again (ROLE and version there, the replicas its
    /// sentinels or the cluster's nodes know) and keeps what it found.
    async fn look(&self, link: &Link, epoch: u64, slot: Option<u16>) -> RedisResult<Facts> {
        let mut pipe = redis::pipe();
        pipe.cmd("ROLE").cmd("INFO").arg("server");
        if slot.is_some() {
            pipe.cmd("CLUSTER").arg("NODES");
        }
        let facts = match (&*self.inner.target, link) {
            (Target::Sentinel(master), Link::Node(_)) => {
                let (replies, located) = futures_util::future::join(self.send_to_master(&pipe, None, self.timeout), master.locate()).await;
                let (replies, located) = (replies?, located?);
                let previous = self.inner.known.get(None).map(|f| f.address).unwrap_or_default();
                if !previous.is_empty() && located.address != previous {
                    self.retire(epoch);
                    let why = format!("the sentinels now name {} as the master, not {previous}; reconnecting", located.address);
                    return Err(std::io::Error::new(std::io::ErrorKind::ConnectionRefused, why).into());
                }
                facts_of(replies, located.known_replicas, located.address)?
            }
            (Target::Cluster(_), Link::Cluster(_)) => {
                let replies = self.send_to_master(&pipe, slot, self.timeout).await?;
                let known = match replies.get(2) {
                    Some(Value::BulkString(text)) => replicas::replicas_in_cluster_nodes(&String::from_utf8_lossy(text)),
                    Some(Value::VerbatimString { text, .. }) => replicas::replicas_in_cluster_nodes(text),
                    _ => 0,
                };
                facts_of(replies, known, format!("the master of cluster slot {}", slot.unwrap_or_default()))?
            }
            _ => return Err((redis::ErrorKind::Client, "replica acknowledgement off Sentinel and Cluster").into()),
        };
        let Some(facts) = facts else {
            self.retire(epoch);
            return Err(std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "the node is no longer a master; reconnecting").into());
        };
        self.inner.known.set(slot, facts.clone());
        Ok(facts)
    }

    /// A pipeline on the master of `slot` (the one server off a cluster), raw replies.
    async fn send_to_master(&self, pipe: &Pipeline, slot: Option<u16>, timeout: Duration) -> RedisResult<Vec<Value>> {
        let (link, epoch) = self.current().await?;
        let count = pipe.cmd_iter().count();
        let reply = match (link, slot) {
            (Link::Cluster(mut conn), Some(slot)) => {
                let route = SingleNodeRoutingInfo::SpecificNode(Route::new(slot, SlotAddr::Master));
                tokio::time::timeout(timeout, conn.route_pipeline(pipe.clone(), 0, count, route)).await
            }
            (mut link, _) => tokio::time::timeout(timeout, redis::aio::ConnectionLike::req_packed_commands(&mut link, pipe, 0, count)).await,
        };
        self.settle(reply, epoch)
    }
}

fn needed(policy: ReplicaAck, replicas: u32) -> u32 {
    policy.needed(replicas).unwrap_or(0)
}

/// Facts from `[ROLE, INFO server, ...]`; `None` when the node is not a master.
fn facts_of(replies: Vec<Value>, known: u32, address: String) -> RedisResult<Option<Facts>> {
    let mut replies = replies.into_iter();
    let role = replies.next().unwrap_or(Value::Nil).extract_error()?;
    let info: String = redis::from_redis_value(replies.next().unwrap_or(Value::Nil).extract_error()?)?;
    let Some(connected) = replicas::connected_of_role(role)? else { return Ok(None) };
    let version_text = replicas::info_field(&info, "redis_version").unwrap_or("").to_string();
    let version = replicas::parse_version(&version_text);
    Ok(Some(Facts { known, connected, version, version_text, address, stale: false, looked: std::time::Instant::now() }))
}
