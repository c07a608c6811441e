//! Reading Redisson's keys straight from a one-server connection: the helper keys
//! that tell the kinds apart, and their names (as core's names.rs writes them).

use super::*;

pub(super) async fn probe_connection(target: &Target) -> ferrolock::Result<Option<MultiplexedConnection>> {
    if !reads_keys(target) {
        return Ok(None);
    }
    let context = "connecting to read the keys";
    let client = redis::Client::open(target.url.as_str())
        .map_err(|e| Error::new(ErrorKind::InvalidArgument, format!("invalid Redis URL ({:?})", e.kind())))?;
    let connecting = client.get_multiplexed_async_connection();
    match tokio::time::timeout(Duration::from_secs(5), connecting).await {
        Ok(Ok(conn)) => Ok(Some(conn)),
        Ok(Err(e)) => Err(redis_error(&e, context)),
        Err(_) => Err(Error::new(ErrorKind::Connection, format!("{context}: timed out"))),
    }
}

pub(super) async fn query<T: redis::FromRedisValue>(conn: &mut MultiplexedConnection, cmd: &redis::Cmd, context: &str) -> ferrolock::Result<T> {
    cmd.query_async(conn).await.map_err(|e| redis_error(&e, context))
}

/// A redis-rs error as core would classify it, for the exit status.
pub(super) fn redis_error(e: &redis::RedisError, context: &str) -> Error {
    let kind = match e.code() {
        Some("NOPERM") => ErrorKind::PermissionDenied,
        Some("WRONGTYPE") => ErrorKind::WrongType,
        _ if e.is_io_error() || e.is_timeout() || e.is_connection_dropped() || e.is_connection_refusal() => ErrorKind::Connection,
        _ if e.kind() == redis::ErrorKind::AuthenticationFailed => ErrorKind::Connection,
        _ => ErrorKind::Internal,
    };
    if kind == ErrorKind::PermissionDenied {
        // As core says it: what was refused and the rule that allows it.
        let text = e.to_string();
        let command = text.split("to run the '").nth(1).and_then(|rest| rest.split('\'').next());
        let hint = match command {
            Some(command) => format!("the ACL user needs +{command} (ACL SETUSER <user> +{command})"),
            None => "grant the ACL user read access to NAME and its helper keys and PUBSUB NUMSUB".to_string(),
        };
        return Error::new(kind, format!("{context}: Redis refused it ({text}); {hint}"));
    }
    Error::new(kind, format!("{context}: {e}"))
}

/// The number a semaphore or latch key holds (0 when it does not exist).
pub(super) async fn read_number(conn: &mut MultiplexedConnection, key: &[u8], context: &str) -> ferrolock::Result<i64> {
    let value: Option<String> = query(conn, redis::cmd("GET").arg(key), context).await?;
    match value {
        None => Ok(0),
        Some(text) => text.parse().map_err(|_| {
            Error::new(ErrorKind::WrongType, format!("{context}: the key holds {text:?}, not a number of permits or a count"))
        }),
    }
}

pub(super) async fn numsub(conn: &mut MultiplexedConnection, channel: &[u8], context: &str) -> ferrolock::Result<u64> {
    let (_, n): (Vec<u8>, u64) = query(conn, redis::cmd("PUBSUB").arg("NUMSUB").arg(channel), context).await?;
    Ok(n)
}

/// Redisson's `p:{n}`, or `p:n` when the name already carries braces.
pub(super) fn prefixed(prefix: &str, name: &[u8]) -> Vec<u8> {
    let mut key = format!("{prefix}:").into_bytes();
    if name.contains(&b'{') {
        key.extend_from_slice(name);
    } else {
        key.push(b'{');
        key.extend_from_slice(name);
        key.push(b'}');
    }
    key
}

/// Redisson's `{n}:s`, or `n:s` when the name already carries braces.
pub(super) fn suffixed(name: &[u8], suffix: &str) -> Vec<u8> {
    let mut key = prefixed("", name);
    key.remove(0);
    key.extend_from_slice(format!(":{suffix}").as_bytes());
    key
}

/// Redisson writes a latch's channel with literal braces, whatever the name holds.
pub(super) fn latch_channel(name: &[u8]) -> Vec<u8> {
    let mut channel = b"redisson_countdownlatch__channel__{".to_vec();
    channel.extend_from_slice(name);
    channel.push(b'}');
    channel
}
