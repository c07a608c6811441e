//! `Holder`: one core lock handle = one holder (one owner field), native part of
//! `ferrolock.Lock` and `ferrolock.aio.Lock`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use ferrolock::{AcquireOptions, ErrorKind, Quorum};
use pyo3::prelude::*;

use crate::call::{twin_methods, Call};
use crate::errors::{seconds, PyResultExt};
use crate::runtime::{self, InPython, Local};

/// One holder of one lock (native part of `ferrolock.Lock` / `ferrolock.aio.Lock`).
/// Re-entrant: the holder may acquire again and must release as often.
#[pyclass(module = "ferrolock._native", frozen)]
pub(crate) struct Holder {
    lock: Local<ferrolock::Lock>,
    client: Local<ferrolock::Client>,
}

impl Holder {
    pub(crate) fn new(lock: ferrolock::Lock, client: ferrolock::Client) -> Holder {
        Holder { lock: Local::new(lock), client: Local::new(client) }
    }

    /// Usable only in the process that created it (fork: raises InvalidArgumentError).
    fn live(&self) -> PyResult<&ferrolock::Lock> {
        self.client.check_process().py()?;
        Ok(&self.lock)
    }

    /// A copy of the handle (the same holder) for a call to own.
    fn handle(&self) -> PyResult<ferrolock::Lock> {
        self.live().cloned()
    }
}

fn options(wait: Option<f64>, lease: Option<f64>) -> PyResult<AcquireOptions> {
    Ok(AcquireOptions { wait: seconds(wait, "timeout")?, lease: seconds(lease, "lease")? })
}

fn lease_seconds(d: Option<Duration>) -> Option<f64> {
    d.map(|d| if d == Duration::MAX { f64::INFINITY } else { d.as_secs_f64() })
}

// ---------------------------------------------------------------------------
// Acquire: as an asyncio future, it must not leave behind an acquisition that
// nobody sees.

/// An acquire, as a [`Call`]. The asyncio future may be cancelled after the core
/// acquired but before the result reached it: then the caller got CancelledError,
/// so that level is released again.
struct Acquire {
    lock: ferrolock::Lock,
    options: AcquireOptions,
}

impl Acquire {
    async fn run(lock: &ferrolock::Lock, options: AcquireOptions) -> ferrolock::Result<bool> {
        lock.acquire_hold(options).await.map(|hold| hold.is_some())
    }
}

/// Where an asyncio acquire stands, to undo an acquisition nobody will see.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ticket {
    Pending,
    Acquired,
    /// The asyncio future was cancelled before the acquisition completed.
    Abandoned,
    Undone,
}

impl Call for Acquire {
    type Output = bool;

    fn wait(self, py: Python<'_>) -> PyResult<bool> {
        // Dropped when interrupted: the core leaves nothing held.
        async move { Acquire::run(&self.lock, self.options).await }.wait(py)
    }

    fn future(self, py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
        let Acquire { lock, options } = self;
        let ticket = Arc::new(Mutex::new(Ticket::Pending));
        let (ticket2, lock2) = (ticket.clone(), lock.clone());
        let future = async move {
            if !Acquire::run(&lock2, options).await? {
                return Ok(false);
            }
            let abandoned = {
                let mut t = ticket2.lock().unwrap();
                let abandoned = *t == Ticket::Abandoned;
                *t = if abandoned { Ticket::Undone } else { Ticket::Acquired };
                abandoned
            };
            if abandoned {
                // Nobody awaits this acquisition any more: give it back.
                let _ = lock2.release().await;
                return Ok(false);
            }
            Ok(true)
        }
        .future(py)?;
        future.call_method1("add_done_callback", (UndoOnCancel { ticket, lock },))?;
        Ok(future)
    }
}

/// Done-callback of an asyncio acquire: if the asyncio future was cancelled after
/// the core acquired, release that level (the caller got CancelledError).
#[pyclass(module = "ferrolock._native", frozen)]
pub(crate) struct UndoOnCancel {
    ticket: Arc<Mutex<Ticket>>,
    lock: ferrolock::Lock,
}

#[pymethods]
impl UndoOnCancel {
    fn __call__(&self, future: &Bound<'_, PyAny>) -> PyResult<()> {
        if !future.call_method0("cancelled")?.extract::<bool>()? {
            return Ok(());
        }
        let mut ticket = self.ticket.lock().unwrap();
        match *ticket {
            Ticket::Pending => *ticket = Ticket::Abandoned,
            Ticket::Acquired => {
                *ticket = Ticket::Undone;
                let lock = self.lock.clone();
                runtime::runtime()?.spawn(async move {
                    let _ = lock.release().await;
                });
            }
            Ticket::Abandoned | Ticket::Undone => {}
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// The methods.

twin_methods! {
    impl Holder {
        twins {
            /// Acquires. `wait`: longest wait in seconds (0 = try once, None = forever).
            /// `lease`: seconds until the lock expires with no renewal (None = watchdog).
            /// True when acquired. Interrupted or cancelled, it leaves nothing held.
            #[pyo3(signature = (wait=None, lease=None))]
            fn acquire | acquire_async (&self, wait: Option<f64>, lease: Option<f64>) -> bool {
                let options = options(wait, lease)?;
                Acquire { lock: self.handle()?, options }
            }

            /// Releases one level. True when the lock is free now, False when this holder
            /// still holds it (re-entered). NotOwnedError / LockLostError otherwise.
            fn release | release_async (&self) -> bool {
                let lock = self.handle()?;
                async move { lock.release().await.map(|r| r == ferrolock::Released::Unlocked) }
            }

            /// True if anyone holds the lock (asks Redis).
            fn is_locked | is_locked_async (&self) -> bool {
                let lock = self.handle()?;
                async move { lock.is_locked().await }
            }

            /// True if this holder holds the lock, as Redis sees it.
            fn is_held | is_held_async (&self) -> bool {
                let lock = self.handle()?;
                async move { lock.is_held().await }
            }

            /// This holder's hold count as Redis sees it (0: not held by this holder).
            fn hold_count | hold_count_async (&self) -> u32 {
                let lock = self.handle()?;
                async move { lock.hold_count().await }
            }

            /// Seconds left on the lock's lease (whoever holds it); None when not locked,
            /// inf for a key without expiry.
            fn remaining_lease | remaining_lease_async (&self) -> Option<f64> {
                let lock = self.handle()?;
                async move { lock.remaining_lease().await.map(lease_seconds) }
            }

            /// Deletes the lock whoever holds it and wakes a waiter. True if it was locked.
            fn force_unlock | force_unlock_async (&self) -> bool {
                let lock = self.handle()?;
                async move { lock.force_unlock().await }
            }
        }

        /// A multi-lock over the holders `members` (single locks, usually one name on
        /// several independent clients): held while `quorum` of them are held,
        /// `"majority"` (Redlock, N/2+1) or `"all"` (MultiLock). Its holder is its
        /// members' holders: acquiring it again re-enters every member. It has no
        /// fencing token, and the status queries (`is_locked`, `hold_count`, ...) raise
        /// InvalidArgumentError (ask each member). InvalidArgumentError for no member,
        /// a member twice (one client and name), or an unknown quorum.
        #[staticmethod]
        fn multi(members: Vec<Bound<'_, Holder>>, quorum: &str) -> PyResult<Holder> {
            let quorum = match quorum {
                "majority" => Quorum::Majority,
                "all" => Quorum::All,
                other => {
                    let message = format!("unknown quorum {other:?}: expected \"majority\" or \"all\"");
                    return Err(ferrolock::Error::new(ErrorKind::InvalidArgument, message)).py();
                }
            };
            let locks = members.iter().map(|m| m.get().handle()).collect::<PyResult<Vec<_>>>()?;
            let lock = ferrolock::Lock::multi(locks, quorum).py()?;
            // Not empty (checked by the core): the fork check follows the first member's client.
            let client = ferrolock::Client::clone(&members[0].get().client);
            Ok(Holder::new(lock, client))
        }

        /// A multi-lock: how many of its members it needs (None for a single lock).
        #[getter]
        fn quorum(&self) -> Option<usize> {
            self.lock.quorum().map(|q| q.of(self.lock.members().len()))
        }

        /// This holder's hold count as known locally (no round-trip).
        fn local_hold_count(&self) -> u32 {
            self.lock.local_hold_count()
        }

        /// True if this holder's latest hold was lost (until it acquires again).
        #[getter]
        fn lost(&self) -> bool {
            self.lock.is_lost()
        }

        /// Why this holder's latest hold was lost, or None.
        #[getter]
        fn lost_reason(&self) -> Option<String> {
            self.lock.lost_error().map(|e| e.message().to_string())
        }

        /// Fencing token of this holder's current hold (fenced locks), or None.
        #[getter]
        fn token(&self) -> Option<u64> {
            self.lock.token()
        }

        /// The lock name (a multi-lock: its members' names joined by ",").
        #[getter]
        fn name(&self) -> &str {
            self.lock.name()
        }

        /// The owner field this holder writes: `<client id>:<holder id>`.
        #[getter]
        fn owner(&self) -> &str {
            self.lock.owner()
        }

        /// The lock's kind, by name: "reentrant" or "fenced".
        #[getter]
        fn kind(&self) -> &'static str {
            self.lock.kind().as_str()
        }

        /// True for fenced locks.
        #[getter]
        fn fenced(&self) -> bool {
            self.lock.is_fenced()
        }

        /// Calls `callback(message)` from a background thread whenever a hold of this
        /// holder is lost; None removes it. Exceptions it raises are reported as unraisable.
        #[pyo3(signature = (callback))]
        fn set_on_lost(&self, callback: Option<Py<PyAny>>) -> PyResult<()> {
            let lock = self.live()?;
            let callback = callback.map(|cb| -> ferrolock::LostCallback {
                let cb = Arc::new(cb);
                Arc::new(move |event: &ferrolock::LostEvent| {
                    let _busy = InPython::enter();
                    let message = event.error.message().to_string();
                    // Not while the interpreter is shutting down.
                    let _ = Python::try_attach(|py| {
                        if let Err(e) = cb.call1(py, (message,)) {
                            e.write_unraisable(py, None);
                        }
                    });
                })
            });
            lock.set_on_lost(callback);
            Ok(())
        }

        fn __repr__(&self) -> String {
            format!("<ferrolock._native.Holder name={:?} owner={}>", self.lock.name(), self.lock.owner())
        }
    }
}
