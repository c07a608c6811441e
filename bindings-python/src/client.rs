//! `Client`: one core client (connection, pub/sub, watchdog), native part of
//! `ferrolock.Client` and `ferrolock.aio.Client`; re-created lazily in a forked child.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use ferrolock::{ClientBuilder, LockKind, LockOptions};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::call::twin_methods;
use crate::errors::{client_closed, seconds, PyResultExt};
use crate::family::{Latch, PermitSemaphore, Semaphore};
use crate::lock::Holder;
use crate::runtime::{runtime, Local};

/// The settings of `Client.connect`, as Python gave them (None: the core's default).
/// Kept by the client: a forked child connects again with them.
#[derive(Clone)]
struct Settings {
    watchdog_timeout: Option<f64>,
    response_timeout: Option<f64>,
    connect_timeout: Option<f64>,
    retry_window: Option<f64>,
    drift_factor: Option<f64>,
    sentinel_username: Option<String>,
    sentinel_password: Option<String>,
    /// A policy's name ("off", "one", "majority", "all"; the facade maps True/False).
    replica_ack: Option<String>,
    replica_ack_aof: Option<bool>,
    replica_ack_timeout: Option<f64>,
    app_name: Option<String>,
    holder_notes: Option<String>,
    holder_note_after: Option<f64>,
    /// Infinite: never log a slow wait.
    slow_wait_log: Option<f64>,
}

/// The core builder for `url` with `s`. Errors name the setting, never the URL
/// or a password (the core's URL errors do not echo the URL either).
fn builder(url: &str, s: &Settings) -> PyResult<ClientBuilder> {
    let mut b = ClientBuilder::new(url);
    if let Some(d) = seconds(s.watchdog_timeout, "watchdog_timeout")? {
        b = b.watchdog_timeout(d);
    }
    if let Some(d) = seconds(s.response_timeout, "response_timeout")? {
        b = b.response_timeout(d);
    }
    if let Some(d) = seconds(s.connect_timeout, "connect_timeout")? {
        b = b.connect_timeout(d);
    }
    if let Some(d) = seconds(s.retry_window, "retry_window")? {
        b = b.retry_window(d);
    }
    if let Some(f) = s.drift_factor {
        // Range-checked (0 to 0.5) by the core when connecting: InvalidArgumentError.
        b = b.drift_factor(f);
    }
    if let Some(user) = &s.sentinel_username {
        b = b.sentinel_username(user.clone());
    }
    if let Some(password) = &s.sentinel_password {
        b = b.sentinel_password(password.clone());
    }
    if let Some(policy) = &s.replica_ack {
        b = b.replica_ack(policy.parse().py()?);
    }
    if let Some(on) = s.replica_ack_aof {
        b = b.replica_ack_aof(on);
    }
    if let Some(d) = seconds(s.replica_ack_timeout, "replica_ack_timeout")? {
        // Range-checked (1 ms to 600 s) by the core when connecting.
        b = b.replica_ack_timeout(d);
    }
    if let Some(app) = &s.app_name {
        // Checked by the core when connecting (1 to 64 of [A-Za-z0-9._-]).
        b = b.app_name(app.clone());
    }
    if let Some(mode) = &s.holder_notes {
        b = b.holder_notes(mode.parse().py()?);
    }
    if let Some(d) = seconds(s.holder_note_after, "holder_note_after")? {
        b = b.holder_note_after(d);
    }
    match s.slow_wait_log {
        Some(v) if v == f64::INFINITY => b = b.slow_wait_log(None),
        // Range-checked (1 ms to 7 days) by the core when connecting.
        v => {
            if let Some(d) = seconds(v, "slow_wait_log")? {
                b = b.slow_wait_log(Some(d));
            }
        }
    }
    Ok(b)
}

/// What a `Client` and its holders share: the core client of the current process,
/// and what it takes to connect again in a forked child (the parent's core client
/// cannot run there: its threads and sockets stayed in the parent).
pub(crate) struct Shared {
    url: String,
    settings: Settings,
    current: Mutex<Local<ferrolock::Client>>,
    closed: AtomicBool,
}

impl Shared {
    /// The core client of this process: the one made here, or, in a forked child, a
    /// new one (connected on first use, with the GIL released; it holds nothing the
    /// parent held). ClientClosedError once closed.
    pub(crate) fn client(&self, py: Python<'_>) -> PyResult<ferrolock::Client> {
        self.check_open()?;
        {
            let current = self.current.lock().unwrap_or_else(|p| p.into_inner());
            if !current.is_foreign() {
                return Ok(ferrolock::Client::clone(&current));
            }
        }
        // Locked again with the GIL released: another thread of the child may be
        // connecting and needs the GIL to finish.
        py.detach(|| {
            let mut current = self.current.lock().unwrap_or_else(|p| p.into_inner());
            if !current.is_foreign() {
                return Ok(ferrolock::Client::clone(&current));
            }
            let rt = runtime()?;
            let client = rt.block_on(builder(&self.url, &self.settings)?.connect()).py()?;
            crate::logs::ensure_delivery();
            tracing::debug!(client = %client.id(), "ferrolock client connected again in a forked child");
            // The parent's client is skipped, not dropped (Local): nothing of it runs here.
            *current = Local::new(client.clone());
            Ok(client)
        })
    }

    /// The core client if it belongs to this process (no connecting), else None.
    pub(crate) fn here(&self) -> Option<ferrolock::Client> {
        let current = self.current.lock().unwrap_or_else(|p| p.into_inner());
        (!current.is_foreign()).then(|| ferrolock::Client::clone(&current))
    }

    pub(crate) fn check_open(&self) -> PyResult<()> {
        if self.is_closed() {
            return Err(client_closed());
        }
        Ok(())
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst) || self.here().is_some_and(|c| c.is_closed())
    }
}

fn histogram<'py>(py: Python<'py>, h: &ferrolock::Histogram) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("bounds", h.bounds.clone())?;
    d.set_item("counts", h.counts.clone())?;
    d.set_item("sum", h.sum)?;
    d.set_item("count", h.count)?;
    Ok(d)
}

/// A connection to one Redis deployment (native part of `ferrolock.Client` and
/// `ferrolock.aio.Client`). Create it with `Client.connect` or `Client.connect_async`.
#[pyclass(module = "ferrolock._native", frozen)]
pub(crate) struct Client {
    shared: Arc<Shared>,
}

impl Client {
    fn wrap(client: ferrolock::Client, url: String, settings: Settings) -> Client {
        let current = Mutex::new(Local::new(client));
        Client { shared: Arc::new(Shared { url, settings, current, closed: AtomicBool::new(false) }) }
    }

    fn id_now(&self) -> String {
        self.shared.current.lock().unwrap_or_else(|p| p.into_inner()).id().to_string()
    }
}

twin_methods! {
    impl Client {
        twins {
            /// Connects and checks that the server answers. `url` is `redis://`,
            /// `rediss://`, `redis+sentinel://` or `redis+cluster://` (see
            /// `ferrolock.Client`); `sentinel_username` / `sentinel_password` are the
            /// sentinels' own credentials; `replica_ack` ("off", "one", "majority",
            /// "all"), `replica_ack_aof` and `replica_ack_timeout` say how many replicas
            /// must acknowledge an acquire behind Sentinel or on a Cluster
            /// (NotReplicatedError when too few do in time); `app_name` ends every connection's name
            /// (`ferrolock:<client id>:<app name>`) and the holders' notes;
            /// `holder_notes` ("off", "long", "always") and `holder_note_after`
            /// (seconds) say when a hold writes its note; an acquire that waited
            /// `slow_wait_log` seconds logs who is in the way (inf: never).
            #[staticmethod]
            #[pyo3(signature = (
                url, watchdog_timeout=None, response_timeout=None, connect_timeout=None, retry_window=None,
                drift_factor=None, sentinel_username=None, sentinel_password=None, replica_ack=None,
                replica_ack_timeout=None, app_name=None, holder_notes=None, holder_note_after=None,
                slow_wait_log=None, replica_ack_aof=None
            ))]
            #[allow(clippy::too_many_arguments)]
            fn connect | connect_async (
                url: String,
                watchdog_timeout: Option<f64>,
                response_timeout: Option<f64>,
                connect_timeout: Option<f64>,
                retry_window: Option<f64>,
                drift_factor: Option<f64>,
                sentinel_username: Option<String>,
                sentinel_password: Option<String>,
                replica_ack: Option<String>,
                replica_ack_timeout: Option<f64>,
                app_name: Option<String>,
                holder_notes: Option<String>,
                holder_note_after: Option<f64>,
                slow_wait_log: Option<f64>,
                replica_ack_aof: Option<bool>
            ) -> Client {
                let settings = Settings {
                    watchdog_timeout,
                    response_timeout,
                    connect_timeout,
                    retry_window,
                    drift_factor,
                    sentinel_username,
                    sentinel_password,
                    replica_ack,
                    replica_ack_aof,
                    replica_ack_timeout,
                    app_name,
                    holder_notes,
                    holder_note_after,
                    slow_wait_log,
                };
                let b = builder(&url, &settings)?;
                async move { b.connect().await.map(|c| Client::wrap(c, url, settings)) }
            }

            /// Releases every lock this client holds, stops the watchdog and closes the
            /// connections. Later calls raise ClientClosedError; closing again does
            /// nothing. In a forked child it closes the child's own connection, if any.
            fn close | close_async (&self) -> () {
                self.shared.closed.store(true, Ordering::SeqCst);
                let client = self.shared.here();
                async move {
                    match client {
                        Some(c) => c.shutdown().await,
                        None => Ok(()),
                    }
                }
            }

            /// What `name` is, told from its keys, and what is going on there, as the
            /// plain tuple `ferrolock.Inspection` is made from: `(name, kind, holders
            /// (who.rs), lease left in seconds or None (inf: no expiry),
            /// waiters, queue, mode, permits, permits out [(id, lease left in seconds or
            /// None)], count, last token)`. `kind` reads it as that kind ("lock",
            /// "fair_lock", "read_write_lock", "semaphore", "permit_expirable_semaphore",
            /// "count_down_latch").
            #[pyo3(signature = (name, kind=None))]
            fn inspect | inspect_async (&self, name: String, kind: Option<String>) -> Inspected {
                let client = Python::attach(|py| self.shared.client(py))?;
                let kind = kind.as_deref().map(object_kind).transpose()?;
                async move {
                    let found = match kind {
                        Some(kind) => client.inspect_as(&name, kind).await?,
                        None => client.inspect(&name).await?,
                    };
                    Ok(inspected(found))
                }
            }

            /// The names of every lock-family object whose name starts with `prefix`
            /// (all without one), sorted; one SCAN pass over the server, Sentinel's
            /// master or every master of a cluster.
            #[pyo3(signature = (prefix=None))]
            fn scan | scan_async (&self, prefix: Option<String>) -> Vec<String> {
                let client = Python::attach(|py| self.shared.client(py))?;
                async move {
                    let names = client.scan(prefix.unwrap_or_default().as_bytes()).await?;
                    Ok(names.iter().map(|n| String::from_utf8_lossy(n).into_owned()).collect::<Vec<_>>())
                }
            }
        }

        /// This client's id (a UUID v4): the first half of every owner field it
        /// writes. In a forked child, the child's own client's once it connected.
        #[getter]
        fn id(&self) -> String {
            self.id_now()
        }

        /// The lease of watchdog-renewed locks, in seconds.
        #[getter]
        fn watchdog_timeout(&self) -> f64 {
            let current = self.shared.current.lock().unwrap_or_else(|p| p.into_inner());
            current.config().watchdog_timeout.as_secs_f64()
        }

        /// True once `close` was called (or the core client shut down).
        #[getter]
        fn closed(&self) -> bool {
            self.shared.is_closed()
        }

        /// A new holder of lock `name`, a lock of `kind` ("reentrant", "fenced", "fair",
        /// "read", "write"): its own owner field `<client id>:<holder id>`. With
        /// `holder_id`, the owner field uses that id (holders with the same id on one
        /// client share their hold: hand-over between threads or tasks, and the read
        /// and write sides of one read-write lock holder).
        #[pyo3(signature = (name, kind="reentrant", holder_id=None))]
        fn holder(&self, py: Python<'_>, name: &str, kind: &str, holder_id: Option<u64>) -> PyResult<Holder> {
            let client = self.shared.client(py)?;
            let kind: LockKind = kind.parse().py()?;
            let id = holder_id.unwrap_or_else(|| client.new_holder_id());
            let lock = client.lock_with(name, LockOptions { holder_id: Some(id), ..LockOptions::kind(kind) }).py()?;
            Ok(Holder::single(lock, self.shared.clone(), holder_id))
        }

        /// A fresh holder id, unique within this client's process (the read and write
        /// sides of a read-write lock share one).
        fn new_holder_id(&self, py: Python<'_>) -> PyResult<u64> {
            Ok(self.shared.client(py)?.new_holder_id())
        }

        /// A new candidate in the leader election `name` (its fenced lock, a holder of its own).
        fn election(&self, py: Python<'_>, name: &str) -> PyResult<crate::election::Election> {
            crate::election::Election::new(py, self.shared.clone(), name)
        }

        /// The semaphore `name` (InvalidArgumentError for a bad name).
        fn semaphore(&self, py: Python<'_>, name: &str) -> PyResult<Semaphore> {
            Semaphore::new(py, self.shared.clone(), name)
        }

        /// The permit-expirable semaphore `name`.
        fn permit_semaphore(&self, py: Python<'_>, name: &str) -> PyResult<PermitSemaphore> {
            PermitSemaphore::new(py, self.shared.clone(), name)
        }

        /// The count-down latch `name`.
        fn latch(&self, py: Python<'_>, name: &str) -> PyResult<Latch> {
            Latch::new(py, self.shared.clone(), name)
        }

        /// Number of lock channels this client's pub/sub connection is subscribed to.
        fn subscribed_channels(&self) -> PyResult<usize> {
            self.shared.check_open()?;
            Ok(self.shared.here().map_or(0, |c| c.subscribed_channels()))
        }

        /// Number of locks this client currently holds.
        fn held_count(&self) -> PyResult<usize> {
            self.shared.check_open()?;
            Ok(self.shared.here().map_or(0, |c| c.held_count()))
        }

        /// A snapshot of this client's metrics, as a dict (see `ferrolock.Metrics`;
        /// the histograms `wait`, `hold` and `failover_loss_report` as dicts of
        /// `bounds`, `counts`, `sum`, `count`).
        fn metrics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
            let m = self.shared.client(py)?.metrics();
            let d = PyDict::new(py);
            d.set_item("client_id", &m.client_id)?;
            d.set_item("acquired", m.acquired)?;
            d.set_item("not_acquired", m.not_acquired)?;
            d.set_item("failed", m.failed)?;
            d.set_item("cancelled", m.cancelled)?;
            d.set_item("wait", histogram(py, &m.wait)?)?;
            d.set_item("hold", histogram(py, &m.hold)?)?;
            d.set_item("holds_now", m.holds_now)?;
            d.set_item("waiters_now", m.waiters_now)?;
            d.set_item("renewals", m.renewals)?;
            d.set_item("renewal_failures", m.renewal_failures)?;
            d.set_item("losses", m.losses)?;
            d.set_item("reconnects", m.reconnects)?;
            d.set_item("failovers_noticed", m.failovers_noticed)?;
            d.set_item("failover_loss_report", histogram(py, &m.failover_loss_report)?)?;
            Ok(d)
        }

        /// This client's metrics in the Prometheus text exposition format (the core's rendering).
        fn metrics_text(&self, py: Python<'_>) -> PyResult<String> {
            Ok(self.shared.client(py)?.metrics().to_prometheus())
        }

        fn __repr__(&self) -> String {
            format!("<ferrolock._native.Client id={}>", self.id_now())
        }
    }
}

/// `Client.inspect()` as Python gets it (see there).
type Inspected = (
    String,
    &'static str,
    Vec<crate::who::Holder>,
    Option<f64>,
    u64,
    Vec<String>,
    Option<String>,
    Option<i64>,
    Vec<(String, Option<f64>)>,
    Option<i64>,
    Option<u64>,
    Option<String>,
);

fn inspected(found: ferrolock::Inspection) -> Inspected {
    let lease = found.lease_left().map(|d| if d == std::time::Duration::MAX { f64::INFINITY } else { d.as_secs_f64() });
    let holders = found.holders().iter().map(crate::who::holder).collect();
    let last_token = found.last_token();
    let out = found.permits_out.into_iter().map(|p| (p.id, p.lease_left_ms.map(|ms| ms as f64 / 1000.0))).collect();
    let eviction = found.eviction_policy;
    (found.name, found.kind.as_str(), holders, lease, found.waiters, found.queue, found.mode, found.permits, out, found.count, last_token, eviction)
}

fn object_kind(kind: &str) -> PyResult<ferrolock::ObjectKind> {
    use ferrolock::ObjectKind as K;
    let all = [K::Lock, K::FencedLock, K::FairLock, K::ReadWriteLock, K::Semaphore, K::PermitExpirableSemaphore, K::CountDownLatch];
    let found = all.into_iter().find(|k| k.as_str() == kind).ok_or_else(|| {
        let names: Vec<&str> = all.iter().map(|k| k.as_str()).collect();
        let message = format!("unknown kind {kind:?}: expected one of {}", names.join(", "));
        ferrolock::Error::new(ferrolock::ErrorKind::InvalidArgument, message)
    });
    found.py()
}
