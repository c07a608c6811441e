//! A snapshot of one lock as the server sees it, for operators (`ferrolock status`)
//! and for showing who is in the way while waiting.

use std::time::Duration;

/// One owner field of the lock hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HolderEntry {
    /// The owner field: `<client-id>:<holder-id>` for ferrolock, `<uuid>:<thread-id>` for Redisson.
    pub owner: String,
    /// How many times that holder has entered the lock.
    pub count: u64,
}

/// The state of a lock at one moment. Read with [`crate::Lock::status`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockStatus {
    /// The lock name.
    pub name: String,
    /// Every owner field with its hold count; empty when the lock is free.
    pub holders: Vec<HolderEntry>,
    /// Time left on the lease; `None` when free, `Duration::MAX` for a lock without expiry.
    pub remaining_lease: Option<Duration>,
    /// Connections subscribed to the lock's release channel: one per client with waiters
    /// (ferrolock and Redisson share one subscription per client).
    pub subscribers: u64,
    /// The last fencing token handed out for this name (`redisson_lock_token:{name}`), if any.
    pub last_token: Option<u64>,
}

impl LockStatus {
    /// True when someone holds the lock.
    pub fn is_locked(&self) -> bool {
        !self.holders.is_empty()
    }
}
