//! Helpers shared by the Sentinel and Cluster topologies: short-lived raw connections
//! that cannot hang on a stopped node, polling for a state with a message naming it,
//! and parsing of INFO / ROLE replies.

use std::fmt::Display;
use std::future::Future;
use std::time::{Duration, Instant};

use redis::aio::MultiplexedConnection;

/// How often a state is re-checked while waiting for it.
pub(crate) const POLL: Duration = Duration::from_millis(20);

/// Generous limit for a topology to reach a state: the machine may be busy.
pub(crate) const SETTLE: Duration = Duration::from_secs(60);

/// Replies slower than this are errors, so a SIGSTOPped node cannot hang a harness call.
/// Long enough for a MIGRATE or a full sync on a loaded machine.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(5);

/// `redis://[:password@]127.0.0.1:port`.
pub(crate) fn node_url(port: u16, password: Option<&str>) -> String {
    match password {
        Some(pw) => format!("redis://:{}@127.0.0.1:{port}", url_encode(pw)),
        None => format!("redis://127.0.0.1:{port}"),
    }
}

/// Percent-encodes everything but RFC 3986 unreserved characters (for passwords in URLs).
pub(crate) fn url_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A raw (non-cluster) connection with connect and response timeouts.
pub async fn connect(port: u16, password: Option<&str>) -> Result<MultiplexedConnection, String> {
    let client = redis::Client::open(node_url(port, password)).map_err(|e| format!("127.0.0.1:{port}: bad URL: {e}"))?;
    let config = redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(RESPONSE_TIMEOUT))
        .set_response_timeout(Some(RESPONSE_TIMEOUT));
    client
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .map_err(|e| format!("cannot connect to 127.0.0.1:{port}: {e}"))
}

/// Runs one command on a fresh connection (polling must survive nodes that restart or
/// swap roles, so no connection is kept between checks).
pub async fn query<T: redis::FromRedisValue>(port: u16, password: Option<&str>, cmd: &redis::Cmd) -> Result<T, String> {
    let mut conn = connect(port, password).await?;
    cmd.query_async(&mut conn).await.map_err(|e| format!("127.0.0.1:{port}: {e}"))
}

/// Re-runs `check` every [`POLL`] until it returns `Ok`; after `limit` panics naming the
/// awaited state (`what`) and the last state seen (the last `Err`).
pub(crate) async fn wait_until<T, F, Fut>(limit: Duration, what: impl Display, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    let started = Instant::now();
    loop {
        match check().await {
            Ok(value) => return value,
            Err(seen) if started.elapsed() >= limit => {
                panic!("timed out after {limit:?} waiting for {what}; last seen: {seen}")
            }
            Err(_) => tokio::time::sleep(POLL).await,
        }
    }
}

/// The value of `field:` in an INFO reply.
pub fn info_field<'a>(info: &'a str, field: &str) -> Option<&'a str> {
    info.lines().find_map(|l| l.strip_prefix(field)?.strip_prefix(':')).map(str::trim)
}

/// "master", "slave" or "sentinel", from ROLE.
pub async fn role(port: u16, password: Option<&str>) -> Result<String, String> {
    let reply: redis::Value = query(port, password, &redis::cmd("ROLE")).await?;
    match reply {
        redis::Value::Array(items) => match items.first() {
            Some(redis::Value::BulkString(b)) => Ok(String::from_utf8_lossy(b).into_owned()),
            Some(redis::Value::SimpleString(s)) => Ok(s.clone()),
            other => Err(format!("127.0.0.1:{port}: odd ROLE reply {other:?}")),
        },
        other => Err(format!("127.0.0.1:{port}: odd ROLE reply {other:?}")),
    }
}

/// Ok when the node on `port` is a replica of `master` with its link up.
pub(crate) async fn replica_link_up(port: u16, master: u16, password: Option<&str>) -> Result<(), String> {
    let info: String = query(port, password, redis::cmd("INFO").arg("replication")).await?;
    let role = info_field(&info, "role").unwrap_or("?");
    let master_port = info_field(&info, "master_port").unwrap_or("?");
    let link = info_field(&info, "master_link_status").unwrap_or("?");
    if role == "slave" && master_port == master.to_string() && link == "up" {
        Ok(())
    } else {
        Err(format!("127.0.0.1:{port} has role:{role} master_port:{master_port} master_link_status:{link} (want a replica of {master} with link up)"))
    }
}

/// A bulk or simple string reply item as text.
pub(crate) fn value_text(v: &redis::Value) -> Option<String> {
    match v {
        redis::Value::BulkString(b) => Some(String::from_utf8_lossy(b).into_owned()),
        redis::Value::SimpleString(s) => Some(s.clone()),
        redis::Value::Int(i) => Some(i.to_string()),
        _ => None,
    }
}
