//! The public lock handle: acquire (with waiting on pub/sub), release, queries.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::transport::Conn;

use crate::client::Alive;
use crate::error::{Error, Result};
use crate::handoff::Candidate;
use crate::holder::{Attempt, Hold, Holder, LostCallback, Released};
use crate::status::{HolderEntry, LockStatus};
use crate::{scripts, validate};

/// How to build a lock handle (see [`crate::Client::lock_with`]).
#[derive(Debug, Clone, Default)]
pub struct LockOptions {
    /// Fenced lock: every acquisition INCRs `redisson_lock_token:{name}` and yields the value.
    pub fenced: bool,
    /// Explicit holder id: the owner field becomes `<client-id>:<holder_id>`.
    pub holder_id: Option<u64>,
    /// Explicit full owner field, for handing a hold over between clients.
    pub owner: Option<String>,
}

/// How to acquire: how long to wait and which lease to use.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AcquireOptions {
    /// Longest wait (0 = try once). `None` waits as long as it takes.
    pub wait: Option<Duration>,
    /// Explicit lease: the lock expires after it, with no renewal. `None` = watchdog.
    pub lease: Option<Duration>,
}

impl AcquireOptions {
    /// Wait at most `wait` (0 = try once).
    pub fn wait(wait: Duration) -> Self {
        AcquireOptions { wait: Some(wait), lease: None }
    }

    /// Use an explicit lease instead of the watchdog.
    pub fn with_lease(mut self, lease: Duration) -> Self {
        self.lease = Some(lease);
        self
    }
}

/// A handle on one lock name for one holder. Clones share the holder; a new
/// handle from [`crate::Client::lock`] is a new holder. Re-entrant: the same
/// holder may acquire again and must release as often.
///
/// A hold ends only by a release (explicit, or by dropping its [`Guard`]), by
/// the end of an explicit lease, or by the client's shutdown: dropping every
/// handle of a holder that holds keeps the hold (the client keeps it, renewed,
/// and logs a warning), like a thread that exits while holding a C lock.
pub struct Lock {
    pub(crate) holder: Arc<Holder>,
    /// Keeps the client up while a handle exists (see `client::Alive`).
    _alive: Arc<Alive>,
}

impl Clone for Lock {
    fn clone(&self) -> Self {
        Lock::from_holder(self.holder.clone(), self._alive.clone())
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        if self.holder.handles.fetch_sub(1, Ordering::AcqRel) == 1 {
            let count = self.holder.state.lock().unwrap().count;
            if count > 0 && !self.holder.client.is_shut_down() {
                tracing::warn!(
                    lock = %self.holder.keys.display,
                    owner = %self.holder.owner,
                    "the last handle of a holder of lock \"{}\" was dropped while it holds {count} level(s); \
                     the hold stays until its lease ends or the client shuts down (release before dropping)",
                    self.holder.keys.display
                );
            }
        }
    }
}

impl std::fmt::Debug for Lock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lock")
            .field("name", &self.holder.keys.display)
            .field("owner", &self.holder.owner)
            .field("fenced", &self.holder.fenced)
            .finish()
    }
}

impl Lock {
    pub(crate) fn from_holder(holder: Arc<Holder>, alive: Arc<Alive>) -> Lock {
        holder.handles.fetch_add(1, Ordering::AcqRel);
        Lock { holder, _alive: alive }
    }

    /// The lock name (lossy UTF-8 for non-UTF-8 names).
    pub fn name(&self) -> &str {
        &self.holder.keys.display
    }

    /// The lock name as given.
    pub fn name_bytes(&self) -> &[u8] {
        &self.holder.keys.name
    }

    /// The owner field this holder writes: `<client-id>:<holder-id>`.
    pub fn owner(&self) -> &str {
        &self.holder.owner
    }

    /// True for fenced locks.
    pub fn is_fenced(&self) -> bool {
        self.holder.fenced
    }

    /// Waits until acquired, with the watchdog lease. The guard releases on drop.
    pub async fn acquire(&self) -> Result<Guard> {
        let hold = self.acquire_hold(AcquireOptions::default()).await?;
        Ok(Guard::new(self.clone(), hold.expect("an unbounded wait only returns when acquired")))
    }

    /// One attempt, no waiting.
    pub async fn try_acquire(&self) -> Result<Option<Guard>> {
        self.acquire_with(AcquireOptions::wait(Duration::ZERO)).await
    }

    /// Acquires with a wait bound and/or an explicit lease. `Ok(None)`: not acquired in time.
    pub async fn acquire_with(&self, options: AcquireOptions) -> Result<Option<Guard>> {
        Ok(self.acquire_hold(options).await?.map(|hold| Guard::new(self.clone(), hold)))
    }

    /// Like [`Lock::acquire_with`], without release-on-drop: the hold lasts until
    /// [`Lock::release`] (or its loss). This is what the bindings use.
    ///
    /// Dropping the returned future at any point leaves nothing held and no
    /// subscription behind.
    pub async fn acquire_hold(&self, options: AcquireOptions) -> Result<Option<Hold>> {
        let lease_ms = options.lease.map(validate::lease).transpose()?;
        let deadline = options.wait.map(validate::wait).transpose()?.map(|w| Instant::now() + w);
        let client = &self.holder.client;
        if client.is_shut_down() {
            return Err(Error::shut_down());
        }
        let channel = &self.holder.keys.channel;
        // Inside one client, a new acquirer queues behind the waiters already there
        // (unless it re-enters) instead of racing the one the last release woke.
        let idle = self.holder.state.lock().unwrap().count == 0;
        let queue_behind = idle && client.pubsub.has_waiters(channel);
        let mut busy = None;
        if !queue_behind {
            // Fast path: uncontended acquisitions cost one round-trip, no subscription.
            match self.holder.attempt(lease_ms).await? {
                Attempt::Acquired(pending) => return Ok(Some(pending.take())),
                Attempt::Busy(ttl) => busy = ttl,
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(None);
            }
        }
        // Queued, a release of this client may hand the lock straight to us (handoff.rs).
        let candidate = Candidate::new(self.holder.clone(), lease_ms);
        let (waiter, queued) = client.pubsub.waiter(channel, Some(candidate.clone())).await;
        let mut shutdown = client.shutdown.subscribe();
        // Subscribed now: a release from here on reaches us. Try again before waiting,
        // since the lock may have been released before the subscription, unless we
        // queued behind live waiters (the release woke one of them).
        let mut retry_now = queued.is_none();
        if let Some(until) = queued {
            busy = Some(until.saturating_duration_since(Instant::now()));
        }
        loop {
            if let Some(pending) = candidate.take_handed() {
                return Ok(Some(pending.take()));
            }
            // No attempt of our own while a release is handing us the lock.
            if retry_now && candidate.begin_attempt() {
                let attempt = self.holder.attempt(lease_ms).await;
                candidate.end_attempt();
                match attempt? {
                    Attempt::Acquired(pending) => return Ok(Some(pending.take())),
                    Attempt::Busy(ttl) => {
                        busy = ttl;
                        if let Some(ttl) = ttl {
                            client.pubsub.note_busy(channel, Instant::now() + ttl);
                        }
                    }
                }
            }
            let now = Instant::now();
            // A hand-off under way ends with a wake-up either way: wait for it even past the deadline.
            let handing = candidate.is_claimed();
            if !handing && deadline.is_some_and(|d| now >= d) && candidate.close() {
                return Ok(None);
            }
            // Nothing is published when a lock expires: wake by its TTL as well.
            let mut until = busy.map(|ttl| now + ttl);
            if let Some(d) = deadline {
                until = Some(until.map_or(d, |u| u.min(d)));
            }
            if handing {
                until = None;
            }
            let sleep = async {
                match until {
                    Some(t) => tokio::time::sleep_until(t.into()).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = waiter.woken() => {}
                _ = sleep => {}
                _ = shutdown.wait_for(|down| *down) => return Err(Error::shut_down()),
            }
            retry_now = true;
        }
    }

    /// Releases one level of this holder's hold. `NotOwner` if this holder does not
    /// hold it (nothing changes), `LockLost` if its hold was lost meanwhile.
    pub async fn release(&self) -> Result<Released> {
        self.holder.release(false).await
    }

    /// Releases every level of this holder's hold at once.
    pub async fn release_all(&self) -> Result<Released> {
        self.holder.release(true).await
    }

    /// The current hold of this holder (local view), if any.
    pub fn current_hold(&self) -> Option<Hold> {
        self.holder.current_hold()
    }

    /// This holder's hold count (local view; 0 when not held).
    pub fn local_hold_count(&self) -> u32 {
        self.holder.state.lock().unwrap().count
    }

    /// The fencing token of this holder's latest acquisition, while held.
    pub fn token(&self) -> Option<u64> {
        self.current_hold().and_then(|h| h.token())
    }

    /// True if this holder's latest hold was lost (until it acquires again).
    pub fn is_lost(&self) -> bool {
        self.holder.state.lock().unwrap().lost_error.is_some()
    }

    /// The `LockLost` error of this holder's latest hold, if it was lost.
    pub fn lost_error(&self) -> Option<Error> {
        self.holder.state.lock().unwrap().lost_error.clone()
    }

    /// Calls `callback` (on a background thread) whenever a hold of this holder is lost.
    /// Replaces any earlier callback; `None` removes it.
    pub fn set_on_lost(&self, callback: Option<LostCallback>) {
        *self.holder.on_lost.lock().unwrap() = callback;
    }

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
        let _settled = self.holder.op.lock().await;
        let cmd = redis::Cmd::hget(&self.holder.keys.name, &self.holder.owner);
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
        let mut conn = self.holder.client.conn()?;
        let unlocked: i64 = scripts::FORCE_UNLOCK
            .key(&self.holder.keys.name)
            .key(&self.holder.keys.channel)
            .arg(scripts::PUBLISH)
            .invoke_async(&mut conn)
            .await
            .map_err(|e| Error::from_redis(&e, &format!("force-unlocking lock \"{}\"", self.name())))?;
        Ok(unlocked == 1)
    }

    /// A snapshot of the lock: holders with their counts, remaining lease, subscribed
    /// clients on its channel and the last fencing token. `WrongType` if the key is not a lock.
    pub async fn status(&self) -> Result<LockStatus> {
        let keys = &self.holder.keys;
        let mut pipe = redis::pipe();
        pipe.cmd("TYPE").arg(&keys.name).pttl(&keys.name).get(&keys.token);
        pipe.cmd("PUBSUB").arg("NUMSUB").arg(&keys.channel);
        let (kind, pttl, token, (_, subscribers)): (String, i64, Option<String>, (Vec<u8>, u64)) =
            self.query_idempotent(&pipe, "reading the status of").await?;
        let not_a_lock = |what: &str| {
            Error::new(
                crate::ErrorKind::WrongType,
                format!("the key at lock name \"{}\" holds {what}, not a lock; pick another lock name", self.name()),
            )
        };
        if kind != "hash" && kind != "none" {
            return Err(not_a_lock(&format!("a {kind}")));
        }
        let mut holders = Vec::new();
        if kind == "hash" {
            let cmd = redis::Cmd::hgetall(&keys.name);
            let fields: Vec<(String, String)> = self.query_idempotent(&cmd, "reading the holders of").await?;
            for (owner, count) in fields {
                let count = count.parse().map_err(|_| not_a_lock("a hash with a non-numeric field"))?;
                holders.push(HolderEntry { owner, count });
            }
            holders.sort_by(|a, b| a.owner.cmp(&b.owner));
        }
        let remaining_lease = match (holders.is_empty(), pttl) {
            (true, _) | (_, -2) => None,
            (_, -1) => Some(Duration::MAX),
            (_, ms) => Some(Duration::from_millis(ms.max(0) as u64)),
        };
        let last_token = match token {
            None => None,
            Some(t) => Some(t.parse().map_err(|_| {
                Error::new(
                    crate::ErrorKind::WrongType,
                    format!("the fencing-token counter of lock \"{}\" is not a number", self.name()),
                )
            })?),
        };
        Ok(LockStatus { name: self.name().to_string(), holders, remaining_lease, subscribers, last_token })
    }

    async fn query_type_pttl(&self) -> Result<(String, i64)> {
        let mut pipe = redis::pipe();
        pipe.cmd("TYPE").arg(&self.holder.keys.name).pttl(&self.holder.keys.name);
        let (kind, pttl): (String, i64) = self.query_idempotent(&pipe, "reading").await?;
        if kind != "hash" && kind != "none" {
            return Err(Error::new(
                crate::ErrorKind::WrongType,
                format!(
                    "the key at lock name \"{}\" holds a {kind}, not a lock; pick another lock name",
                    self.name()
                ),
            ));
        }
        Ok((kind, pttl))
    }

    /// Runs a read-only command, once more after a connection failure (the
    /// connection manager reconnects, but the command that hit the break fails).
    async fn query_idempotent<T: redis::FromRedisValue>(&self, cmd: &(impl Queryable + ?Sized), what: &str) -> Result<T> {
        let mut conn = self.holder.client.conn()?;
        let context = format!("{what} lock \"{}\"", self.name());
        match cmd.run(&mut conn).await {
            Err(e) if Error::is_ambiguous(&e) => cmd.run(&mut conn).await.map_err(|e| Error::from_redis(&e, &context)),
            other => other.map_err(|e| Error::from_redis(&e, &context)),
        }
    }
}

/// A command or pipeline that can be sent as is.
trait Queryable {
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

/// One acquisition, released when dropped (in the background) unless released
/// explicitly or turned into a plain [`Hold`].
#[must_use = "dropping the guard releases the lock at once"]
pub struct Guard {
    lock: Lock,
    hold: Hold,
    armed: bool,
}

impl std::fmt::Debug for Guard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guard").field("lock", &self.lock).field("token", &self.hold.token()).finish()
    }
}

impl Guard {
    fn new(lock: Lock, hold: Hold) -> Self {
        Guard { lock, hold, armed: true }
    }

    /// The lock this guard holds.
    pub fn lock(&self) -> &Lock {
        &self.lock
    }

    /// The fencing token of this acquisition (fenced locks).
    pub fn token(&self) -> Option<u64> {
        self.hold.token()
    }

    /// True once this hold has been lost.
    pub fn is_lost(&self) -> bool {
        self.hold.is_lost()
    }

    /// Resolves with a `LockLost` error when this hold is lost.
    pub async fn lost(&self) -> Error {
        self.hold.lost().await
    }

    /// The hold behind this guard.
    pub fn hold(&self) -> &Hold {
        &self.hold
    }

    /// Releases this level now and reports the outcome.
    pub async fn release(mut self) -> Result<Released> {
        self.armed = false;
        self.lock.release().await
    }

    /// Keeps the hold without release-on-drop; release it with [`Lock::release`].
    pub fn into_hold(mut self) -> Hold {
        self.armed = false;
        self.hold.clone()
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if self.armed {
            let lock = self.lock.clone();
            self.lock.holder.client.runtime.spawn(async move {
                if let Err(e) = lock.release().await {
                    tracing::debug!(lock = %lock.name(), error = %e, "release on guard drop failed");
                }
            });
        }
    }
}
