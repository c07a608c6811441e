//! Telling the kind from the keys (Redisson's layout, names.rs) and reading each.
//!
//! A hash (or nothing) is a lock: a `mode` field makes it a read-write lock, a queue
//! a fair lock, a token counter a fenced lock. A number is a semaphore or a latch: a
//! permits' zset says permit-expirable; otherwise who listens on which channel tells,
//! and 0 is a semaphore (a latch at 0 is deleted).

use std::time::{SystemTime, UNIX_EPOCH};

use super::{Inspection, ObjectKind, PermitOut};
use crate::ctx::Ctx;
use crate::error::{Error, ErrorKind, Result};
use crate::lock::status::{query_idempotent, snapshot};
use crate::names::{suffixed, CounterNames, LockNames};
use crate::transport::Conn;

/// The score Redisson gives a permit without a lease.
const NO_LEASE: f64 = 922_337_203_685_477.0;

/// The reads of one name, with the context their errors carry.
struct Reader<'a> {
    ctx: &'a Ctx,
    conn: Conn,
    shown: String,
    context: String,
}

impl Reader<'_> {
    async fn query<T: redis::FromRedisValue>(&self, cmd: &redis::Cmd) -> Result<T> {
        query_idempotent(&self.conn, cmd, &self.context).await
    }

    async fn exists(&self, key: &[u8]) -> Result<bool> {
        self.query(redis::cmd("EXISTS").arg(key)).await
    }

    /// The number a semaphore or latch key holds (0 when it does not exist).
    async fn number(&self, key: &[u8]) -> Result<i64> {
        match self.query::<Option<String>>(redis::cmd("GET").arg(key)).await? {
            None => Ok(0),
            Some(text) => text.parse().map_err(|_| {
                let context = &self.context;
                Error::new(ErrorKind::WrongType, format!("{context}: the key holds {text:?}, not a number of permits or a count"))
            }),
        }
    }

    async fn numsub(&self, channel: &[u8]) -> Result<u64> {
        let mut cmd = self.ctx.transport.numsub_command();
        cmd.arg(channel);
        let (_, n): (Vec<u8>, u64) = self.query(&cmd).await?;
        Ok(n)
    }
}

fn kind_name(kind: ObjectKind) -> &'static str {
    match kind {
        ObjectKind::Lock | ObjectKind::FencedLock => "lock",
        ObjectKind::FairLock => "fair lock",
        ObjectKind::ReadWriteLock => "read-write lock",
        ObjectKind::Semaphore => "semaphore",
        ObjectKind::PermitExpirableSemaphore => "permit-expirable semaphore",
        ObjectKind::CountDownLatch => "count-down latch",
        ObjectKind::SemaphoreOrLatch => "semaphore or count-down latch",
    }
}

pub(super) async fn read(ctx: &Ctx, key: &[u8], kind: Option<ObjectKind>) -> Result<Inspection> {
    let shown = String::from_utf8_lossy(key).into_owned();
    let r = Reader { ctx, conn: ctx.conn()?, context: format!("reading \"{shown}\""), shown };
    let lock_names = LockNames::new(key);
    let semaphore = CounterNames::semaphore(key);
    let latch = CounterNames::count_down_latch(key);
    let key_type: String = r.query(redis::cmd("TYPE").arg(key)).await?;
    let not = |what: &str| Error::new(ErrorKind::WrongType, format!("the key at \"{}\" holds a {key_type}, not {what}", r.shown));
    let kind = match kind {
        Some(kind) => kind,
        None => match key_type.as_str() {
            "hash" | "none" => {
                let mode: Option<String> = r.query(redis::cmd("HGET").arg(key).arg("mode")).await?;
                match (mode, r.exists(&lock_names.queue()).await?) {
                    (Some(_), _) => ObjectKind::ReadWriteLock,
                    (None, true) => ObjectKind::FairLock,
                    (None, false) => ObjectKind::Lock,
                }
            }
            "string" if r.exists(&suffixed(key, "timeout")).await? => ObjectKind::PermitExpirableSemaphore,
            "string" => {
                let value = r.number(key).await?;
                match (value, r.numsub(&semaphore.channel).await?, r.numsub(&latch.channel).await?) {
                    (0, _, _) => ObjectKind::Semaphore,
                    (_, s, 0) if s > 0 => ObjectKind::Semaphore,
                    (_, 0, l) if l > 0 => ObjectKind::CountDownLatch,
                    _ => ObjectKind::SemaphoreOrLatch,
                }
            }
            _ => return Err(not("a lock, a semaphore or a latch")),
        },
    };
    let fits = match key_type.as_str() {
        "none" => true,
        "hash" => kind.is_lock(),
        "string" => !kind.is_lock(),
        _ => false,
    };
    if !fits {
        return Err(not(&format!("a {}", kind_name(kind))));
    }
    let mut found = Inspection {
        name: r.shown.clone(),
        kind,
        lock: None,
        mode: None,
        queue: Vec::new(),
        waiters: 0,
        permits: None,
        permits_out: Vec::new(),
        count: None,
        eviction_policy: ctx.transport.capabilities().eviction_policy.clone(),
    };
    if kind.is_lock() {
        let lock = snapshot(&r.conn, &ctx.transport, &lock_names).await?;
        found.waiters = lock.subscribers;
        if kind == ObjectKind::Lock && lock.last_token.is_some() {
            found.kind = ObjectKind::FencedLock;
        }
        found.lock = Some(lock);
    }
    match kind {
        ObjectKind::FairLock => {
            found.queue = r.query(redis::cmd("LRANGE").arg(&lock_names.queue()).arg(0).arg(-1)).await?;
            found.waiters = found.queue.len() as u64;
        }
        ObjectKind::ReadWriteLock => {
            found.mode = r.query(redis::cmd("HGET").arg(key).arg("mode")).await?;
            found.waiters = r.numsub(&lock_names.rw_channel()).await?;
        }
        ObjectKind::Semaphore => {
            found.permits = Some(r.number(key).await?);
            found.waiters = r.numsub(&semaphore.channel).await?;
        }
        ObjectKind::PermitExpirableSemaphore => {
            let ids: Vec<(Vec<u8>, f64)> =
                r.query(redis::cmd("ZRANGE").arg(suffixed(key, "timeout")).arg(0).arg(-1).arg("WITHSCORES")).await?;
            let now_ms = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64);
            found.permits_out = ids
                .into_iter()
                .map(|(id, score)| PermitOut {
                    id: id.iter().map(|b| format!("{b:02x}")).collect(),
                    lease_left_ms: (score < NO_LEASE).then(|| score as i64 - now_ms),
                })
                .collect();
            found.permits = Some(r.number(key).await?);
            found.waiters = r.numsub(&semaphore.channel).await?;
        }
        ObjectKind::CountDownLatch => {
            found.count = Some(r.number(key).await?);
            found.waiters = r.numsub(&latch.channel).await?;
        }
        ObjectKind::SemaphoreOrLatch => {
            let value = r.number(key).await?;
            (found.permits, found.count) = (Some(value), Some(value));
        }
        ObjectKind::Lock | ObjectKind::FencedLock => {}
    }
    Ok(found)
}
