//! The counters (native part of `ferrolock.Semaphore`, `ferrolock.PermitExpirableSemaphore`,
//! `ferrolock.CountDownLatch` and their asyncio twins): the semaphore, the
//! permit-expirable semaphore and the count-down latch. Permits and counts are
//! nobody's, so unlike a `Holder` these keep no identity: each call makes a core
//! handle (cheap) on the client of the current process, which is all a forked
//! child needs.

use std::sync::Arc;

use pyo3::prelude::*;

use crate::call::{twin_methods, Guarded};
use crate::shared::Shared;
use crate::errors::{seconds, PyResultExt};

/// Which counter a [`Counter`] is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    Semaphore,
    Permits,
    Latch,
}

/// One counter name on one client: its calls make core handles as they go.
struct Counter {
    client: Arc<Shared>,
    name: String,
}

impl Counter {
    /// Checks the name now (InvalidArgumentError), as the core handle would.
    fn new(py: Python<'_>, client: Arc<Shared>, name: &str, shape: Shape) -> PyResult<Counter> {
        let core = client.client(py)?;
        match shape {
            Shape::Semaphore => core.semaphore(name).map(drop),
            Shape::Permits => core.permit_expirable_semaphore(name).map(drop),
            Shape::Latch => core.count_down_latch(name).map(drop),
        }
        .py()?;
        Ok(Counter { client, name: name.to_string() })
    }

    fn core(&self) -> PyResult<ferrolock::Client> {
        Python::attach(|py| self.client.client(py))
    }
}

/// A semaphore (Redisson's `RSemaphore`): permits that are nobody's.
#[pyclass(module = "ferrolock._native", frozen)]
pub(crate) struct Semaphore(Counter);

impl Semaphore {
    pub(crate) fn new(py: Python<'_>, client: Arc<Shared>, name: &str) -> PyResult<Semaphore> {
        Counter::new(py, client, name, Shape::Semaphore).map(Semaphore)
    }

    fn handle(&self) -> PyResult<ferrolock::Semaphore> {
        self.0.core()?.semaphore(&self.0.name).py()
    }
}

twin_methods! {
    impl Semaphore {
        twins {
            /// Gives the semaphore `permits` free permits if it does not exist yet; False
            /// if it exists (its count is left alone).
            fn try_set_permits | try_set_permits_async (&self, permits: u64) -> bool {
                let sem = self.handle()?;
                async move { sem.try_set_permits(permits).await }
            }

            /// Takes `permits` free permits, waiting at most `wait` seconds (0 = try once,
            /// None = as long as it takes). True when taken. Interrupted or cancelled, it
            /// takes nothing.
            #[pyo3(signature = (permits, wait=None))]
            fn acquire | acquire_async (&self, permits: u64, wait: Option<f64>) -> bool {
                let wait = seconds(wait, "timeout")?;
                let (sem, again) = (self.handle()?, self.handle()?);
                Guarded {
                    take: async move { Ok(sem.acquire_permits(permits, wait).await?.then_some(())) },
                    undo: move |()| async move {
                        let _ = again.release(permits).await;
                    },
                    present: |taken: Option<()>| taken.is_some(),
                }
            }

            /// Gives `permits` back (anyone may) and wakes as many waiters; returns the
            /// free permits right after.
            fn release | release_async (&self, permits: u64) -> u64 {
                let sem = self.handle()?;
                async move { sem.release(permits).await }
            }

            /// The free permits now (0 for a semaphore that does not exist).
            fn available | available_async (&self) -> u64 {
                let sem = self.handle()?;
                async move { sem.available().await }
            }

            /// Takes every free permit; returns how many.
            fn drain | drain_async (&self) -> u64 {
                let sem = self.handle()?;
                async move { sem.drain().await }
            }
        }

        /// The semaphore's name.
        #[getter]
        fn name(&self) -> String {
            self.0.name.clone()
        }
    }
}

/// A permit-expirable semaphore (Redisson's `RPermitExpirableSemaphore`): permits
/// with ids and optional leases.
#[pyclass(module = "ferrolock._native", frozen)]
pub(crate) struct PermitSemaphore(Counter);

impl PermitSemaphore {
    pub(crate) fn new(py: Python<'_>, client: Arc<Shared>, name: &str) -> PyResult<PermitSemaphore> {
        Counter::new(py, client, name, Shape::Permits).map(PermitSemaphore)
    }

    fn handle(&self) -> PyResult<ferrolock::PermitExpirableSemaphore> {
        self.0.core()?.permit_expirable_semaphore(&self.0.name).py()
    }
}

twin_methods! {
    impl PermitSemaphore {
        twins {
            /// Gives the semaphore `permits` free permits if it does not exist yet; False if it does.
            fn try_set_permits | try_set_permits_async (&self, permits: u64) -> bool {
                let sem = self.handle()?;
                async move { sem.try_set_permits(permits).await }
            }

            /// Takes a permit, waiting at most `wait` seconds (0 = try once, None = as long
            /// as it takes); with `lease` seconds it comes back by itself after that.
            /// The permit's id (32 hex digits), or None when none was free in time.
            /// Interrupted or cancelled, it takes nothing.
            #[pyo3(signature = (wait=None, lease=None))]
            fn acquire | acquire_async (&self, wait: Option<f64>, lease: Option<f64>) -> Option<String> {
                let (wait, lease) = (seconds(wait, "timeout")?, seconds(lease, "lease")?);
                let (sem, again) = (self.handle()?, self.handle()?);
                Guarded {
                    // The id is all Python keeps: the core's guard is forgotten at once.
                    take: async move { Ok(sem.acquire_with(wait, lease).await?.map(|p| p.forget())) },
                    undo: |id: String| async move {
                        let _ = again.release(&id).await;
                    },
                    present: |id: Option<String>| id,
                }
            }

            /// Releases the permit `id` (anyone may): True if it was out and in time,
            /// False if it had expired or was released already. InvalidArgumentError for
            /// an id that is not 32 hex digits.
            fn release | release_async (&self, id: String) -> bool {
                let sem = self.handle()?;
                async move { sem.release(&id).await }
            }

            /// The free permits now, after taking back the expired ones.
            fn available | available_async (&self) -> u64 {
                let sem = self.handle()?;
                async move { sem.available().await }
            }
        }

        /// The semaphore's name.
        #[getter]
        fn name(&self) -> String {
            self.0.name.clone()
        }
    }
}

/// A count-down latch (Redisson's `RCountDownLatch`).
#[pyclass(module = "ferrolock._native", frozen)]
pub(crate) struct Latch(Counter);

impl Latch {
    pub(crate) fn new(py: Python<'_>, client: Arc<Shared>, name: &str) -> PyResult<Latch> {
        Counter::new(py, client, name, Shape::Latch).map(Latch)
    }

    fn handle(&self) -> PyResult<ferrolock::CountDownLatch> {
        self.0.core()?.count_down_latch(&self.0.name).py()
    }
}

twin_methods! {
    impl Latch {
        twins {
            /// Sets the count (1 or more) of a latch that is open; False if it is still
            /// counting down (its count is left alone).
            fn try_set_count | try_set_count_async (&self, count: u64) -> bool {
                let latch = self.handle()?;
                async move { latch.try_set_count(count).await }
            }

            /// Counts down by one (at 0 the latch opens and wakes every waiter); returns
            /// the count left.
            fn count_down | count_down_async (&self) -> u64 {
                let latch = self.handle()?;
                async move { latch.count_down().await }
            }

            /// The count now (0: open).
            fn count | count_async (&self) -> u64 {
                let latch = self.handle()?;
                async move { latch.count().await }
            }

            /// Waits until the latch is open, at most `wait` seconds (None = as long as it
            /// takes). True once open, False at the deadline.
            #[pyo3(signature = (wait=None))]
            fn wait | wait_async (&self, wait: Option<f64>) -> bool {
                let wait = seconds(wait, "timeout")?;
                let latch = self.handle()?;
                async move { latch.wait(wait).await }
            }
        }

        /// The latch's name.
        #[getter]
        fn name(&self) -> String {
            self.0.name.clone()
        }
    }
}
