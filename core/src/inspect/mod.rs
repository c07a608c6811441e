//! What a name is and what is going on there, for operators: the kind told from the
//! keys Redisson lays out (names.rs), its holders with their notes, lease, waiters,
//! permits or count and last fencing token ([`Inspection`]); and the names of every
//! lock-family object under a prefix, on every topology (scan.rs).

use std::time::Duration;

use crate::ctx::Ctx;
use crate::error::Result;
use crate::lock::{HolderEntry, LockStatus};

mod kind;
mod scan;

pub(crate) use scan::scan;

/// What kind of object a name holds, told from its keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ObjectKind {
    /// A reentrant lock (Redisson's `RLock`), or a free name: nothing tells them apart.
    Lock,
    /// A lock with a fencing-token counter (Redisson's `RFencedLock`).
    FencedLock,
    /// A fair lock (`RFairLock`): a queue of waiters.
    FairLock,
    /// A read-write lock (`RReadWriteLock`): its hash names the side that holds it.
    ReadWriteLock,
    /// A semaphore (`RSemaphore`): a number of free permits.
    Semaphore,
    /// A permit-expirable semaphore (`RPermitExpirableSemaphore`): permits with ids and leases.
    PermitExpirableSemaphore,
    /// A count-down latch (`RCountDownLatch`).
    CountDownLatch,
    /// A number nothing waits on: a semaphore's free permits or a latch's count
    /// (nothing tells which; [`crate::Client::inspect_as`] reads it as either).
    SemaphoreOrLatch,
}

impl ObjectKind {
    /// The kind in snake case, as `ferrolock status --json` and `ferrolock top --json` write it.
    pub fn as_str(self) -> &'static str {
        match self {
            ObjectKind::Lock => "lock",
            ObjectKind::FencedLock => "fenced_lock",
            ObjectKind::FairLock => "fair_lock",
            ObjectKind::ReadWriteLock => "read_write_lock",
            ObjectKind::Semaphore => "semaphore",
            ObjectKind::PermitExpirableSemaphore => "permit_expirable_semaphore",
            ObjectKind::CountDownLatch => "count_down_latch",
            ObjectKind::SemaphoreOrLatch => "semaphore_or_latch",
        }
    }

    /// True for the kinds with owners (every lock).
    pub fn is_lock(self) -> bool {
        matches!(self, ObjectKind::Lock | ObjectKind::FencedLock | ObjectKind::FairLock | ObjectKind::ReadWriteLock)
    }
}

/// A permit of a permit-expirable semaphore that is out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermitOut {
    /// Its id in hex (as [`crate::Permit::id`] and Redisson's API give it).
    pub id: String,
    /// Milliseconds left on its lease by this machine's clock (negative: expired, back
    /// at the next acquire); `None`: no lease.
    pub lease_left_ms: Option<i64>,
}

/// A name as the server shows it at one moment. Read with [`crate::Client::inspect`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inspection {
    /// The name (lossy UTF-8).
    pub name: String,
    /// What the keys say it is (or what [`crate::Client::inspect_as`] was asked to read).
    pub kind: ObjectKind,
    /// Locks: holders with their counts and notes, lease left, subscribers of the
    /// release channel, last fencing token. `None` for semaphores and latches.
    pub lock: Option<LockStatus>,
    /// A read-write lock: the side that holds it (`read` or `write`); `None` when free.
    pub mode: Option<String>,
    /// A fair lock: the owner fields waiting, first first.
    pub queue: Vec<String>,
    /// Clients waiting: a fair lock's queue length; for every other kind the clients
    /// subscribed to its channel (one per client with waiters, ferrolock's and Redisson's;
    /// ferrolock's stays subscribed 100 ms after its last waiter left).
    pub waiters: u64,
    /// Semaphores: the free permits (also set for [`ObjectKind::SemaphoreOrLatch`]).
    pub permits: Option<i64>,
    /// A permit-expirable semaphore: the permits out.
    pub permits_out: Vec<PermitOut>,
    /// A count-down latch: its count, 0 once open (also set for [`ObjectKind::SemaphoreOrLatch`]).
    pub count: Option<i64>,
    /// The server's `maxmemory-policy` when it may evict the name's keys (`maxmemory`
    /// set and a policy other than `noeviction`: a held lock or permit could vanish
    /// under memory pressure; set `noeviction`). `None` when it cannot, or its ACL
    /// refuses INFO. Read once when the client connected.
    pub eviction_policy: Option<String>,
}

impl Inspection {
    /// The holders of a lock (empty when free or not a lock), with their notes: what
    /// [`crate::Lock::set_holder_info`] wrote (`ferrolock run`: host, pid and command as JSON).
    pub fn holders(&self) -> &[HolderEntry] {
        self.lock.as_ref().map_or(&[], |lock| &lock.holders)
    }

    /// Time left on a held lock's lease; `Duration::MAX` without expiry, `None` when free.
    pub fn lease_left(&self) -> Option<Duration> {
        self.lock.as_ref().and_then(|lock| lock.remaining_lease)
    }

    /// The last fencing token handed out for the name, if any.
    pub fn last_token(&self) -> Option<u64> {
        self.lock.as_ref().and_then(|lock| lock.last_token)
    }

    /// A lock with holders, a semaphore with permits out (told for a permit-expirable
    /// one), or a latch still counting down.
    pub fn is_busy(&self) -> bool {
        match self.kind {
            ObjectKind::PermitExpirableSemaphore => !self.permits_out.is_empty(),
            ObjectKind::CountDownLatch => self.count.is_some_and(|c| c > 0),
            _ => !self.holders().is_empty(),
        }
    }
}

/// Reads `name` as `kind`, or as what its keys say it is.
pub(crate) async fn inspect(ctx: &Ctx, name: &[u8], kind: Option<ObjectKind>) -> Result<Inspection> {
    crate::validate::name("object", name)?;
    kind::read(ctx, name, kind).await
}
