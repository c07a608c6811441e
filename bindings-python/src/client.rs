//! `Client`: one core client (connection, pub/sub, watchdog), native part of
//! `ferrolock.Client` and `ferrolock.aio.Client`; re-created lazily in a forked child.

use std::sync::Arc;

use ferrolock::{LockKind, LockOptions};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::call::twin_methods;
use crate::errors::PyResultExt;
use crate::family::{Latch, PermitSemaphore, Semaphore};
use crate::lock::Holder;
use crate::shared::{Settings, Shared};

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
        Client { shared: Arc::new(Shared::new(client, url, settings)) }
    }

    fn id_now(&self) -> String {
        self.shared.id_now()
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
                let b = settings.builder(&url)?;
                async move { b.connect().await.map(|c| Client::wrap(c, url, settings)) }
            }

            /// Releases every lock this client holds, stops the watchdog and closes the
            /// connections. Later calls raise ClientClosedError; closing again does
            /// nothing. In a forked child it closes the child's own connection, if any.
            fn close | close_async (&self) -> () {
                self.shared.set_closed();
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
            self.shared.watchdog_timeout().as_secs_f64()
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
