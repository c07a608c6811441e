//! The shapes that are not locks: the semaphore, the permit-expirable semaphore
//! and the count-down latch. Each is a thin handle over core's; what JS holds
//! (a permit set, a permit) is plain data in `lib/`, released through these handles
//! by count or by id, so taking or giving back permits is one call each way.
//! Core's guards (`Permits`, `Permit`) are never kept here: they would give back on
//! drop, and a JS object's garbage collection must not end anything.

use std::future::Future;

use napi::bindgen_prelude::PromiseRaw;
use napi::Env;
use napi_derive::napi;

use crate::cancel::{unless_aborted, Abort};
use crate::errors::{invalid, millis, IntoJs, Result};
use crate::executor::promise;

/// A whole number from JS (permits, a count): `min` to i64::MAX (Redis's integers).
/// JS numbers arrive as f64, so fractions and negatives are refused here, before
/// core's check on the u64.
fn whole(value: f64, what: &str, min: u64) -> Result<u64> {
    if !value.is_finite() || value.fract() != 0.0 || value < min as f64 {
        return Err(invalid(format!("{what} = {value} is out of range; give a whole number from {min} to {}", i64::MAX)));
    }
    ferrolock::validate::count(what, value as u64, min).js()
}

/// A u64 from core as a JS number (counts of permits stay far below 2^53).
fn num(n: u64) -> f64 {
    n as f64
}

/// What both semaphores' native classes do alike. A napi class has no base class,
/// so each class's method forwards to [`try_set_permits`] and [`available`].
trait AnySemaphore: Clone + Send + 'static {
    fn try_set(&self, permits: u64) -> impl Future<Output = ferrolock::Result<bool>> + Send + '_;
    fn free(&self) -> impl Future<Output = ferrolock::Result<u64>> + Send + '_;
}

impl AnySemaphore for ferrolock::Semaphore {
    fn try_set(&self, permits: u64) -> impl Future<Output = ferrolock::Result<bool>> + Send + '_ {
        self.try_set_permits(permits)
    }

    fn free(&self) -> impl Future<Output = ferrolock::Result<u64>> + Send + '_ {
        self.available()
    }
}

impl AnySemaphore for ferrolock::PermitExpirableSemaphore {
    fn try_set(&self, permits: u64) -> impl Future<Output = ferrolock::Result<bool>> + Send + '_ {
        self.try_set_permits(permits)
    }

    fn free(&self) -> impl Future<Output = ferrolock::Result<u64>> + Send + '_ {
        self.available()
    }
}

fn try_set_permits<'env>(env: &'env Env, sem: &impl AnySemaphore, permits: f64) -> napi::Result<PromiseRaw<'env, bool>> {
    let sem = sem.clone();
    promise(env, async move { sem.try_set(whole(permits, "permits", 0)?).await.js() })
}

fn available<'env>(env: &'env Env, sem: &impl AnySemaphore) -> napi::Result<PromiseRaw<'env, f64>> {
    let sem = sem.clone();
    promise(env, async move { sem.free().await.js().map(num) })
}

/// Redisson's `RSemaphore`: permits nobody owns.
#[napi]
pub struct NativeSemaphore {
    sem: ferrolock::Semaphore,
}

impl NativeSemaphore {
    pub(crate) fn new(sem: ferrolock::Semaphore) -> Self {
        NativeSemaphore { sem }
    }
}

#[napi]
impl NativeSemaphore {
    #[napi(getter)]
    pub fn name(&self) -> String {
        self.sem.name().to_string()
    }

    /// Sets `permits` free permits if the semaphore does not exist yet; false if it does.
    #[napi]
    pub fn try_set_permits<'env>(&self, env: &'env Env, permits: f64) -> napi::Result<PromiseRaw<'env, bool>> {
        try_set_permits(env, &self.sem, permits)
    }

    /// Takes `permits`, waiting at most `waitMs` (unbounded when absent); false when
    /// not taken in time. `cancelId` (from `newCancel`) aborts the wait, taking nothing.
    #[napi]
    pub fn acquire<'env>(
        &self,
        env: &'env Env,
        permits: f64,
        wait_ms: Option<f64>,
        cancel_id: Option<u32>,
    ) -> napi::Result<PromiseRaw<'env, bool>> {
        let abort = Abort::take(cancel_id);
        let sem = self.sem.clone();
        promise(env, async move {
            let (permits, wait) = (whole(permits, "permits", 1)?, millis(wait_ms, "waitMs")?);
            unless_aborted(abort, async { sem.acquire_permits(permits, wait).await.js() }).await
        })
    }

    /// Gives `permits` back (anyone may); resolves with the free permits right after.
    #[napi]
    pub fn release<'env>(&self, env: &'env Env, permits: f64) -> napi::Result<PromiseRaw<'env, f64>> {
        let sem = self.sem.clone();
        promise(env, async move { sem.release(whole(permits, "permits", 1)?).await.js().map(num) })
    }

    /// The free permits now (0 for a semaphore that does not exist).
    #[napi]
    pub fn available<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, f64>> {
        available(env, &self.sem)
    }

    /// Takes every free permit; resolves with how many.
    #[napi]
    pub fn drain<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, f64>> {
        let sem = self.sem.clone();
        promise(env, async move { sem.drain().await.js().map(num) })
    }
}

/// Redisson's `RPermitExpirableSemaphore`: permits with ids and optional leases.
#[napi]
pub struct NativePermitSemaphore {
    sem: ferrolock::PermitExpirableSemaphore,
}

impl NativePermitSemaphore {
    pub(crate) fn new(sem: ferrolock::PermitExpirableSemaphore) -> Self {
        NativePermitSemaphore { sem }
    }
}

#[napi]
impl NativePermitSemaphore {
    #[napi(getter)]
    pub fn name(&self) -> String {
        self.sem.name().to_string()
    }

    /// Sets `permits` free permits if the semaphore does not exist yet; false if it does.
    #[napi]
    pub fn try_set_permits<'env>(&self, env: &'env Env, permits: f64) -> napi::Result<PromiseRaw<'env, bool>> {
        try_set_permits(env, &self.sem, permits)
    }

    /// Takes a permit, waiting at most `waitMs` (unbounded when absent), with an
    /// optional lease; resolves with its id (32 hex digits), `null` when none was free
    /// in time. The permit stays out until released by id or its lease ends.
    #[napi]
    pub fn acquire<'env>(
        &self,
        env: &'env Env,
        wait_ms: Option<f64>,
        lease_ms: Option<f64>,
        cancel_id: Option<u32>,
    ) -> napi::Result<PromiseRaw<'env, Option<String>>> {
        let abort = Abort::take(cancel_id);
        let sem = self.sem.clone();
        promise(env, async move {
            let (wait, lease) = (millis(wait_ms, "waitMs")?, millis(lease_ms, "leaseMs")?);
            let taken = unless_aborted(abort, async { sem.acquire_with(wait, lease).await.js() }).await?;
            Ok(taken.map(|permit| permit.forget()))
        })
    }

    /// Releases the permit `id`: true if it was out and in time, false if it had
    /// expired (it came back anyway) or was released already.
    #[napi]
    pub fn release<'env>(&self, env: &'env Env, id: String) -> napi::Result<PromiseRaw<'env, bool>> {
        let sem = self.sem.clone();
        promise(env, async move { sem.release(&id).await.js() })
    }

    /// The free permits now, after the expired ones came back.
    #[napi]
    pub fn available<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, f64>> {
        available(env, &self.sem)
    }
}

/// Redisson's `RCountDownLatch`.
#[napi]
pub struct NativeLatch {
    latch: ferrolock::CountDownLatch,
}

impl NativeLatch {
    pub(crate) fn new(latch: ferrolock::CountDownLatch) -> Self {
        NativeLatch { latch }
    }
}

#[napi]
impl NativeLatch {
    #[napi(getter)]
    pub fn name(&self) -> String {
        self.latch.name().to_string()
    }

    /// Sets the count (1 or more) of an open latch; false if it is still counting down.
    #[napi]
    pub fn try_set_count<'env>(&self, env: &'env Env, count: f64) -> napi::Result<PromiseRaw<'env, bool>> {
        let latch = self.latch.clone();
        promise(env, async move { latch.try_set_count(whole(count, "count", 1)?).await.js() })
    }

    /// Counts down by one; resolves with the count left (0: open, every waiter woken).
    #[napi]
    pub fn count_down<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, f64>> {
        let latch = self.latch.clone();
        promise(env, async move { latch.count_down().await.js().map(num) })
    }

    /// The count now (0: open).
    #[napi]
    pub fn count<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, f64>> {
        let latch = self.latch.clone();
        promise(env, async move { latch.count().await.js().map(num) })
    }

    /// Waits until open, at most `waitMs` (unbounded when absent); false when still
    /// counting down then. `cancelId` aborts the wait.
    #[napi]
    pub fn wait<'env>(
        &self,
        env: &'env Env,
        wait_ms: Option<f64>,
        cancel_id: Option<u32>,
    ) -> napi::Result<PromiseRaw<'env, bool>> {
        let abort = Abort::take(cancel_id);
        let latch = self.latch.clone();
        promise(env, async move {
            let wait = millis(wait_ms, "waitMs")?;
            unless_aborted(abort, async { latch.wait(wait).await.js() }).await
        })
    }
}
