//! Client settings and the builder that validates them.

use std::fmt;
use std::time::Duration;

use crate::ack::ReplicaAck;
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
    /// Behind Sentinel and on a Cluster, how many of the master's replicas must
    /// acknowledge an acquire (`WAIT`) before it is returned (default
    /// [`ReplicaAck::One`], Redisson's `checkLockSyncedSlaves`); an acquire that falls
    /// short is undone and fails with `NotReplicated`. Off them: no effect.
    pub replica_ack: ReplicaAck,
    /// With [`Config::replica_ack`]: the replicas must have fsynced the acquire to
    /// their append-only file (`WAITAOF`, Redis 7.2 or later; an older server refuses
    /// acquires with a message naming its version). Default false (`WAIT`).
    pub replica_ack_aof: bool,
    /// How long that `WAIT` may take (default 1 s, Redisson's `slavesSyncTimeout`).
    pub replica_ack_timeout: Duration,
    /// Appended to every connection's name (`ferrolock:<client id>:<app name>`, see
    /// CLIENT LIST) so operators can tell which application a connection belongs to.
    pub app_name: Option<String>,
    /// When a holder leaves a note (app, host, pid, thread or task, since when) beside
    /// its hold for operators (`ferrolock status`, `top`, waiters' logs and timeouts).
    pub holder_notes: HolderNotes,
    /// With [`HolderNotes::Long`]: how long a hold lasts before its note is written
    /// (default 1 s; the watchdog's next look writes it, batched with others).
    pub holder_note_after: Duration,
    /// An acquire that has waited this long logs, at INFO, the lock and its holder's
    /// note, and again each time its wait doubles (default 10 s; `None`: never).
    pub slow_wait_log: Option<Duration>,
}

/// When holders write their notes (see [`Config::holder_notes`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HolderNotes {
    /// Never: holders leave no trace beside Redisson's fields.
    Off,
    /// Holds that outlive [`Config::holder_note_after`]: a short hold costs nothing
    /// (the default).
    #[default]
    Long,
    /// Every hold, written right after it is taken: one more call per acquisition.
    Always,
}

impl HolderNotes {
    /// The mode's name, as `FromStr` reads it: "off", "long", "always".
    pub fn as_str(self) -> &'static str {
        match self {
            HolderNotes::Off => "off",
            HolderNotes::Long => "long",
            HolderNotes::Always => "always",
        }
    }
}

impl std::str::FromStr for HolderNotes {
    type Err = Error;

    /// Reads a mode by name, for the bindings and the CLI.
    fn from_str(name: &str) -> Result<HolderNotes> {
        [HolderNotes::Off, HolderNotes::Long, HolderNotes::Always]
            .into_iter()
            .find(|m| m.as_str() == name)
            .ok_or_else(|| Error::invalid(format!("unknown holder_notes mode {name:?}; give off, long or always")))
    }
}

impl std::str::FromStr for ReplicaAck {
    type Err = Error;

    /// Reads a policy by name, for the bindings and the CLI.
    fn from_str(name: &str) -> Result<ReplicaAck> {
        ReplicaAck::ALL.into_iter().find(|p| p.as_str() == name).ok_or_else(|| {
            Error::invalid(format!("unknown replica_ack policy {name:?}; give off, one, majority or all"))
        })
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            watchdog_timeout: Duration::from_secs(30),
            response_timeout: Duration::from_secs(2),
            connect_timeout: Duration::from_secs(2),
            retry_window: Duration::from_secs(5),
            drift_factor: 0.01,
            replica_ack: ReplicaAck::One,
            replica_ack_aof: false,
            replica_ack_timeout: Duration::from_secs(1),
            app_name: None,
            holder_notes: HolderNotes::Long,
            holder_note_after: Duration::from_secs(1),
            slow_wait_log: Some(Duration::from_secs(10)),
        }
    }
}

impl Config {
    /// The accepted range of `replica_ack_timeout` (bindings name it in their own spelling).
    pub const REPLICA_ACK_TIMEOUT: (Duration, Duration) = (Duration::from_millis(1), Duration::from_secs(600));

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
        let (min, max) = Self::REPLICA_ACK_TIMEOUT;
        check_range("replica_ack_timeout", self.replica_ack_timeout, min, max)?;
        check_range("holder_note_after", self.holder_note_after, Duration::ZERO, crate::validate::MAX_DURATION)?;
        if let Some(after) = self.slow_wait_log {
            check_range("slow_wait_log", after, Duration::from_millis(1), crate::validate::MAX_DURATION)?;
        }
        if let Some(app) = &self.app_name {
            let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
            if app.is_empty() || app.len() > 64 || !app.chars().all(allowed) {
                return Err(Error::invalid(format!(
                    "app_name {app:?} is not 1 to 64 characters of letters, digits, '.', '_' and '-' \
                     (it becomes part of the connection name)"
                )));
            }
        }
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
/// The URL is one of
/// - `redis://[user:password@]host[:port][/db]`, or `rediss://` for TLS (append
///   `#insecure` to skip certificate verification in tests): one server; a cluster
///   node given this way is used as the cluster's seed;
/// - `redis+sentinel://[user:password@]host:port[,host:port...]/<master name>[/<db>]`
///   (`rediss+sentinel://`): the master the sentinels name, followed across failovers;
///   the credentials are the data nodes', the sentinels' are [`ClientBuilder::sentinel_password`];
/// - `redis+cluster://[user:password@]host:port[,host:port...]` (`rediss+cluster://`).
#[derive(Clone)]
pub struct ClientBuilder {
    pub(crate) url: String,
    pub(crate) config: Config,
    pub(crate) sentinel_auth: SentinelAuth,
}

/// Credentials for the sentinels themselves (the URL carries the data nodes').
/// Never printed.
#[derive(Clone, Default)]
pub(crate) struct SentinelAuth {
    pub username: Option<String>,
    pub password: Option<String>,
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
        ClientBuilder { url: url.into(), config: Config::default(), sentinel_auth: Default::default() }
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

    /// The user name for the sentinels themselves (with [`ClientBuilder::sentinel_password`]);
    /// the URL's credentials are the data nodes'.
    pub fn sentinel_username(mut self, value: impl Into<String>) -> Self {
        self.sentinel_auth.username = Some(value.into());
        self
    }

    /// The password for the sentinels themselves (their `requirepass`), when they have one.
    pub fn sentinel_password(mut self, value: impl Into<String>) -> Self {
        self.sentinel_auth.password = Some(value.into());
        self
    }

    /// Behind Sentinel and on a Cluster, how many replicas must acknowledge an acquire
    /// (`WAIT`) before it is returned (default [`ReplicaAck::One`]); an acquire that
    /// falls short is undone and fails with `NotReplicated`, and a master with no
    /// replica refuses every acquire but under [`ReplicaAck::Off`]. It narrows the
    /// window in which a failover loses a fresh lock; it cannot close it (replication
    /// stays asynchronous: docs/design.md, "Topologies").
    pub fn replica_ack(mut self, policy: ReplicaAck) -> Self {
        self.config.replica_ack = policy;
        self
    }

    /// With [`ClientBuilder::replica_ack`]: count only replicas that fsynced the acquire
    /// to their append-only file (`WAITAOF`, Redis 7.2 or later). Default false.
    pub fn replica_ack_aof(mut self, on: bool) -> Self {
        self.config.replica_ack_aof = on;
        self
    }

    /// How long the replica acknowledgement may take (default 1 s).
    pub fn replica_ack_timeout(mut self, value: Duration) -> Self {
        self.config.replica_ack_timeout = value;
        self
    }

    /// Names this client's connections `ferrolock:<client id>:<app name>` (1 to 64
    /// characters of letters, digits, `.`, `_` and `-`); without it `ferrolock:<client id>`.
    pub fn app_name(mut self, value: impl Into<String>) -> Self {
        self.config.app_name = Some(value.into());
        self
    }

    /// When holders write their notes (default [`HolderNotes::Long`]).
    pub fn holder_notes(mut self, mode: HolderNotes) -> Self {
        self.config.holder_notes = mode;
        self
    }

    /// How long a hold lasts before its note is written in [`HolderNotes::Long`] mode (default 1 s).
    pub fn holder_note_after(mut self, value: Duration) -> Self {
        self.config.holder_note_after = value;
        self
    }

    /// How long an acquire waits before it logs who is in the way (default 10 s; `None`: never).
    pub fn slow_wait_log(mut self, value: Option<Duration>) -> Self {
        self.config.slow_wait_log = value;
        self
    }
}
