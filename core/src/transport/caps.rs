//! What the server supports, learnt from the server once at connect (one pipelined
//! round-trip), never assumed from the topology: its version and whether it is
//! Valkey, sharded pub/sub (SSUBSCRIBE/SPUBLISH: Redis 7.0+), WAITAOF (7.2+), RESP3
//! (HELLO: 6.0+, unless rename-command took it away; an ACL cannot refuse it), and
//! whether it may evict lock keys (maxmemory with a policy other than noeviction).
//! Commands an ACL refuses fall back to what the version tells, then to what
//! ferrolock did before it asked.

use redis::aio::ConnectionLike;
use redis::{RedisResult, Value};

use crate::error::{Error, ErrorKind};

/// What one server supports. Read with `Transport::capabilities`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Capabilities {
    /// `Redis 7.2.6`, `Valkey 8.0.1`, or `Redis (version unknown)` when INFO is refused.
    pub server: String,
    /// (major, minor, patch), when INFO told.
    pub version: Option<(u32, u32, u32)>,
    /// Valkey rather than Redis.
    pub valkey: bool,
    /// SSUBSCRIBE/SPUBLISH (a Cluster's lock messages, as Redisson sends them from 7.0).
    pub sharded_pubsub: bool,
    /// WAITAOF (7.2+).
    pub waitaof: bool,
    /// HELLO answered: RESP3 connections (pushes) are possible.
    pub resp3: bool,
    /// The eviction policy, when the server may evict lock keys (maxmemory set and a
    /// policy other than `noeviction`: every lock key has a TTL, so `volatile-*`
    /// policies evict them as surely as `allkeys-*`). `None`: it cannot, or INFO was refused.
    pub eviction_policy: Option<String>,
    /// `maxmemory` in bytes (0: no limit).
    pub maxmemory: u64,
}

impl Capabilities {
    /// Asks the server on `conn` (a plain connection to one node).
    pub async fn learn(conn: &mut impl ConnectionLike) -> RedisResult<Capabilities> {
        let mut pipe = redis::pipe();
        pipe.cmd("INFO").arg("server");
        pipe.cmd("INFO").arg("memory");
        pipe.cmd("COMMAND").arg("INFO").arg("SPUBLISH").arg("WAITAOF");
        // HELLO 2 keeps this connection's protocol: it only asks whether HELLO answers.
        pipe.cmd("HELLO").arg(2);
        let replies: Vec<RedisResult<Value>> = pipe.ignore_errors().query_async(conn).await?;
        let mut replies = replies.into_iter();
        let mut next = || replies.next().unwrap_or(Ok(Value::Nil));
        let (server_info, memory, commands, hello) = (next(), next(), next(), next());
        // An I/O failure in the middle fails the whole probe (the connection is gone).
        for reply in [&server_info, &memory, &commands, &hello] {
            if let Err(e) = reply {
                if crate::error::Error::is_ambiguous(e) {
                    return Err(e.clone());
                }
            }
        }
        Ok(Capabilities::from_replies(text(&server_info), text(&memory), commands.ok(), hello.is_ok()))
    }

    fn from_replies(server_info: Option<String>, memory: Option<String>, commands: Option<Value>, resp3: bool) -> Capabilities {
        let server_info = server_info.unwrap_or_default();
        let field = |text: &str, name: &str| {
            text.lines().find_map(|l| l.strip_prefix(name).and_then(|v| v.strip_prefix(':'))).map(|v| v.trim().to_string())
        };
        let valkey_version = field(&server_info, "valkey_version");
        let valkey = valkey_version.is_some() || field(&server_info, "server_name").as_deref() == Some("valkey");
        let version_text = valkey_version.or_else(|| field(&server_info, "redis_version"));
        let version = version_text.as_deref().and_then(parse_version);
        let product = if valkey { "Valkey" } else { "Redis" };
        let server = match &version_text {
            Some(v) => format!("{product} {v}"),
            None => format!("{product} (version unknown)"),
        };
        // COMMAND INFO answers nil for a command the server does not have; refused
        // (an ACL), the version tells; unknown too, what ferrolock did before asking.
        let known: Option<Vec<bool>> = match commands {
            Some(Value::Array(entries)) => Some(entries.iter().map(|e| !matches!(e, Value::Nil)).collect()),
            _ => None,
        };
        let has = |i: usize, since: (u32, u32, u32), otherwise: bool| {
            known.as_ref().and_then(|k| k.get(i).copied()).or_else(|| version.map(|v| v >= since)).unwrap_or(otherwise)
        };
        let memory = memory.unwrap_or_default();
        let maxmemory = field(&memory, "maxmemory").and_then(|v| v.parse().ok()).unwrap_or(0);
        let policy = field(&memory, "maxmemory_policy");
        let eviction_policy = policy.filter(|p| maxmemory > 0 && p != "noeviction");
        Capabilities {
            server,
            version,
            valkey,
            sharded_pubsub: has(0, (7, 0, 0), true),
            waitaof: has(1, (7, 2, 0), false),
            resp3,
            eviction_policy,
            maxmemory,
        }
    }

    /// The error for a command this server lacks (or has disabled): names the
    /// server, what `need`s the command, and what to do (`advice`).
    pub fn lacks(&self, need: &str, command: &str, advice: &str) -> Error {
        Error::new(ErrorKind::InvalidArgument, format!("{need} needs {command}, which {} does not answer; {advice}", self.server))
    }

    /// Logs what the server at `at` supports (debug), and once for the client being
    /// connected, that it may evict held locks, naming the policy and what to set.
    pub fn log(&self, at: &str) {
        tracing::debug!(
            server = %at,
            version = ?self.version,
            valkey = self.valkey,
            sharded_pubsub = self.sharded_pubsub,
            waitaof = self.waitaof,
            resp3 = self.resp3,
            "{} at {at}",
            self.server
        );
        if let Some(policy) = &self.eviction_policy {
            tracing::warn!(
                server = %at,
                "{} at {at} may evict lock keys: maxmemory-policy is {policy} with maxmemory {} bytes, and every lock key \
                 has a TTL, so under memory pressure a held lock can vanish and a second holder get in; set \
                 maxmemory-policy noeviction (CONFIG SET maxmemory-policy noeviction, and in the server's configuration)",
                self.server,
                self.maxmemory
            );
        }
    }
}

fn text(reply: &RedisResult<Value>) -> Option<String> {
    match reply {
        Ok(Value::BulkString(bytes)) => Some(String::from_utf8_lossy(bytes).into_owned()),
        Ok(Value::VerbatimString { text, .. }) => Some(text.clone()),
        Ok(Value::SimpleString(text)) => Some(text.clone()),
        _ => None,
    }
}

fn parse_version(text: &str) -> Option<(u32, u32, u32)> {
    let mut parts = text.split('.').map(|p| p.trim().parse::<u32>());
    Some((parts.next()?.ok()?, parts.next()?.ok()?, parts.next().and_then(Result::ok).unwrap_or(0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(server: &str, memory: &str, commands: Option<Value>, resp3: bool) -> Capabilities {
        Capabilities::from_replies(Some(server.into()), Some(memory.into()), commands, resp3)
    }

    /// INFO as Redis 6.2.16 and Valkey 8.0.1 write it; COMMAND INFO refused (an ACL):
    /// the version tells.
    #[test]
    fn the_version_tells_what_command_info_would() {
        let old = caps("# Server\r\nredis_version:6.2.16\r\nredis_mode:cluster\r\n", "maxmemory:0\r\nmaxmemory_policy:noeviction\r\n", None, true);
        assert_eq!((old.server.as_str(), old.sharded_pubsub, old.waitaof, old.valkey), ("Redis 6.2.16", false, false, false));
        let valkey = caps("redis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:8.0.1\r\n", "", None, false);
        assert_eq!((valkey.server.as_str(), valkey.sharded_pubsub, valkey.waitaof, valkey.resp3), ("Valkey 8.0.1", true, true, false));
    }

    #[test]
    fn command_info_answers_nil_for_a_missing_command() {
        let replies = Value::Array(vec![Value::Array(vec![Value::BulkString(b"spublish".to_vec())]), Value::Nil]);
        let c = caps("redis_version:7.0.15\r\n", "", Some(replies), true);
        assert!(c.sharded_pubsub && !c.waitaof);
    }

    /// Any policy but noeviction may drop a lock key, once maxmemory is set.
    #[test]
    fn eviction_is_a_risk_with_maxmemory_and_any_policy_but_noeviction() {
        let with = |memory: &str| caps("redis_version:7.2.6\r\n", memory, None, true).eviction_policy;
        assert_eq!(with("maxmemory:104857600\r\nmaxmemory_policy:volatile-lru\r\n").as_deref(), Some("volatile-lru"));
        assert_eq!(with("maxmemory:104857600\r\nmaxmemory_policy:allkeys-lfu\r\n").as_deref(), Some("allkeys-lfu"));
        assert_eq!(with("maxmemory:104857600\r\nmaxmemory_policy:noeviction\r\n"), None);
        assert_eq!(with("maxmemory:0\r\nmaxmemory_policy:allkeys-lru\r\n"), None);
    }
}
