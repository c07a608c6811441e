//! `Election` and `Observer`: a core election candidate and an observer of its
//! leadership changes, native parts of `ferrolock.Election` and
//! `ferrolock.aio.Election` (python/ferrolock/_election.py). The candidate is the
//! election object itself (not a thread or task): the core's one holder.

use std::sync::{Arc, Mutex};

use ferrolock::ErrorKind;
use pyo3::prelude::*;

use crate::call::{twin_methods, Guarded};
use crate::shared::Shared;
use crate::errors::{seconds, PyResultExt};
use crate::runtime::{InPython, Local};

/// `(term, holder (who.rs), lease left in seconds or None)`: a leader as Python's
/// `ferrolock.Leader._from_native` reads it.
type LeaderTuple = (u64, crate::who::Holder, Option<f64>);

fn leader_tuple(leader: &ferrolock::Leader) -> LeaderTuple {
    (leader.term, crate::who::holder(&leader.holder), leader.lease_left.map(|d| d.as_secs_f64()))
}

/// What a candidate made again in a forked child is given again.
#[derive(Default)]
struct Rebind {
    on_lost: Option<ferrolock::LostCallback>,
    label: Option<String>,
}

/// One candidate of one election (native part of `ferrolock.Election`).
///
/// In a forked child the parent's candidate cannot run: it makes itself again on
/// first use, on the child's client (leading nothing), with its callback and label.
#[pyclass(module = "ferrolock._native", frozen)]
pub(crate) struct Election {
    bound: Mutex<Local<ferrolock::Election>>,
    client: Arc<Shared>,
    rebind: Mutex<Rebind>,
}

impl Election {
    pub(crate) fn new(py: Python<'_>, client: Arc<Shared>, name: &str) -> PyResult<Election> {
        let election = client.client(py)?.election(name).py()?;
        Ok(Election { bound: Mutex::new(Local::new(election)), client, rebind: Mutex::default() })
    }

    fn bound(&self) -> std::sync::MutexGuard<'_, Local<ferrolock::Election>> {
        self.bound.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn rebind(&self) -> std::sync::MutexGuard<'_, Rebind> {
        self.rebind.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The candidate if it belongs to this process (no remaking).
    fn here(&self) -> Option<ferrolock::Election> {
        let bound = self.bound();
        (!bound.is_foreign()).then(|| ferrolock::Election::clone(&bound))
    }

    /// A copy of the candidate for a call to own; made again after a fork.
    fn handle(&self) -> PyResult<ferrolock::Election> {
        self.client.check_open()?;
        if let Some(election) = self.here() {
            return Ok(election);
        }
        let name = self.bound().name().to_string();
        let client = Python::attach(|py| self.client.client(py))?;
        let election = client.election(&name).py()?;
        let mut bound = self.bound();
        if !bound.is_foreign() {
            return Ok(ferrolock::Election::clone(&bound)); // another thread was first
        }
        let rebind = self.rebind();
        election.set_on_lost(rebind.on_lost.clone());
        // Accepted once already: it cannot fail.
        let _ = election.set_label(rebind.label.as_deref());
        drop(rebind);
        *bound = Local::new(election.clone());
        Ok(election)
    }
}

twin_methods! {
    impl Election {
        twins {
            /// Campaigns until this candidate leads (`wait`: longest wait in seconds,
            /// 0 = one try, None = as long as it takes). The term when it leads, None
            /// when another led all along. Interrupted or cancelled, it leads nothing.
            #[pyo3(signature = (wait=None))]
            fn campaign | campaign_async (&self, wait: Option<f64>) -> Option<u64> {
                let wait = seconds(wait, "timeout")?;
                let (election, again) = (self.handle()?, self.handle()?);
                Guarded {
                    take: async move { Ok(election.campaign_hold(wait).await?.and_then(|hold| hold.token())) },
                    undo: |_term| async move {
                        let _ = again.resign().await;
                    },
                    present: |term: Option<u64>| term,
                }
            }

            /// Resigns: True if this candidate led, False if it did not (any more).
            fn resign | resign_async (&self) -> bool {
                let election = self.handle()?;
                async move { election.resign().await }
            }

            /// Who leads now: `(term, holder, lease left in seconds)`, or None.
            fn leader | leader_async (&self) -> Option<LeaderTuple> {
                let election = self.handle()?;
                async move { Ok(election.leader().await?.as_ref().map(leader_tuple)) }
            }

            /// An observer of this election's leadership changes, subscribed from now on.
            fn observe | observe_async (&self) -> Observer {
                let election = self.handle()?;
                async move {
                    let observer = election.observe().await?;
                    Ok(Observer { inner: Arc::new(tokio::sync::Mutex::new(Local::new(observer))) })
                }
            }
        }

        /// The election's name.
        #[getter]
        fn name(&self) -> String {
            self.bound().name().to_string()
        }

        /// The owner field this candidate writes: `<client id>:<holder id>`.
        #[getter]
        fn owner(&self) -> String {
            self.bound().lock().owner().to_string()
        }

        /// The term of this candidate's leadership while it leads (local view), else None.
        #[getter]
        fn term(&self) -> Option<u64> {
            self.here().and_then(|e| e.term())
        }

        /// True while this candidate leads (local view: until it resigns or learns of a loss).
        #[getter]
        fn leading(&self) -> bool {
            self.here().is_some_and(|e| e.is_leading())
        }

        /// Why this candidate's latest leadership was lost, or None.
        #[getter]
        fn lost_reason(&self) -> Option<String> {
            self.here().and_then(|e| e.lost_error()).map(|e| e.message().to_string())
        }

        /// Names this candidate in its leader note (cut to 600 bytes by the caller;
        /// None removes it). No round-trip.
        fn set_label(&self, label: Option<String>) -> PyResult<()> {
            self.handle()?.set_label(label.as_deref()).py()?;
            self.rebind().label = label;
            Ok(())
        }

        /// Calls `callback(message, reason)` from a background thread whenever a
        /// leadership of this candidate is lost; None removes it. Exceptions it
        /// raises are reported as unraisable.
        fn set_on_lost(&self, callback: Option<Py<PyAny>>) -> PyResult<()> {
            let callback = callback.map(|cb| -> ferrolock::LostCallback {
                Arc::new(move |event: &ferrolock::LostEvent| {
                    let _busy = InPython::enter();
                    let (message, reason) = (event.error.message().to_string(), event.reason.clone());
                    // Not while the interpreter is shutting down.
                    let _ = Python::try_attach(|py| {
                        if let Err(e) = cb.call1(py, (message, reason)) {
                            e.write_unraisable(py, None);
                        }
                    });
                })
            });
            self.rebind().on_lost = callback.clone();
            if let Some(election) = self.here() {
                election.set_on_lost(callback);
            }
            Ok(())
        }

        fn __repr__(&self) -> String {
            let bound = self.bound();
            format!("<ferrolock._native.Election name={:?} owner={}>", bound.name(), bound.lock().owner())
        }
    }
}

/// The leadership changes of one election (native part of the observers of
/// `ferrolock.Election.observe` and its asyncio twin). Not carried into a forked child.
#[pyclass(module = "ferrolock._native", frozen)]
pub(crate) struct Observer {
    inner: Arc<tokio::sync::Mutex<Local<ferrolock::Observer>>>,
}

twin_methods! {
    impl Observer {
        twins {
            /// The next change: `(True, leader tuple or None for nobody)`; the first
            /// call tells who leads now. `(False, None)` when `timeout` seconds passed
            /// without one (None: as long as it takes). Interrupted or cancelled, it
            /// loses no change.
            #[pyo3(signature = (timeout=None))]
            fn next | next_async (&self, timeout: Option<f64>) -> (bool, Option<LeaderTuple>) {
                let timeout = seconds(timeout, "timeout")?;
                let inner = self.inner.clone();
                async move {
                    let mut observer = inner.lock().await;
                    if observer.is_foreign() {
                        let message = "this observer was made before fork(); observe again in this process";
                        return Err(ferrolock::Error::new(ErrorKind::InvalidArgument, message));
                    }
                    let change = match timeout {
                        Some(limit) => match tokio::time::timeout(limit, observer.next()).await {
                            Ok(change) => change?,
                            Err(_) => return Ok((false, None)),
                        },
                        None => observer.next().await?,
                    };
                    Ok((true, change.as_ref().map(leader_tuple)))
                }
            }
        }

        fn __repr__(&self) -> String {
            "<ferrolock._native.Observer>".to_string()
        }
    }
}
