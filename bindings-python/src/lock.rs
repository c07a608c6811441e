//! `Holder`: one core lock handle = one holder (one owner field), native part of
//! `ferrolock.Lock` and `ferrolock.aio.Lock`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use ferrolock::{AcquireOptions, ErrorKind, LockOptions, Quorum};
use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::call::{twin_methods, Guarded};
use crate::shared::Shared;
use crate::errors::{seconds, PyResultExt};
use crate::runtime::{InPython, Local};

/// What a holder is, so that a forked child can make it again on its own client
/// (with the name and kind of the parent's handle, which it keeps).
enum Spec {
    One {
        client: Arc<Shared>,
        /// The holder id the caller chose (None: a fresh one from the client).
        holder_id: Option<u64>,
    },
    Multi { members: Vec<Py<Holder>>, quorum: Quorum },
}

/// What the holder made in a forked child is given again.
#[derive(Default)]
struct Rebind {
    on_lost: Option<ferrolock::LostCallback>,
    /// The label of its notes: the caller's thread or task name as Python gave it
    /// (the same string object, no copy per holder).
    label: Option<Py<PyString>>,
}

/// One holder of one lock (native part of `ferrolock.Lock` / `ferrolock.aio.Lock`).
/// Re-entrant: the holder may acquire again and must release as often.
///
/// In a forked child the parent's core lock cannot run: the holder makes itself
/// again on first use, on the child's client (a new owner field, holding nothing),
/// and keeps its on-lost callback.
#[pyclass(module = "ferrolock._native", frozen)]
pub(crate) struct Holder {
    bound: Mutex<Local<ferrolock::Lock>>,
    spec: Spec,
    rebind: Mutex<Rebind>,
}

impl Holder {
    pub(crate) fn single(lock: ferrolock::Lock, client: Arc<Shared>, holder_id: Option<u64>) -> Holder {
        Holder::new(lock, Spec::One { client, holder_id })
    }

    fn new(lock: ferrolock::Lock, spec: Spec) -> Holder {
        Holder { bound: Mutex::new(Local::new(lock)), spec, rebind: Mutex::default() }
    }

    fn rebind(&self) -> std::sync::MutexGuard<'_, Rebind> {
        self.rebind.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn bound(&self) -> std::sync::MutexGuard<'_, Local<ferrolock::Lock>> {
        self.bound.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The core lock if it belongs to this process (no rebinding).
    fn here(&self) -> Option<ferrolock::Lock> {
        let bound = self.bound();
        (!bound.is_foreign()).then(|| ferrolock::Lock::clone(&bound))
    }

    /// ClientClosedError if its client (a multi-lock: any member's) was closed.
    fn check_open(&self) -> PyResult<()> {
        match &self.spec {
            Spec::One { client, .. } => client.check_open(),
            Spec::Multi { members, .. } => members.iter().try_for_each(|m| m.get().check_open()),
        }
    }

    /// A copy of the handle (the same holder) for a call to own; made again on the
    /// child's client after a fork.
    fn handle(&self) -> PyResult<ferrolock::Lock> {
        self.check_open()?;
        if let Some(lock) = self.here() {
            return Ok(lock);
        }
        let lock = match &self.spec {
            Spec::One { client, holder_id } => {
                let (name, kind) = {
                    let bound = self.bound();
                    (bound.name().to_string(), bound.kind())
                };
                let client = Python::attach(|py| client.client(py))?;
                let id = holder_id.unwrap_or_else(|| client.new_holder_id());
                client.lock_with(&name, LockOptions { holder_id: Some(id), ..LockOptions::kind(kind) }).py()?
            }
            Spec::Multi { members, quorum } => {
                let locks = members.iter().map(|m| m.get().handle()).collect::<PyResult<Vec<_>>>()?;
                ferrolock::Lock::multi(locks, *quorum).py()?
            }
        };
        // Read before taking `bound`: another thread may hold the GIL and wait for it.
        let label = Python::attach(|py| {
            let rebind = self.rebind();
            rebind.label.as_ref().map(|l| l.bind(py).to_str().map(str::to_string)).transpose()
        })?;
        let mut bound = self.bound();
        if !bound.is_foreign() {
            return Ok(ferrolock::Lock::clone(&bound)); // another thread was first
        }
        lock.set_on_lost(self.rebind().on_lost.clone());
        // Accepted once already: it cannot fail.
        let _ = lock.set_holder_label(label.as_deref().map(cut_label));
        *bound = Local::new(lock.clone());
        Ok(lock)
    }
}

fn options(wait: Option<f64>, lease: Option<f64>) -> PyResult<AcquireOptions> {
    Ok(AcquireOptions { wait: seconds(wait, "timeout")?, lease: seconds(lease, "lease")? })
}

/// `Holder.status()` as Python gets it (see there).
type Status = (String, Vec<crate::who::Holder>, Option<f64>, u64, Option<u64>, Option<String>);

/// Longest holder label the core keeps, in bytes.
const MAX_LABEL: usize = 600;

/// `label` cut to `MAX_LABEL` bytes (at a character boundary).
fn cut_label(label: &str) -> &str {
    let mut end = label.len().min(MAX_LABEL);
    while !label.is_char_boundary(end) {
        end -= 1;
    }
    &label[..end]
}

fn lease_seconds(d: Option<Duration>) -> Option<f64> {
    d.map(|d| if d == Duration::MAX { f64::INFINITY } else { d.as_secs_f64() })
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
                let (lock, again) = (self.handle()?, self.handle()?);
                Guarded {
                    take: async move { Ok(lock.acquire_hold(options).await?.map(|_| ())) },
                    undo: |()| async move {
                        let _ = again.release().await;
                    },
                    present: |acquired: Option<()>| acquired.is_some(),
                }
            }

            /// Releases one level. True when the lock is free now, False when this holder
            /// still holds it (re-entered). NotOwnedError / LockLostError otherwise.
            fn release | release_async (&self) -> bool {
                let lock = self.handle()?;
                async move { lock.release().await.map(|r| r == ferrolock::Released::Unlocked) }
            }

            /// Ends this holder's hold at least `min_hold` seconds after it was taken: now
            /// (every level) once it lasted that long, else it is left to expire then
            /// (nothing renews or releases it). None when released now, else the
            /// seconds it stays held. Errors as `release`.
            fn release_min_hold | release_min_hold_async (&self, min_hold: f64) -> Option<f64> {
                let min_hold = seconds(Some(min_hold), "min_hold")?.unwrap_or_default();
                let lock = self.handle()?;
                async move { Ok(lock.release_min_hold(min_hold).await?.map(|d| d.as_secs_f64())) }
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

            /// Adds `by` seconds to what is left of this holder's explicit lease; returns
            /// the seconds left now. NotOwnedError if it holds nothing, LockLostError if
            /// its hold was lost, InvalidArgumentError for a watchdog-renewed hold.
            fn extend | extend_async (&self, by: f64) -> f64 {
                let by = seconds(Some(by), "additional")?.unwrap_or_default();
                let lock = self.handle()?;
                async move { lock.extend(by).await.map(|d| d.as_secs_f64()) }
            }

            /// Replaces what is left of this holder's explicit lease with `lease`
            /// seconds; returns it. Errors as `extend`.
            fn set_lease | set_lease_async (&self, lease: f64) -> f64 {
                let lease = seconds(Some(lease), "additional")?.unwrap_or_default();
                let lock = self.handle()?;
                async move { lock.set_lease(lease).await.map(|d| d.as_secs_f64()) }
            }

            /// Resets this holder's explicit lease to the one its hold was taken with;
            /// returns it in seconds. Errors as `extend`.
            fn reacquire | reacquire_async (&self) -> f64 {
                let lock = self.handle()?;
                async move { lock.reacquire().await.map(|d| d.as_secs_f64()) }
            }

            /// Leaves `info` (<= 1024 bytes; None removes it) beside this holder's hold,
            /// shown by `status`. NotOwnedError if it does not hold the lock.
            fn set_holder_info | set_holder_info_async (&self, info: Option<String>) -> () {
                let lock = self.handle()?;
                async move { lock.set_holder_info(info.as_deref()).await }
            }

            /// The lock as the server sees it: `(name, [holder (who.rs)],
            /// remaining lease in seconds or None (inf: no expiry), subscribed clients,
            /// last fencing token or None, the server's eviction policy when it may
            /// evict the lock or None)`. InvalidArgumentError for a multi-lock.
            fn status | status_async (&self) -> Status {
                let lock = self.handle()?;
                async move {
                    let s = lock.status().await?;
                    let holders: Vec<_> = s.holders.iter().map(crate::who::holder).collect();
                    Ok((s.name, holders, lease_seconds(s.remaining_lease), s.subscribers, s.last_token, s.eviction_policy))
                }
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
            let members = members.into_iter().map(Bound::unbind).collect();
            Ok(Holder::new(lock, Spec::Multi { members, quorum }))
        }

        /// Names this holder's thread or task in its notes from its next hold on
        /// (cut to 600 bytes; None removes it; a multi-lock: every member's).
        /// No round-trip: the Python layer calls it when the name changed.
        fn set_holder_label(&self, label: Option<Bound<'_, PyString>>) -> PyResult<()> {
            let text = label.as_ref().map(|l| l.to_str()).transpose()?;
            self.handle()?.set_holder_label(text.map(cut_label)).py()?;
            self.rebind().label = label.map(Bound::unbind);
            Ok(())
        }

        /// Who held the lock when this holder's latest acquire with a wait timed
        /// out, as `status` gives holders (who.rs); None if it was free by then,
        /// could not be read, or no such acquire timed out.
        fn last_holder(&self) -> Option<crate::who::Holder> {
            self.here().and_then(|l| l.last_holder()).as_ref().map(crate::who::holder)
        }

        /// A multi-lock: how many of its members it needs (None for a single lock).
        #[getter]
        fn quorum(&self) -> Option<usize> {
            let bound = self.bound();
            bound.quorum().map(|q| q.of(bound.members().len()))
        }

        /// This holder's hold count as known locally (no round-trip; 0 in a forked
        /// child until it acquires there).
        fn local_hold_count(&self) -> u32 {
            self.here().map_or(0, |l| l.local_hold_count())
        }

        /// True if this holder's latest hold was lost (until it acquires again).
        #[getter]
        fn lost(&self) -> bool {
            self.here().is_some_and(|l| l.is_lost())
        }

        /// Why this holder's latest hold was lost, or None.
        #[getter]
        fn lost_reason(&self) -> Option<String> {
            self.here().and_then(|l| l.lost_error()).map(|e| e.message().to_string())
        }

        /// Fencing token of this holder's current hold (fenced locks), or None.
        #[getter]
        fn token(&self) -> Option<u64> {
            self.here().and_then(|l| l.token())
        }

        /// The lock name (a multi-lock: its members' names joined by ",").
        #[getter]
        fn name(&self) -> String {
            self.bound().name().to_string()
        }

        /// The owner field this holder writes: `<client id>:<holder id>`.
        #[getter]
        fn owner(&self) -> String {
            self.bound().owner().to_string()
        }

        /// The lock's kind, by name: "reentrant", "fenced", "fair", "read" or "write".
        #[getter]
        fn kind(&self) -> &'static str {
            self.bound().kind().as_str()
        }

        /// True for fenced locks.
        #[getter]
        fn fenced(&self) -> bool {
            self.bound().is_fenced()
        }

        /// Calls `callback(message, reason)` from a background thread whenever a hold
        /// of this holder is lost (`message`: the full LockLostError message, `reason`:
        /// why alone); None removes it. Exceptions it raises are reported as unraisable.
        #[pyo3(signature = (callback))]
        fn set_on_lost(&self, callback: Option<Py<PyAny>>) -> PyResult<()> {
            let callback = callback.map(|cb| -> ferrolock::LostCallback {
                Arc::new(move |event: &ferrolock::LostEvent| {
                    let _busy = InPython::enter();
                    let message = event.error.message().to_string();
                    let reason = event.reason.clone();
                    // Not while the interpreter is shutting down.
                    let _ = Python::try_attach(|py| {
                        if let Err(e) = cb.call1(py, (message, reason)) {
                            e.write_unraisable(py, None);
                        }
                    });
                })
            });
            self.rebind().on_lost = callback.clone();
            if let Some(lock) = self.here() {
                lock.set_on_lost(callback);
            }
            Ok(())
        }

        fn __repr__(&self) -> String {
            let bound = self.bound();
            format!("<ferrolock._native.Holder name={:?} owner={}>", bound.name(), bound.owner())
        }
    }
}
