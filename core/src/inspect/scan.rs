//! The names of every lock-family object under a prefix: one SCAN pass over each
//! master (the one server, Sentinel's master, or every master of a cluster), matching
//! the prefix anywhere so that a free fenced lock's token counter and a fair lock's
//! queue are met too (names.rs tells a helper key from an object's own).

use std::collections::BTreeSet;

use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::names::helper_key_of;
use crate::transport::Conn;

/// Keys asked per SCAN call: few round-trips, short server pauses.
const BATCH: u32 = 1000;

pub(crate) async fn scan(ctx: &Ctx, prefix: &[u8]) -> Result<Vec<Vec<u8>>> {
    let conn = ctx.conn()?;
    let context = format!("listing the names under \"{}\"", String::from_utf8_lossy(prefix));
    let fail = |e: redis::RedisError| Error::from_redis(&e, &context);
    let masters = conn.masters().await.map_err(fail)?;
    let nodes = if masters.is_empty() { vec![String::new()] } else { masters };
    let mut names = BTreeSet::new();
    let mut candidates = Vec::new();
    for node in &nodes {
        for key in scan_node(&conn, node, prefix).await.map_err(fail)? {
            match helper_key_of(&key) {
                Some(Some(name)) if name.starts_with(prefix) => {
                    names.insert(name);
                }
                Some(_) => {}
                None if key.starts_with(prefix) => candidates.push(key),
                None => {}
            }
        }
    }
    // An object's own key is a lock's hash or a semaphore's or latch's number.
    if !candidates.is_empty() {
        let types: Vec<String> = each(&conn, &candidates, "TYPE").await.map_err(fail)?;
        let mut strings = Vec::new();
        for (key, key_type) in candidates.into_iter().zip(types) {
            match key_type.as_str() {
                "hash" => {
                    names.insert(key);
                }
                "string" => strings.push(key),
                _ => {}
            }
        }
        let values: Vec<Option<String>> = each(&conn, &strings, "GET").await.map_err(fail)?;
        for (key, value) in strings.into_iter().zip(values) {
            if value.is_some_and(|v| v.parse::<i64>().is_ok()) {
                names.insert(key);
            }
        }
    }
    Ok(names.into_iter().collect())
}

/// `command key` for each key, all in flight at once (a cluster refuses a pipeline
/// across slots; a multiplexed connection pipelines them anyway).
async fn each<T: redis::FromRedisValue>(conn: &Conn, keys: &[Vec<u8>], command: &str) -> redis::RedisResult<Vec<T>> {
    let asks = keys.iter().map(|key| {
        let mut conn = conn.clone();
        let mut cmd = redis::cmd(command);
        cmd.arg(key);
        async move { cmd.query_async::<T>(&mut conn).await }
    });
    futures_util::future::try_join_all(asks).await
}

/// Every key of one node (`""`: the one server) whose name holds `prefix`.
async fn scan_node(conn: &Conn, node: &str, prefix: &[u8]) -> redis::RedisResult<Vec<Vec<u8>>> {
    let mut pattern = b"*".to_vec();
    for &b in prefix {
        if matches!(b, b'*' | b'?' | b'[' | b']' | b'\\') {
            pattern.push(b'\\');
        }
        pattern.push(b);
    }
    if !prefix.is_empty() {
        pattern.push(b'*');
    }
    let mut keys = Vec::new();
    let mut cursor = 0u64;
    loop {
        let mut cmd = redis::cmd("SCAN");
        cmd.arg(cursor).arg("MATCH").arg(&pattern).arg("COUNT").arg(BATCH);
        let reply = conn.request_at(cmd, node).await?;
        let (next, batch): (u64, Vec<Vec<u8>>) = redis::from_redis_value(reply)?;
        keys.extend(batch);
        if next == 0 {
            return Ok(keys);
        }
        cursor = next;
    }
}
