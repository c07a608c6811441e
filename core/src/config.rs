//! Client settings and the builder that validates them.

use std::fmt;
use std::time::Duration;

use crate::error::{Error, Result};

/// Settings of one client. Built by [`ClientBuilder`]; read-only afterwards.
#[derive(Debug, Clone)]
pub struct Config {
    /// Lease of locks taken without an explicit lease; renewed every third of it.
    pub watchdog_timeout: Duration,
    /// How long one command may take before it counts as failed.
    pub response_timeout: Duration,
    /// How long one connection attempt may take.
    pub connect_timeout: Duration,
    /// How long a release is retried after a lost reply (also the unlock latch TTL).
    pub retry_window: Duration,
    /// Clock drift allowance, as a fraction of the lease: a holder counts its hold as
    /// lost `lease x drift_factor + 2 ms` before Redis would expire it (DESIGN §3).
    pub drift_factor: f64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            watchdog_timeout: Duration::from_secs(30),
            response_timeout: Duration::from_secs(2),
            connect_timeout: Duration::from_secs(2),
            retry_window: Duration::from_secs(5),
            drift_factor: 0.01,
        }
    }
}

impl Config {
    pub(crate) fn watchdog_ms(&self) -> u64 {
        self.watchdog_timeout.as_millis() as u64
    }

    /// The watchdog renews every third of the lease, like Redisson.
    pub(crate) fn renew_interval(&self) -> Duration {
        self.watchdog_timeout / 3
    }

    /// How long before Redis's expiry a holder counts its hold as lost:
    /// `lease x drift_factor + 2 ms`, so the loss is told before anyone else can hold it.
    pub fn safety_margin(&self, lease: Duration) -> Duration {
        lease.mul_f64(self.drift_factor) + Duration::from_millis(2)
    }

    pub(crate) fn validate(&self) -> Result<()> {
        if !(self.drift_factor.is_finite() && (0.0..=0.5).contains(&self.drift_factor)) {
            return Err(Error::invalid(format!(
                "drift_factor = {} is out of range; give 0 to 0.5 (default 0.01)",
                self.drift_factor
            )));
        }
        check_range("watchdog_timeout", self.watchdog_timeout, Duration::from_millis(30), crate::validate::MAX_DURATION)?;
        check_range("response_timeout", self.response_timeout, Duration::from_millis(1), Duration::from_secs(600))?;
        check_range("connect_timeout", self.connect_timeout, Duration::from_millis(1), Duration::from_secs(600))?;
        check_range("retry_window", self.retry_window, Duration::from_millis(1), Duration::from_secs(86_400))?;
        Ok(())
    }
}

fn check_range(what: &str, value: Duration, min: Duration, max: Duration) -> Result<()> {
    if value < min || value > max {
        return Err(Error::invalid(format!("{what} = {value:?} is out of range; give {min:?} to {max:?}")));
    }
    Ok(())
}

/// Builds a [`crate::Client`]: `ClientBuilder::new(url).watchdog_timeout(..).connect().await`.
///
/// The URL is `redis://[user:password@]host[:port][/db]`, or `rediss://` for TLS
/// (append `#insecure` to skip certificate verification in tests).
#[derive(Clone)]
pub struct ClientBuilder {
    pub(crate) url: String,
    pub(crate) config: Config,
}

impl fmt::Debug for ClientBuilder {
    // The URL may carry a password: never print it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientBuilder").field("url", &"<redacted>").field("config", &self.config).finish()
    }
}

impl ClientBuilder {
    /// A builder for the given Redis URL with default settings.
    pub fn new(url: impl Into<String>) -> Self {
        ClientBuilder { url: url.into(), config: Config::default() }
    }

    /// Lease of watchdog-renewed locks (default 30 s).
    pub fn watchdog_timeout(mut self, value: Duration) -> Self {
        self.config.watchdog_timeout = value;
        self
    }

    /// Per-command response timeout (default 2 s).
    pub fn response_timeout(mut self, value: Duration) -> Self {
        self.config.response_timeout = value;
        self
    }

    /// Per-attempt connect timeout (default 2 s).
    pub fn connect_timeout(mut self, value: Duration) -> Self {
        self.config.connect_timeout = value;
        self
    }

    /// How long a release with a lost reply is retried; also the unlock latch TTL (default 5 s).
    pub fn retry_window(mut self, value: Duration) -> Self {
        self.config.retry_window = value;
        self
    }

    /// Clock drift allowance as a fraction of the lease (default 0.01): a hold is
    /// reported lost `lease x drift_factor + 2 ms` before Redis would expire it.
    pub fn drift_factor(mut self, value: f64) -> Self {
        self.config.drift_factor = value;
        self
    }
}
