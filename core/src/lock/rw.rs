//! Redisson's `RReadWriteLock`: one name, two sides. Both [`Lock`]s of one
//! [`ReadWriteLock`] share the holder identity (one owner field), so that the
//! writer may also take read holds, and keep them after it stops writing
//! (downgrade), as Redisson allows; the reverse (upgrade) waits forever there and here.

use super::Lock;

/// The two sides of one read-write lock for one holder ([`crate::Client::read_write_lock`]).
#[derive(Debug, Clone)]
pub struct ReadWriteLock {
    pub(crate) read: Lock,
    pub(crate) write: Lock,
}

impl ReadWriteLock {
    /// The read side: held by many readers at once, never with another holder's write.
    pub fn read(&self) -> Lock {
        self.read.clone()
    }

    /// The write side: held by one holder alone (its own read holds aside).
    pub fn write(&self) -> Lock {
        self.write.clone()
    }
}
