//! A lock as the server sees it: a snapshot for operators (`ferrolock status`) and
//! for showing who is in the way while waiting, and the read-only queries and the
//! force unlock behind it.

use std::time::Duration;

use super::who::{HolderEntry, HolderNote};
use super::Lock;
use crate::error::{Error, ErrorKind, Result};
use crate::names::LockNames;
use crate::transport::{Conn, Transport};



/// The state of a lock at one moment. Read with [`crate::Lock::status`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockStatus {
    /// The lock name.
    pub name: String,
    /// Every owner field with its hold count; empty when the lock is free.
    pub holders: Vec<HolderEntry>,
    /// Time left on the lease; `None` when free, `Duration::MAX` for a lock without expiry.
    pub remaining_lease: Option<Duration>,
    /// Connections subscribed to the lock's release channel: one per client with waiters
    /// (ferrolock and Redisson share one subscription per client; ferrolock's stays
    /// subscribed 100 ms after its last waiter left).
    pub subscribers: u64,
    /// The last fencing token handed out for this name (`redisson_lock_token:{name}`), if any.
    pub last_token: Option<u64>,
    /// The server's `maxmemory-policy` when it may evict lock keys (`maxmemory` set and
    /// a policy other than `noeviction`: a held lock could vanish under memory
    /// pressure; set `noeviction`). `None` when it cannot, or its ACL refuses INFO.
    /// Read once when the client connected.
    pub eviction_policy: Option<String>,
}

impl LockStatus {
    /// True when someone holds the lock.
    pub fn is_locked(&self) -> bool {
        !self.holders.is_empty()
    }
}

impl Lock {
    /// True if anyone holds the lock. `WrongType` if the key is not a lock.
    pub async fn is_locked(&self) -> Result<bool> {
        let (kind, _): (String, i64) = self.query_type_pttl().await?;
        Ok(kind == "hash")
    }

    /// True if this holder holds the lock, as the server sees it.
    pub async fn is_held(&self) -> Result<bool> {
        Ok(self.hold_count().await? > 0)
    }

    /// This holder's hold count, as the server sees it.
    pub async fn hold_count(&self) -> Result<u32> {
        // After the holder's calls in flight (an acquire being settled, say), so it
        // never reports a hold the caller was not given.
        let holder = self.one()?;
        let _settled = holder.op.lock().await;
        let cmd = redis::Cmd::hget(&holder.names.name, &*holder.field);
        let count: Option<u32> = self.query_idempotent(&cmd, "reading").await?;
        Ok(count.unwrap_or(0))
    }

    /// Time left on the lock's lease (whoever holds it); `None` when not locked,
    /// `Duration::MAX` for a lock without expiry.
    pub async fn remaining_lease(&self) -> Result<Option<Duration>> {
        let (kind, pttl) = self.query_type_pttl().await?;
        Ok(match (kind.as_str(), pttl) {
            ("none", _) | (_, -2) => None,
            (_, -1) => Some(Duration::MAX),
            (_, ms) => Some(Duration::from_millis(ms.max(0) as u64)),
        })
    }

    /// Deletes the lock whoever holds it and wakes a waiter. `true` if it was locked.
    /// Holders find their hold lost at their next renewal or release.
    pub async fn force_unlock(&self) -> Result<bool> {
        let holder = self.one()?;
        let mut conn = holder.ctx.conn()?;
        let unlocked: i64 = super::wire::force_unlock(holder)
            .invoke(&mut conn)
            .await
            .map_err(|e| Error::from_redis(&e, &format!("force-unlocking lock \"{}\"", self.name())))?;
        Ok(unlocked == 1)
    }

    /// A snapshot of the lock: holders with their counts, remaining lease, subscribed
    /// clients on its channel and the last fencing token. `WrongType` if the key is not a lock.
    pub async fn status(&self) -> Result<LockStatus> {
        let holder = self.one()?;
        snapshot(&holder.ctx.conn()?, &holder.ctx.transport, &holder.names).await
    }

    async fn query_type_pttl(&self) -> Result<(String, i64)> {
        let mut pipe = redis::pipe();
        let name = &self.one()?.names.name;
        pipe.cmd("TYPE").arg(name).pttl(name);
        let (kind, pttl): (String, i64) = self.query_idempotent(&pipe, "reading").await?;
        if kind != "hash" && kind != "none" {
            return Err(Error::new(
                ErrorKind::WrongType,
                format!(
                    "the key at lock name \"{}\" holds a {kind}, not a lock; pick another lock name",
                    self.name()
                ),
            ));
        }
        Ok((kind, pttl))
    }

    async fn query_idempotent<T: redis::FromRedisValue>(&self, cmd: &(impl Queryable + ?Sized), what: &str) -> Result<T> {
        query_idempotent(&self.one()?.ctx.conn()?, cmd, &format!("{what} lock \"{}\"", self.name())).await
    }
}

/// The snapshot of [`Lock::status`] (and of `Client::inspect`), on `transport`'s
/// server (its command counting a channel's subscribers, its eviction policy).
pub(crate) async fn snapshot(conn: &Conn, transport: &Transport, keys: &LockNames) -> Result<LockStatus> {
    let numsub = transport.numsub_command();
    let name = keys.display();
    let context = |what: &str| format!("{what} lock \"{name}\"");
    let mut pipe = redis::pipe();
    pipe.cmd("TYPE").arg(&keys.name).pttl(&keys.name).get(keys.token());
    pipe.add_command(numsub).arg(keys.channel());
    let (kind, pttl, token, (_, subscribers)): (String, i64, Option<String>, (Vec<u8>, u64)) =
        query_idempotent(conn, &pipe, &context("reading the status of")).await?;
    let not_a_lock = |what: &str| {
        Error::new(ErrorKind::WrongType, format!("the key at lock name \"{name}\" holds {what}, not a lock; pick another lock name"))
    };
    if kind != "hash" && kind != "none" {
        return Err(not_a_lock(&format!("a {kind}")));
    }
    let mut holders = Vec::new();
    if kind == "hash" {
        let cmd = redis::Cmd::hgetall(&keys.name);
        let fields: Vec<(String, String)> = query_idempotent(conn, &cmd, &context("reading the holders of")).await?;
        // A read-write lock's hash also says which side holds it.
        for (owner, count) in fields.into_iter().filter(|(field, _)| field != "mode") {
            let count = count.parse().map_err(|_| not_a_lock("a hash with a non-numeric field"))?;
            holders.push(HolderEntry { owner, count, info: None, note: None, held_for: None });
        }
        holders.sort_by(|a, b| a.owner.cmp(&b.owner));
        if !holders.is_empty() {
            let cmd = redis::Cmd::mget(holders.iter().map(|h| keys.holder_info(&h.owner)).collect::<Vec<_>>());
            // With the server's clock, which wrote "since" in the notes.
            let mut pipe = redis::pipe();
            pipe.add_command(cmd.clone()).cmd("TIME");
            let read = query_idempotent::<(Vec<Option<String>>, (u64, u64))>(conn, &pipe, &context("reading the holder notes of")).await;
            // Notes are a convenience: a user whose ACL does not cover them (or TIME)
            // still gets the status (with this machine's clock for "held for").
            let (notes, server_ms) = match read {
                Ok((notes, (secs, micros))) => (notes, secs * 1000 + micros / 1000),
                Err(e) if e.kind() == ErrorKind::PermissionDenied => {
                    let notes = match query_idempotent(conn, &cmd, &context("reading the holder notes of")).await {
                        Err(e) if e.kind() == ErrorKind::PermissionDenied => Vec::new(),
                        other => other?,
                    };
                    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
                    (notes, now.as_millis() as u64)
                }
                Err(e) => return Err(e),
            };
            for (entry, info) in holders.iter_mut().zip(notes) {
                entry.note = info.as_deref().and_then(HolderNote::parse);
                entry.held_for = entry.note.as_ref().and_then(|n| n.since_ms).map(|since| Duration::from_millis(server_ms.saturating_sub(since)));
                entry.info = info;
            }
        }
    }
    let remaining_lease = match (holders.is_empty(), pttl) {
        (true, _) | (_, -2) => None,
        (_, -1) => Some(Duration::MAX),
        (_, ms) => Some(Duration::from_millis(ms.max(0) as u64)),
    };
    let last_token = match token {
        None => None,
        Some(t) => Some(t.parse().map_err(|_| {
            Error::new(ErrorKind::WrongType, format!("the fencing-token counter of lock \"{name}\" is not a number"))
        })?),
    };
    let eviction_policy = transport.capabilities().eviction_policy.clone();
    Ok(LockStatus { name: name.to_string(), holders, remaining_lease, subscribers, last_token, eviction_policy })
}

/// Runs a read-only command, once more after a connection failure (the
/// connection manager reconnects, but the command that hit the break fails).
pub(crate) async fn query_idempotent<T: redis::FromRedisValue>(conn: &Conn, cmd: &(impl Queryable + ?Sized), context: &str) -> Result<T> {
    let mut conn = conn.clone();
    match cmd.run(&mut conn).await {
        Err(e) if Error::is_ambiguous(&e) => cmd.run(&mut conn).await.map_err(|e| Error::from_redis(&e, context)),
        other => other.map_err(|e| Error::from_redis(&e, context)),
    }
}

/// A command or pipeline that can be sent as is.
pub(crate) trait Queryable {
    async fn run<T: redis::FromRedisValue>(&self, conn: &mut Conn) -> redis::RedisResult<T>;
}

impl Queryable for redis::Cmd {
    async fn run<T: redis::FromRedisValue>(&self, conn: &mut Conn) -> redis::RedisResult<T> {
        self.query_async(conn).await
    }
}

impl Queryable for redis::Pipeline {
    async fn run<T: redis::FromRedisValue>(&self, conn: &mut Conn) -> redis::RedisResult<T> {
        self.query_async(conn).await
    }
}

