//! Redisson's `RSemaphore`: a string key holding the free permits, the channel
//! `redisson_sc:{n}` carrying the new count after every release. Permits are not
//! owned (Redisson's semantics): anyone may release any number, and a process that
//! dies holding permits does not give them back. Waiting goes through the shared
//! engine (crate::waiting): woken by the count in a release message, no polling.
//!
//! Honest under faults, beyond Redisson: every acquire and release carries a reply
//! latch (request.rs), so a retry after a lost reply acts once; an acquire whose
//! reply never comes is settled in the background (permits given back, and the
//! request, should it still arrive, takes nothing), and one whose caller went away
//! gives its permits back.

mod acked;
mod expirable;
mod handoff;

pub use expirable::{Permit, PermitExpirableSemaphore};

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use crate::ctx::{Alive, Ctx};
use crate::error::{Error, ErrorKind, Result};
use crate::hold::pending::{to_completion, Pending, Undo};
use crate::metrics::AcquireTiming;
use crate::names::CounterNames;
use crate::request::{latch_ttl, latch_ttl_ms, until_answered};
use crate::waiting::Successor;
use handoff::Waiting;
use crate::scripts;
use crate::validate;
use crate::waiting::{self, Attempt, Known, Policy};

/// A handle on one semaphore name. Cheap to clone; every clone is the same semaphore.
#[derive(Clone)]
pub struct Semaphore {
    inner: Arc<Counter>,
}

/// What both semaphores and the count-down latch are made of: the client, the
/// names, and the client kept up while a handle exists.
pub(crate) struct Counter {
    pub ctx: Arc<Ctx>,
    pub names: CounterNames,
    /// Keeps the client up while a handle exists.
    _alive: Arc<Alive>,
}

impl Counter {
    pub fn new(ctx: Arc<Ctx>, names: CounterNames, alive: Arc<Alive>, what: &str) -> Result<Counter> {
        validate::name(what, &names.name)?;
        if ctx.transport.is_cluster() {
            names.check_one_slot(what)?;
        }
        Ok(Counter { ctx, names, _alive: alive })
    }
}

impl Counter {
    /// The number at the key (0 when it does not exist), read once more after a
    /// failure that may have been the connection's; `unit` names it in errors.
    pub async fn read(&self, context: &str, unit: &str) -> Result<u64> {
        let cmd = redis::Cmd::get(&self.names.name);
        let mut conn = self.ctx.conn()?;
        let value: Option<String> = match cmd.query_async(&mut conn).await {
            Err(e) if Error::is_ambiguous(&e) => cmd.query_async(&mut conn).await,
            other => other,
        }
        .map_err(|e| Error::from_redis(&e, context))?;
        value.map_or(Ok(0), |v| {
            v.parse::<i64>()
                .map(|n| n.max(0) as u64)
                .map_err(|_| Error::new(ErrorKind::WrongType, format!("{context}: the key holds {v:?}, not {unit}")))
        })
    }
}

/// Redisson's `trySetPermits`, for both semaphores: setting a count that does not
/// exist yet acts once by itself (a retry after a lost reply finds it set).
pub(crate) async fn set_permits_once(counter: &Counter, permits: u64, context: &str) -> Result<bool> {
    validate::count("permits", permits, 0)?;
    let ctx = &counter.ctx;
    let mut call = scripts::SEMAPHORE_TRY_SET.prepare_invoke();
    call.key(&counter.names.name).key(&counter.names.channel).arg(permits).arg(ctx.transport.publish_command());
    let set: i64 = until_answered(ctx, &call, context, Instant::now() + ctx.config.retry_window).await?;
    Ok(set == 1)
}

impl std::fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Semaphore")
            .field("name", &self.name())
            .finish()
    }
}

/// Permits taken by [`Semaphore::acquire`]: given back when dropped (in the
/// background) or by [`Permits::release`]; [`Permits::forget`] keeps them taken.
#[must_use = "dropping Permits gives them back at once"]
pub struct Permits {
    semaphore: Semaphore,
    count: u64,
    done: bool,
}

impl Semaphore {
    pub(crate) fn new(ctx: Arc<Ctx>, name: &[u8], alive: Arc<Alive>) -> Result<Semaphore> {
        let counter = Counter::new(ctx, CounterNames::semaphore(name), alive, "semaphore")?;
        Ok(Semaphore { inner: Arc::new(counter) })
    }

    /// The semaphore's name (lossy UTF-8).
    pub fn name(&self) -> &str {
        &self.inner.names.display
    }

    fn context(&self, what: &str) -> String {
        format!("{what} semaphore \"{}\"", self.name())
    }

    /// Gives the semaphore `permits` free permits if it does not exist yet (Redisson's
    /// `trySetPermits`); `false` if it exists (its count is left alone). 0 is allowed.
    pub async fn try_set_permits(&self, permits: u64) -> Result<bool> {
        set_permits_once(&self.inner, permits, &self.context("setting the permits of")).await
    }

    /// Waits as long as it takes for `permits` free permits and takes them.
    pub async fn acquire(&self, permits: u64) -> Result<Permits> {
        let taken = self.acquire_with(permits, None).await?;
        Ok(taken.expect("an unbounded wait only returns when acquired"))
    }

    /// One try, no waiting.
    pub async fn try_acquire(&self, permits: u64) -> Result<Option<Permits>> {
        self.acquire_with(permits, Some(Duration::ZERO)).await
    }

    /// Takes `permits` free permits, waiting at most `wait` (`None`: as long as it
    /// takes). `Ok(None)`: not enough were free in time. Dropping the future at any
    /// point takes nothing and leaves no subscription.
    pub async fn acquire_with(
        &self,
        permits: u64,
        wait: Option<Duration>,
    ) -> Result<Option<Permits>> {
        Ok(self.acquire_permits(permits, wait).await?.then(|| Permits {
            semaphore: self.clone(),
            count: permits,
            done: false,
        }))
    }

    /// Like [`Semaphore::acquire_with`] without the guard: the permits stay taken
    /// until someone releases them. What the bindings use.
    pub async fn acquire_permits(&self, permits: u64, wait: Option<Duration>) -> Result<bool> {
        validate::count("permits", permits, 1)?;
        let deadline = wait
            .map(validate::wait)
            .transpose()?
            .map(|w| Instant::now() + w);
        let ctx = &self.inner.ctx;
        let timing = AcquireTiming::start(&ctx.transport.metrics, "semaphore", self.name());
        let channel = waiting::Channel {
            hub: &ctx.hub,
            name: &self.inner.names.channel,
            policy: Policy::Permits,
            shutdown: &ctx.shutdown,
        };
        let acquired = waiting::acquire(
            &Take {
                semaphore: self,
                permits,
                waiting: OnceLock::new(),
            },
            channel,
            deadline,
        )
        .await;
        timing.end(&acquired);
        Ok(acquired?.map(|pending| pending.take().permits).is_some())
    }

    /// Gives `permits` back (to anyone: permits are not owned) and wakes that many
    /// waiters, or hands them to a waiter of this client queued for exactly that
    /// many (handoff.rs); returns the free permits right after. Once per call even
    /// if a reply is lost.
    pub async fn release(&self, permits: u64) -> Result<u64> {
        validate::count("permits", permits, 1)?;
        let ctx = self.inner.ctx.clone();
        to_completion(&ctx, handoff::release(self.clone(), permits)).await
    }

    /// The free permits now (0 for a semaphore that does not exist).
    pub async fn available(&self) -> Result<u64> {
        self.inner.read(&self.context("reading"), "a number of permits").await
    }

    /// Takes every free permit (Redisson's `drainPermits`); returns how many. Not
    /// retried after a lost reply (the count it took would be lost with it).
    pub async fn drain(&self) -> Result<u64> {
        let ctx = &self.inner.ctx;
        let mut conn = ctx.conn()?;
        let drained: i64 = scripts::SEMAPHORE_DRAIN
            .key(&self.inner.names.name)
            .invoke_async(&mut conn)
            .await
            .map_err(|e| Error::from_redis(&e, &self.context("draining")))?;
        Ok(drained.max(0) as u64)
    }
}

impl Permits {
    /// How many permits these are.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Gives them back now; returns the free permits right after.
    pub async fn release(mut self) -> Result<u64> {
        self.done = true;
        self.semaphore.release(self.count).await
    }

    /// Keeps them taken: someone must [`Semaphore::release`] them later.
    pub fn forget(mut self) -> u64 {
        self.done = true;
        self.count
    }
}

impl Drop for Permits {
    fn drop(&mut self) {
        if !self.done {
            give_back_later(self.semaphore.clone(), self.count);
        }
    }
}

fn give_back_later(semaphore: Semaphore, permits: u64) {
    let runtime = semaphore.inner.ctx.runtime.clone();
    runtime.spawn(async move {
        if let Err(e) = semaphore.release(permits).await {
            tracing::warn!(semaphore = %semaphore.name(), "could not give back {permits} permit(s): {e}");
        }
    });
}

/// Permits on their way to a caller: given back if nobody takes them.
pub(crate) struct Taken {
    semaphore: Semaphore,
    permits: u64,
}

impl Undo for Taken {
    fn undo(self) {
        tracing::debug!(semaphore = %self.semaphore.name(), "acquire abandoned by its caller; giving the permits back");
        give_back_later(self.semaphore, self.permits);
    }
}

/// One acquire as the waiting engine drives it. Queued, it offers a [`Waiting`]
/// that a release of this client may hand its permits to.
struct Take<'a> {
    semaphore: &'a Semaphore,
    permits: u64,
    /// Made when the acquire starts waiting (the uncontended path needs none).
    waiting: OnceLock<Arc<Waiting>>,
}

impl waiting::Acquire for Take<'_> {
    type Output = Pending<Taken>;

    fn attempt(&self) -> impl std::future::Future<Output = Result<Attempt<Pending<Taken>>>> + Send {
        let semaphore = self.semaphore.clone();
        let permits = self.permits;
        async move {
            let ctx = semaphore.inner.ctx.clone();
            to_completion(&ctx, take(semaphore, permits)).await
        }
    }

    fn successor(&self) -> Option<Arc<dyn Successor>> {
        Some(self.waiting.get_or_init(|| Waiting::new(self.permits)).clone())
    }

    fn handed(&self) -> Option<Pending<Taken>> {
        self.waiting.get()?.claim.take_handed()
    }

    fn begin_attempt(&self) -> bool {
        self.waiting.get().is_none_or(|w| w.claim.begin_attempt())
    }

    fn end_attempt(&self) {
        if let Some(w) = self.waiting.get() {
            w.claim.end_attempt();
        }
    }

    fn being_handed(&self) -> bool {
        self.waiting.get().is_some_and(|w| w.claim.is_claimed())
    }

    fn give_up(&self) -> bool {
        self.waiting.get().is_none_or(|w| w.claim.close())
    }
}

/// One try: a lost reply is asked again with the same request (its latch makes it
/// act once); if Redis cannot answer in time the caller gets `Connection` and a
/// resolver settles the request in the background. Not sent when the client knows
/// it would fail (`Known::Short`): a task that handed its permits to a waiter of its
/// own and comes straight back for more queues without the call, which always failed.
async fn take(semaphore: Semaphore, permits: u64) -> Result<Attempt<Pending<Taken>>> {
    let inner = &semaphore.inner;
    let ctx = &inner.ctx;
    let epoch = match ctx.hub.known(&inner.names.channel, permits) {
        Known::Short => return Ok(Attempt::Busy(None)),
        Known::Ask(epoch) => epoch,
    };
    let latch = inner.names.request_reply(ctx.next_request());
    let sent_at = Instant::now();
    let context = semaphore.context("acquiring permits of");
    let limit = sent_at + ctx.config.response_timeout * 2;
    let answered = if ctx.acknowledged() {
        acked::take_permits(&semaphore, permits, &latch, &context, limit).await
    } else {
        let mut call = scripts::SEMAPHORE_ACQUIRE.prepare_invoke();
        call.key(&inner.names.name).key(&latch).arg(permits).arg(latch_ttl_ms(ctx));
        until_answered::<i64>(ctx, &call, &context, limit).await
    };
    match answered {
        Ok(1 | 2) => {
            ctx.remove_latch_later(latch);
            Ok(Attempt::Acquired(Pending::new(Taken {
                semaphore: semaphore.clone(),
                permits,
            })))
        }
        Ok(_) => {
            if let Some(epoch) = epoch {
                ctx.hub.note_short(&inner.names.channel, epoch, permits);
            }
            Ok(Attempt::Busy(None))
        }
        Err(e) if e.kind() == ErrorKind::Connection => {
            let resolver = settle(
                semaphore.clone(),
                permits,
                latch,
                sent_at + latch_ttl(ctx) / 2,
            );
            ctx.runtime.spawn(resolver);
            Err(e)
        }
        Err(e) => Err(e),
    }
}

/// Settles an acquire whose reply never came (give_back.lua), trying until Redis
/// answers or the request's latch is about to expire.
async fn settle(semaphore: Semaphore, permits: u64, latch: Vec<u8>, until: Instant) {
    let ctx = &semaphore.inner.ctx;
    let mut call = scripts::SEMAPHORE_GIVE_BACK.prepare_invoke();
    call.key(&semaphore.inner.names.name)
        .key(&semaphore.inner.names.channel)
        .key(&latch)
        .arg(permits)
        .arg(ctx.transport.publish_command())
        .arg(latch_ttl_ms(ctx));
    match until_answered::<i64>(
        ctx,
        &call,
        &semaphore.context("settling an unanswered acquire of"),
        until,
    )
    .await
    {
        Ok(gave_back) => {
            if gave_back == 1 {
                tracing::info!(semaphore = %semaphore.name(), "an acquire whose reply was lost had taken {permits} permit(s); given back");
            }
            ctx.remove_latch_later(latch);
        }
        Err(e) => {
            tracing::warn!(semaphore = %semaphore.name(), "{e}; if that acquire took permits they stay taken")
        }
    }
}
