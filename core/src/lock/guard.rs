//! [`Guard`]: one acquisition, released when dropped.

use super::Lock;
use crate::error::{Error, Result};
use crate::hold::{Hold, Released};

/// One acquisition, released when dropped (in the background) unless released
/// explicitly or turned into a plain [`Hold`].
#[must_use = "dropping the guard releases the lock at once"]
pub struct Guard {
    lock: Lock,
    hold: Hold,
    armed: bool,
}

impl std::fmt::Debug for Guard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guard").field("lock", &self.lock).field("token", &self.hold.token()).finish()
    }
}

impl Guard {
    pub(super) fn new(lock: Lock, hold: Hold) -> Self {
        Guard { lock, hold, armed: true }
    }

    /// The lock this guard holds.
    pub fn lock(&self) -> &Lock {
        &self.lock
    }

    /// The fencing token of this acquisition (fenced locks).
    pub fn token(&self) -> Option<u64> {
        self.hold.token()
    }

    /// True once this hold has been lost.
    pub fn is_lost(&self) -> bool {
        self.hold.is_lost()
    }

    /// Resolves with a `LockLost` error when this hold is lost.
    pub async fn lost(&self) -> Error {
        self.hold.lost().await
    }

    /// The hold behind this guard.
    pub fn hold(&self) -> &Hold {
        &self.hold
    }

    /// Releases this level now and reports the outcome.
    pub async fn release(mut self) -> Result<Released> {
        self.armed = false;
        self.lock.release().await
    }

    /// Keeps the hold without release-on-drop; release it with [`Lock::release`].
    pub fn into_hold(mut self) -> Hold {
        self.armed = false;
        self.hold.clone()
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if self.armed {
            let lock = self.lock.clone();
            self.lock.runtime().spawn(async move {
                if let Err(e) = lock.release().await {
                    tracing::debug!(lock = %lock.name(), error = %e, "release on guard drop failed");
                }
            });
        }
    }
}
