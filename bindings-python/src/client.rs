//! `Client`: one core client (connection, pub/sub, watchdog), native part of
//! `ferrolock.Client` and `ferrolock.aio.Client`.

use ferrolock::{ClientBuilder, LockKind, LockOptions};
use pyo3::prelude::*;

use crate::call::twin_methods;
use crate::errors::{seconds, PyResultExt};
use crate::lock::Holder;
use crate::runtime::Local;

/// The settings of `Client.connect`, as Python gave them (None: the core's default).
struct Settings {
    watchdog_timeout: Option<f64>,
    response_timeout: Option<f64>,
    connect_timeout: Option<f64>,
    retry_window: Option<f64>,
    drift_factor: Option<f64>,
    sentinel_username: Option<String>,
    sentinel_password: Option<String>,
    replica_ack: Option<bool>,
    replica_ack_timeout: Option<f64>,
}

/// The core builder for `url` with `s`. Errors name the setting, never the URL
/// or a password (the core's URL errors do not echo the URL either).
fn builder(url: &str, s: Settings) -> PyResult<ClientBuilder> {
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
    if let Some(user) = s.sentinel_username {
        b = b.sentinel_username(user);
    }
    if let Some(password) = s.sentinel_password {
        b = b.sentinel_password(password);
    }
    if let Some(on) = s.replica_ack {
        b = b.replica_ack(on);
    }
    if let Some(d) = seconds(s.replica_ack_timeout, "replica_ack_timeout")? {
        // Range-checked (1 ms to 600 s) by the core when connecting.
        b = b.replica_ack_timeout(d);
    }
    Ok(b)
}

/// A connection to one Redis deployment (native part of `ferrolock.Client` and
/// `ferrolock.aio.Client`). Create it with `Client.connect` or `Client.connect_async`.
#[pyclass(module = "ferrolock._native", frozen)]
pub(crate) struct Client {
    inner: Local<ferrolock::Client>,
}

impl Client {
    fn wrap(client: ferrolock::Client) -> Client {
        Client { inner: Local::new(client) }
    }

    /// Usable only in the process that created it (fork: raises InvalidArgumentError).
    fn live(&self) -> PyResult<&ferrolock::Client> {
        self.inner.check_process().py()?;
        Ok(&self.inner)
    }
}

twin_methods! {
    impl Client {
        twins {
            /// Connects and checks that the server answers. `url` is `redis://`,
            /// `rediss://`, `redis+sentinel://` or `redis+cluster://` (see
            /// `ferrolock.Client`); `sentinel_username` / `sentinel_password` are the
            /// sentinels' own credentials; `replica_ack` / `replica_ack_timeout` make an
            /// acquire behind Sentinel wait for a replica (NotReplicatedError if none
            /// acknowledges in time).
            #[staticmethod]
            #[pyo3(signature = (
                url, watchdog_timeout=None, response_timeout=None, connect_timeout=None, retry_window=None,
                drift_factor=None, sentinel_username=None, sentinel_password=None, replica_ack=None,
                replica_ack_timeout=None
            ))]
            #[allow(clippy::too_many_arguments)]
            fn connect | connect_async (
                url: &str,
                watchdog_timeout: Option<f64>,
                response_timeout: Option<f64>,
                connect_timeout: Option<f64>,
                retry_window: Option<f64>,
                drift_factor: Option<f64>,
                sentinel_username: Option<String>,
                sentinel_password: Option<String>,
                replica_ack: Option<bool>,
                replica_ack_timeout: Option<f64>
            ) -> Client {
                let b = builder(url, Settings {
                    watchdog_timeout,
                    response_timeout,
                    connect_timeout,
                    retry_window,
                    drift_factor,
                    sentinel_username,
                    sentinel_password,
                    replica_ack,
                    replica_ack_timeout,
                })?;
                async move { b.connect().await.map(Client::wrap) }
            }

            /// Releases every lock this client holds, stops the watchdog and closes the
            /// connections. Later calls fail. A no-op in a forked child.
            fn close | close_async (&self) -> () {
                let client = (!self.inner.is_foreign()).then(|| self.inner.clone());
                async move {
                    match client {
                        Some(c) => c.shutdown().await,
                        None => Ok(()),
                    }
                }
            }
        }

        /// This client's id (a UUID v4): the first half of every owner field it writes.
        #[getter]
        fn id(&self) -> &str {
            self.inner.id()
        }

        /// The lease of watchdog-renewed locks, in seconds.
        #[getter]
        fn watchdog_timeout(&self) -> f64 {
            self.inner.config().watchdog_timeout.as_secs_f64()
        }

        /// A new holder of lock `name`, a lock of `kind` ("reentrant", "fenced"): its
        /// own owner field `<client id>:<holder id>`. With `holder_id`, the owner field
        /// uses that id (holders with the same id on one client share their hold:
        /// hand-over between threads or tasks).
        #[pyo3(signature = (name, kind="reentrant", holder_id=None))]
        fn holder(&self, name: &str, kind: &str, holder_id: Option<u64>) -> PyResult<Holder> {
            let client = self.live()?;
            let kind: LockKind = kind.parse().py()?;
            let holder_id = Some(holder_id.unwrap_or_else(|| client.new_holder_id()));
            let lock = client.lock_with(name, LockOptions { holder_id, ..LockOptions::kind(kind) }).py()?;
            Ok(Holder::new(lock, client.clone()))
        }

        /// Number of lock channels this client's pub/sub connection is subscribed to.
        fn subscribed_channels(&self) -> PyResult<usize> {
            Ok(self.live()?.subscribed_channels())
        }

        /// Number of locks this client currently holds.
        fn held_count(&self) -> PyResult<usize> {
            Ok(self.live()?.held_count())
        }

        fn __repr__(&self) -> String {
            format!("<ferrolock._native.Client id={}>", self.inner.id())
        }
    }
}
