//! Redisson's `RCountDownLatch`: a string key holding the count, deleted when it
//! reaches 0, and the channel `redisson_countdownlatch__channel__{n}` (written
//! literally, braces or not) carrying `1` when a count is set and `0` when the
//! latch opens, which wakes every waiter. A latch that does not exist is open.
//! Waiting goes through the shared engine (crate::waiting): GET, subscribe, GET
//! again, then woken by the opening message; no polling.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::ctx::{Alive, Ctx};
use crate::error::Result;
use crate::hold::pending::to_completion;
use crate::names::CounterNames;
use crate::request::{latch_ttl_ms, until_answered};
use crate::scripts;
use crate::semaphore::Counter;
use crate::validate;
use crate::waiting::{self, Attempt, Policy};

/// A handle on one count-down latch. Cheap to clone; every clone is the same latch.
#[derive(Clone)]
pub struct CountDownLatch {
    inner: Arc<Counter>,
}

impl std::fmt::Debug for CountDownLatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CountDownLatch")
            .field("name", &self.name())
            .finish()
    }
}

impl CountDownLatch {
    pub(crate) fn new(ctx: Arc<Ctx>, name: &[u8], alive: Arc<Alive>) -> Result<CountDownLatch> {
        let counter = Counter::new(ctx, CounterNames::count_down_latch(name), alive, "count-down latch")?;
        Ok(CountDownLatch { inner: Arc::new(counter) })
    }

    /// The latch's name (lossy UTF-8).
    pub fn name(&self) -> &str {
        &self.inner.names.display
    }

    fn context(&self, what: &str) -> String {
        format!("{what} count-down latch \"{}\"", self.name())
    }

    /// Sets the count (1 or more) of a latch that is open (does not exist);
    /// `false` if it is still counting down (its count is left alone).
    pub async fn try_set_count(&self, count: u64) -> Result<bool> {
        validate::count("count", count, 1)?;
        let ctx = &self.inner.ctx;
        let mut call = scripts::LATCH_TRY_SET.prepare_invoke();
        call.key(&self.inner.names.name)
            .key(&self.inner.names.channel)
            .arg(count)
            .arg(ctx.transport.publish_command());
        // Setting a count acts once by itself: a retry finds it set.
        let limit = Instant::now() + ctx.config.retry_window;
        let set: i64 =
            until_answered(ctx, &call, &self.context("setting the count of"), limit).await?;
        Ok(set == 1)
    }

    /// Counts down by one; at 0 the latch opens and every waiter wakes. Returns the
    /// count left (0 for a latch that was open already). Once per call even if a
    /// reply is lost.
    pub async fn count_down(&self) -> Result<u64> {
        let inner = self.inner.clone();
        let ctx = inner.ctx.clone();
        let context = self.context("counting down");
        to_completion(&ctx, async move {
            let ctx = &inner.ctx;
            let latch = inner.names.request_reply(ctx.next_request());
            let mut call = scripts::LATCH_COUNT_DOWN.prepare_invoke();
            call.key(&inner.names.name)
                .key(&inner.names.channel)
                .key(&latch)
                .arg(ctx.transport.publish_command())
                .arg(latch_ttl_ms(ctx));
            let left: i64 = until_answered(
                ctx,
                &call,
                &context,
                Instant::now() + ctx.config.retry_window,
            )
            .await?;
            ctx.remove_latch_later(latch);
            Ok(left.max(0) as u64)
        })
        .await
    }

    /// The count now (0: open).
    pub async fn count(&self) -> Result<u64> {
        read_count(&self.inner, &self.context("reading")).await
    }

    /// Waits until the latch is open, at most `wait` (`None`: as long as it takes).
    /// `Ok(false)`: still counting down at the deadline. Dropping the future leaves
    /// the channel (its subscription ends 100 ms later unless another wait comes).
    pub async fn wait(&self, wait: Option<Duration>) -> Result<bool> {
        let deadline = wait
            .map(validate::wait)
            .transpose()?
            .map(|w| Instant::now() + w);
        let ctx = &self.inner.ctx;
        let channel = waiting::Channel {
            hub: &ctx.hub,
            name: &self.inner.names.channel,
            policy: Policy::Gate,
            shutdown: &ctx.shutdown,
        };
        let open = Open {
            latch: self,
            context: self.context("waiting on"),
        };
        Ok(waiting::acquire(&open, channel, deadline).await?.is_some())
    }
}

async fn read_count(inner: &Counter, context: &str) -> Result<u64> {
    inner.read(context, "a count").await
}

/// Waiting for the latch to open, as the waiting engine drives it: every waiter
/// tries at once and all wake together.
struct Open<'a> {
    latch: &'a CountDownLatch,
    context: String,
}

impl waiting::Acquire for Open<'_> {
    type Output = ();

    fn attempt(&self) -> impl std::future::Future<Output = Result<Attempt<()>>> + Send {
        let inner = self.latch.inner.clone();
        let context = self.context.clone();
        async move {
            Ok(match read_count(&inner, &context).await? {
                0 => Attempt::Acquired(()),
                _ => Attempt::Busy(None),
            })
        }
    }

    fn queue_behind(&self) -> bool {
        false
    }
}
