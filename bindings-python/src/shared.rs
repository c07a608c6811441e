//! What a `Client` and the primitives it makes share: the settings it connected
//! with and the core client of the current process (connected again in a forked
//! child). Below the client and the primitives, so that they reach it without
//! reaching into the client module.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use ferrolock::ClientBuilder;
use pyo3::prelude::*;

use crate::errors::{client_closed, seconds, PyResultExt};
use crate::runtime::{runtime, Local};

/// The settings of `Client.connect`, as Python gave them (None: the core's default).
/// Kept by the client: a forked child connects again with them.
#[derive(Clone)]
pub(crate) struct Settings {
    pub(crate) watchdog_timeout: Option<f64>,
    pub(crate) response_timeout: Option<f64>,
    pub(crate) connect_timeout: Option<f64>,
    pub(crate) retry_window: Option<f64>,
    pub(crate) drift_factor: Option<f64>,
    pub(crate) sentinel_username: Option<String>,
    pub(crate) sentinel_password: Option<String>,
    /// A policy's name ("off", "one", "majority", "all"; the facade maps True/False).
    pub(crate) replica_ack: Option<String>,
    pub(crate) replica_ack_aof: Option<bool>,
    pub(crate) replica_ack_timeout: Option<f64>,
    pub(crate) app_name: Option<String>,
    pub(crate) holder_notes: Option<String>,
    pub(crate) holder_note_after: Option<f64>,
    /// Infinite: never log a slow wait.
    pub(crate) slow_wait_log: Option<f64>,
}

impl Settings {
    /// The core builder for `url` with these settings. Errors name the setting, never
    /// the URL or a password (the core's URL errors do not echo the URL either).
    pub(crate) fn builder(&self, url: &str) -> PyResult<ClientBuilder> {
        let s = self;
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
    pub(crate) fn new(client: ferrolock::Client, url: String, settings: Settings) -> Self {
        Shared { url, settings, current: Mutex::new(Local::new(client)), closed: AtomicBool::new(false) }
    }

    /// The id of the core client of the moment (the parent's, in a forked child that
    /// has not connected again).
    pub(crate) fn id_now(&self) -> String {
        self.current.lock().unwrap_or_else(|p| p.into_inner()).id().to_string()
    }

    /// The watchdog lease of the core client of the moment (the same in a forked child).
    pub(crate) fn watchdog_timeout(&self) -> std::time::Duration {
        self.current.lock().unwrap_or_else(|p| p.into_inner()).config().watchdog_timeout
    }

    /// `close` was called: ClientClosedError from now on.
    pub(crate) fn set_closed(&self) {
        self.closed.store(true, Ordering::SeqCst);
    }

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
            let client = rt.block_on(self.settings.builder(&self.url)?.connect()).py()?;
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
