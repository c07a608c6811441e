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
    /// Redisson's `RFairLock`: granted in the order of arrival across clients
    /// (`redisson_lock_queue:{name}`), each waiter woken on its own channel.
    Fair,
    /// The read side of Redisson's `RReadWriteLock`: shared with other readers.
    Read,
    /// The write side of Redisson's `RReadWriteLock`: alone; it may also take read holds.
    Write,
}

impl LockKind {
    /// The kind's name, as `FromStr` reads it: "reentrant", "fenced".
    pub fn as_str(self) -> &'static str {
        match self {
            LockKind::Reentrant => "reentrant",
            LockKind::Fenced => "fenced",
            LockKind::Fair => "fair",
            LockKind::Read => "read",
            LockKind::Write => "write",
        }
    }

    /// Every kind, for messages and bindings.
    pub const ALL: [LockKind; 5] = [LockKind::Reentrant, LockKind::Fenced, LockKind::Fair, LockKind::Read, LockKind::Write];

    /// Whether a release may hand the lock straight to a waiter of the same client:
    /// only where any waiter may go next (a fair lock keeps its queue's order, and a
    /// read-write lock's waiters are of two sides).
    pub(crate) fn hands_off(self) -> bool {
        matches!(self, LockKind::Reentrant | LockKind::Fenced)
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
        LockKind::ALL.into_iter().find(|k| k.as_str() == name).ok_or_else(|| {
            let names: Vec<&str> = LockKind::ALL.iter().map(|k| k.as_str()).collect();
            Error::invalid(format!("unknown lock kind {name:?}; give one of {}", names.join(", ")))
        })
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
    /// Fair locks: how long a waiter may miss its turn before the others skip it
    /// (Redisson's `threadWaitTime`; default 5 minutes).
    pub fair_wait_timeout: Option<Duration>,
}

impl LockOptions {
    /// Options for a lock of `kind`.
    pub fn kind(kind: LockKind) -> Self {
        LockOptions { kind, ..LockOptions::default() }
    }

    /// Redisson's default `threadWaitTime`.
    pub const FAIR_WAIT_TIMEOUT: Duration = Duration::from_secs(300);
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
