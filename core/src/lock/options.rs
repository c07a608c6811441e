//! What a lock handle is made with ([`LockKind`], [`LockOptions`]) and how it is
//! acquired ([`AcquireOptions`]).

use std::time::Duration;

use crate::error::{Error, Result};

/// Which lock: the kind decides the protocol (keys, scripts, renewal).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum LockKind {
    /// Redisson's `RLock`: re-entrant, renewed by the watchdog.
    #[default]
    Reentrant,
    /// Redisson's `RFencedLock`: an `RLock` whose every acquisition gets a strictly
    /// increasing fencing token from `redisson_lock_token:{name}`.
    Fenced,
}

impl LockKind {
    /// The kind's name, as `FromStr` reads it: "reentrant", "fenced".
    pub fn as_str(self) -> &'static str {
        match self {
            LockKind::Reentrant => "reentrant",
            LockKind::Fenced => "fenced",
        }
    }
}

impl std::fmt::Display for LockKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for LockKind {
    type Err = Error;

    /// Reads a kind by name, for the bindings and the CLI (one table, here).
    fn from_str(name: &str) -> Result<LockKind> {
        match name {
            "reentrant" => Ok(LockKind::Reentrant),
            "fenced" => Ok(LockKind::Fenced),
            other => Err(Error::invalid(format!("unknown lock kind {other:?}; give \"reentrant\" or \"fenced\""))),
        }
    }
}

/// How to build a lock handle (see [`crate::Client::lock_with`]).
#[derive(Debug, Clone, Default)]
pub struct LockOptions {
    /// Which lock (default: reentrant).
    pub kind: LockKind,
    /// Explicit holder id: the owner field becomes `<client-id>:<holder_id>`.
    pub holder_id: Option<u64>,
    /// Explicit full owner field, for handing a hold over between clients.
    pub owner: Option<String>,
}

impl LockOptions {
    /// Options for a lock of `kind`.
    pub fn kind(kind: LockKind) -> Self {
        LockOptions { kind, ..LockOptions::default() }
    }
}

/// How to acquire: how long to wait and which lease to use.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AcquireOptions {
    /// Longest wait (0 = try once). `None` waits as long as it takes.
    pub wait: Option<Duration>,
    /// Explicit lease: the lock expires after it, with no renewal. `None` = watchdog.
    pub lease: Option<Duration>,
}

impl AcquireOptions {
    /// Wait at most `wait` (0 = try once).
    pub fn wait(wait: Duration) -> Self {
        AcquireOptions { wait: Some(wait), lease: None }
    }

    /// Use an explicit lease instead of the watchdog.
    pub fn with_lease(mut self, lease: Duration) -> Self {
        self.lease = Some(lease);
        self
    }
}
