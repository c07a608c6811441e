//! Redisson's `RPermitExpirableSemaphore`: the free permits in the string `n`, the
//! permits out in the zset `{n}:timeout` (id -> expiry in ms, 922337203685477 for
//! none), the channel `redisson_sc:{n}` carrying the new count. A permit has an id
//! (16 random bytes, shown as 32 hex digits like Redisson's API) and an optional
//! lease; expired permits come back by themselves on the next acquire or count, and
//! a waiter wakes by the nearest expiry as well as by release messages.
//!
//! The id is chosen by the client, so a retry after a lost reply finds its own
//! permit instead of taking another; an acquire Redis never answers is settled in
//! the background (its permit released, its id barred from arriving late).

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{set_permits_once, Counter};
use crate::ctx::{Alive, Ctx};
use crate::error::{ErrorKind, Result};
use crate::hold::pending::{to_completion, Pending, Undo};
use crate::metrics::AcquireTiming;
use crate::names::{suffixed, CounterNames};
use crate::request::{latch_ttl, latch_ttl_ms, until_answered};
use crate::scripts;
use crate::validate;
use crate::waiting::{self, Attempt, Policy};

/// A handle on one permit-expirable semaphore. Cheap to clone.
#[derive(Clone)]
pub struct PermitExpirableSemaphore {
    inner: Arc<Inner>,
}

struct Inner {
    counter: Counter,
    /// `{n}:timeout`: the permits out, by id.
    timeout: Vec<u8>,
}

impl std::fmt::Debug for PermitExpirableSemaphore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PermitExpirableSemaphore").field("name", &self.name()).finish()
    }
}

/// One permit: its id and the lease it was taken with. Released when dropped (in
/// the background) or by [`Permit::release`]; [`Permit::forget`] keeps it out
/// (until its lease ends, or someone releases it by id).
#[must_use = "dropping a Permit releases it at once"]
pub struct Permit {
    semaphore: PermitExpirableSemaphore,
    id: String,
    lease: Option<Duration>,
    done: bool,
}

impl PermitExpirableSemaphore {
    pub(crate) fn new(ctx: Arc<Ctx>, name: &[u8], alive: Arc<Alive>) -> Result<Self> {
        let counter = Counter::new(ctx, CounterNames::semaphore(name), alive, "permit-expirable semaphore")?;
        let timeout = suffixed(name, "timeout");
        if counter.ctx.transport.is_cluster() && crate::names::slot(&timeout) != crate::names::slot(name) {
            return Err(crate::error::Error::invalid(format!(
                "permit-expirable semaphore name {:?} cannot be used on a Redis Cluster: its permits' key falls in \
                 another slot; remove the braces",
                counter.names.display
            )));
        }
        Ok(PermitExpirableSemaphore { inner: Arc::new(Inner { counter, timeout }) })
    }

    /// The semaphore's name (lossy UTF-8).
    pub fn name(&self) -> &str {
        &self.inner.counter.names.display
    }

    fn context(&self, what: &str) -> String {
        format!("{what} permit-expirable semaphore \"{}\"", self.name())
    }

    /// Gives the semaphore `permits` free permits if it does not exist yet; `false` if it does.
    pub async fn try_set_permits(&self, permits: u64) -> Result<bool> {
        set_permits_once(&self.inner.counter, permits, &self.context("setting the permits of")).await
    }

    /// Waits as long as it takes for a permit; `lease`: it comes back by itself after that.
    pub async fn acquire(&self, lease: Option<Duration>) -> Result<Permit> {
        let permit = self.acquire_with(None, lease).await?;
        Ok(permit.expect("an unbounded wait only returns when acquired"))
    }

    /// One try, no waiting.
    pub async fn try_acquire(&self, lease: Option<Duration>) -> Result<Option<Permit>> {
        self.acquire_with(Some(Duration::ZERO), lease).await
    }

    /// Takes a permit, waiting at most `wait` (`None`: as long as it takes), with an
    /// optional `lease`. `Ok(None)`: none was free in time. Dropping the future at any
    /// point takes nothing and leaves no subscription.
    pub async fn acquire_with(&self, wait: Option<Duration>, lease: Option<Duration>) -> Result<Option<Permit>> {
        let lease_ms = lease.map(validate::lease).transpose()?;
        let deadline = wait.map(validate::wait).transpose()?.map(|w| Instant::now() + w);
        let ctx = &self.inner.counter.ctx;
        let timing = AcquireTiming::start(&ctx.transport.metrics, "permit-expirable semaphore", self.name());
        let names = &self.inner.counter.names;
        let channel = waiting::Channel { hub: &ctx.hub, name: &names.channel, policy: Policy::Permits, shutdown: &ctx.shutdown };
        let acquired = waiting::acquire(&Take { semaphore: self, lease_ms }, channel, deadline).await;
        timing.end(&acquired);
        Ok(acquired?.map(|pending| pending.take().0))
    }

    /// Releases the permit `id` (32 hex digits, as [`Permit::id`] or Redisson's API
    /// give it; permits are not owned). `true`: released in time; `false`: it had
    /// expired (its permit came back anyway) or is not out (released already).
    pub async fn release(&self, id: &str) -> Result<bool> {
        let raw = decode_id(id)?;
        let released = self.release_raw(raw, None).await?;
        Ok(released == 1)
    }

    async fn release_raw(&self, raw: Vec<u8>, settle_ttl_ms: Option<u64>) -> Result<i64> {
        let this = self.clone();
        let ctx = self.inner.counter.ctx.clone();
        let context = self.context("releasing a permit of");
        to_completion(&ctx, async move {
            let (counter, ctx) = (&this.inner.counter, &this.inner.counter.ctx);
            let latch = counter.names.reply(&hex(&raw));
            let mut call = scripts::PERMITS_RELEASE.prepare_invoke();
            call.key(&counter.names.name)
                .key(&counter.names.channel)
                .key(&this.inner.timeout)
                .key(&latch)
                .arg(&raw)
                .arg(ctx.transport.publish_command())
                .arg(settle_ttl_ms.map(|t| t.to_string()).unwrap_or_default());
            until_answered(ctx, &call, &context, Instant::now() + ctx.config.retry_window).await
        })
        .await
    }

    /// The free permits now, after returning the expired ones.
    pub async fn available(&self) -> Result<u64> {
        let (counter, ctx) = (&self.inner.counter, &self.inner.counter.ctx);
        let mut call = scripts::PERMITS_ACQUIRE.prepare_invoke();
        call.key(&counter.names.name)
            .key(&self.inner.timeout)
            .key(&counter.names.channel)
            .key(counter.names.reply("-"))
            .arg("count")
            .arg("")
            .arg("")
            .arg(ctx.transport.publish_command());
        let limit = Instant::now() + ctx.config.retry_window;
        let (free, _): (i64, i64) = until_answered(ctx, &call, &self.context("counting the permits of"), limit).await?;
        Ok(free.max(0) as u64)
    }
}

impl Permit {
    /// The permit's id: 32 hex digits (Redisson shows its ids the same way).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The lease it was taken with, if any.
    pub fn lease(&self) -> Option<Duration> {
        self.lease
    }

    /// Releases it now: `true` if it was still out and in time.
    pub async fn release(mut self) -> Result<bool> {
        self.done = true;
        self.semaphore.release(&self.id).await
    }

    /// Keeps it out: it ends with its lease, or by [`PermitExpirableSemaphore::release`] with its id.
    pub fn forget(mut self) -> String {
        self.done = true;
        std::mem::take(&mut self.id)
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        if !self.done {
            release_later(self.semaphore.clone(), std::mem::take(&mut self.id));
        }
    }
}

fn release_later(semaphore: PermitExpirableSemaphore, id: String) {
    let runtime = semaphore.inner.counter.ctx.runtime.clone();
    runtime.spawn(async move {
        if let Err(e) = semaphore.release(&id).await {
            tracing::warn!(semaphore = %semaphore.name(), "could not release permit {id}: {e}");
        }
    });
}

/// A permit on its way to a caller: released if nobody takes it.
struct Taken(Permit);

impl Undo for Taken {
    fn undo(self) {
        tracing::debug!(semaphore = %self.0.semaphore.name(), "acquire abandoned by its caller; releasing its permit");
        drop(self.0);
    }
}

struct Take<'a> {
    semaphore: &'a PermitExpirableSemaphore,
    lease_ms: Option<u64>,
}

impl waiting::Acquire for Take<'_> {
    type Output = Pending<Taken>;

    fn attempt(&self) -> impl std::future::Future<Output = Result<Attempt<Pending<Taken>>>> + Send {
        let (semaphore, lease_ms) = (self.semaphore.clone(), self.lease_ms);
        async move {
            let ctx = semaphore.inner.counter.ctx.clone();
            to_completion(&ctx, take(semaphore, lease_ms)).await
        }
    }
}

async fn take(semaphore: PermitExpirableSemaphore, lease_ms: Option<u64>) -> Result<Attempt<Pending<Taken>>> {
    let (counter, ctx) = (&semaphore.inner.counter, &semaphore.inner.counter.ctx);
    let raw: [u8; 16] = uuid::Uuid::new_v4().into_bytes();
    let id = hex(&raw);
    let (keys, lease_arg) = (semaphore.keys(&id), lease_ms.map(|l| l.to_string()).unwrap_or_default());
    let args: [&[u8]; 4] = [b"take", lease_arg.as_bytes(), &raw, ctx.transport.publish_command().as_bytes()];
    let sent_at = Instant::now();
    let context = semaphore.context("acquiring a permit of");
    let limit = sent_at + ctx.config.response_timeout * 2;
    let answered = if ctx.acknowledged() {
        let script = &*scripts::PERMITS_ACQUIRE;
        let cmd = super::acked::evalsha(script, &keys.each(), &args);
        let flag = |v: &redis::Value| match v {
            redis::Value::Array(parts) => match parts.first() {
                Some(redis::Value::Int(n)) => *n as u8,
                _ => 0,
            },
            _ => 0,
        };
        match super::acked::take(ctx, cmd, script, &counter.names.name, &context, limit, flag).await {
            Ok(super::acked::Take::Confirmed(value) | super::acked::Take::Busy(value)) => {
                redis::from_redis_value(value).map_err(|e| crate::error::Error::from_redis(&e.into(), &context))
            }
            Ok(super::acked::Take::Undo(err)) => {
                settle_later(&semaphore, raw, sent_at);
                return Err(err);
            }
            Err(e) => Err(e),
        }
    } else {
        let mut call = scripts::PERMITS_ACQUIRE.prepare_invoke();
        for key in keys.each() {
            call.key(key);
        }
        for arg in args {
            call.arg(arg);
        }
        until_answered::<(i64, i64)>(ctx, &call, &context, limit).await
    };
    match answered {
        Ok((1 | 2, _)) => {
            let lease = lease_ms.map(Duration::from_millis);
            Ok(Attempt::Acquired(Pending::new(Taken(Permit { semaphore: semaphore.clone(), id, lease, done: false }))))
        }
        Ok((_, next_expiry)) => Ok(Attempt::Busy((next_expiry > 0).then(|| Duration::from_millis(next_expiry as u64)))),
        Err(e) if e.kind() == ErrorKind::Connection => {
            settle_later(&semaphore, raw, sent_at);
            Err(e)
        }
        Err(e) => Err(e),
    }
}

/// The keys of a take of permit `id`: the semaphore, its permits, its channel, the id's reply latch.
struct TakeKeys([Vec<u8>; 4]);

impl TakeKeys {
    fn each(&self) -> [&[u8]; 4] {
        [&self.0[0], &self.0[1], &self.0[2], &self.0[3]]
    }
}

impl PermitExpirableSemaphore {
    fn keys(&self, id: &str) -> TakeKeys {
        let names = &self.inner.counter.names;
        TakeKeys([names.name.clone(), self.inner.timeout.clone(), names.channel.clone(), names.reply(id)])
    }
}

/// Settles a take whose reply never came, or one the replica-ack policy did not
/// confirm: its permit is released and its id barred from arriving late.
fn settle_later(semaphore: &PermitExpirableSemaphore, raw: [u8; 16], sent_at: Instant) {
    let ctx = &semaphore.inner.counter.ctx;
    let (settler, ttl) = (semaphore.clone(), latch_ttl_ms(ctx));
    let until = sent_at + latch_ttl(ctx) / 2;
    ctx.runtime.spawn(async move {
        let context = settler.context("settling an unanswered acquire of");
        let _ = tokio::time::timeout_at(until.into(), async {
            match settler.release_raw(raw.to_vec(), Some(ttl)).await {
                Ok(1 | 0) => tracing::info!(semaphore = %settler.name(), "{context}: its permit was released"),
                Ok(_) => {}
                Err(e) => tracing::warn!(semaphore = %settler.name(), "{context}: {e}"),
            }
        })
        .await;
    });
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn decode_id(id: &str) -> Result<Vec<u8>> {
    let bad = || crate::error::Error::invalid(format!("permit id {id:?} is not 32 hex digits"));
    if id.len() != 32 || !id.is_ascii() {
        return Err(bad());
    }
    (0..16).map(|i| u8::from_str_radix(&id[2 * i..2 * i + 2], 16).map_err(|_| bad())).collect()
}
