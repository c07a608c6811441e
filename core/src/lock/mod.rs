//! Locks: every primitive with an owner behind one handle, [`Lock`], the kind
//! being data ([`LockKind`]). The handle is thin: a holder (holder.rs) with its
//! hold state and its calls (ops.rs), the kind's protocol (reentrant.rs and
//! release.rs: Redisson's RLock and RFencedLock), the same-client hand-off
//! (handoff.rs), calls Redis never answered in time (unanswered.rs), and the
//! shared waiting engine (crate::waiting), to which `acquire` hands a
//! `LockAcquire` (acquirer.rs); or a multi-lock over several such handles (multi/: MultiLock
//! and Redlock).

mod acked;
mod acquirer;
mod granted;
mod guard;
mod handoff;
pub(crate) mod holder;
mod later;
mod lease;
mod multi;
mod note;
mod ops;
mod options;
mod reentrant;
mod release;
mod rw;
mod slow_wait;
pub(crate) mod status;
mod unanswered;
mod who;
mod wire;

pub use guard::Guard;
pub use multi::Quorum;
pub use who::{human_duration, HolderEntry, HolderNote};
pub use options::{AcquireOptions, LockKind, LockOptions};
pub use rw::ReadWriteLock;
pub use status::LockStatus;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use crate::ctx::Alive;
use crate::error::{Error, Result};
use crate::hold::{Hold, LostCallback, Released};
use crate::metrics::AcquireTiming;
use crate::validate;
use crate::waiting::{self, Policy};
use holder::Holder;
use multi::Multi;

/// A handle on one lock name for one holder, or on a multi-lock over several
/// ([`Lock::multi`]). Clones share the holder; a new handle from
/// [`crate::Client::lock`] is a new holder. Re-entrant: the same holder may
/// acquire again and must release as often.
///
/// A hold ends only by a release (explicit, or by dropping its [`Guard`]), by
/// the end of an explicit lease, or by the client's shutdown: dropping every
/// handle of a holder that holds keeps the hold (the client keeps it, renewed,
/// and logs a warning), like a thread that exits while holding a C lock.
pub struct Lock {
    repr: Repr,
}

enum Repr {
    One {
        holder: Arc<Holder>,
        /// Keeps the client up while a handle exists (see `ctx::Alive`).
        alive: Arc<Alive>,
    },
    Many(Arc<Multi>),
}

impl Clone for Lock {
    fn clone(&self) -> Self {
        match &self.repr {
            Repr::One { holder, alive } => Lock::from_holder(holder.clone(), alive.clone()),
            Repr::Many(multi) => Lock { repr: Repr::Many(multi.clone()) },
        }
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        let Repr::One { holder, .. } = &self.repr else { return };
        if holder.handles.fetch_sub(1, Ordering::AcqRel) == 1 {
            let count = self.local_hold_count();
            if count > 0 && !holder.ctx.is_shut_down() {
                tracing::warn!(
                    lock = %self.name(),
                    owner = %self.owner(),
                    "the last handle of a holder of lock \"{}\" was dropped while it holds {count} level(s); \
                     the hold stays until its lease ends or the client shuts down (release before dropping)",
                    self.name()
                );
            }
        }
    }
}

impl std::fmt::Debug for Lock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.repr {
            Repr::One { .. } => f
                .debug_struct("Lock")
                .field("name", &self.name())
                .field("owner", &self.owner())
                .field("kind", &self.kind())
                .finish(),
            Repr::Many(multi) => f
                .debug_struct("Lock")
                .field("members", &multi.members)
                .field("quorum", &multi.quorum)
                .finish(),
        }
    }
}

impl Lock {
    pub(crate) fn from_holder(holder: Arc<Holder>, alive: Arc<Alive>) -> Lock {
        holder.handles.fetch_add(1, Ordering::AcqRel);
        Lock { repr: Repr::One { holder, alive } }
    }

    /// One lock over `members` (single locks, usually one name on several
    /// independent Redis masters): held while `quorum` of them are. Redisson's
    /// `RedissonMultiLock` ([`Quorum::All`]) and `RedissonRedLock` ([`Quorum::Majority`]).
    /// Fencing tokens do not compose across servers: a multi-lock has none.
    pub fn multi(members: Vec<Lock>, quorum: Quorum) -> Result<Lock> {
        Ok(Lock { repr: Repr::Many(Multi::new(members, quorum)?) })
    }

    /// Whether this lock's client has its command connection up now (a multi-lock's
    /// release waits for members that have, up to their response timeout).
    pub(crate) fn is_connected(&self) -> bool {
        self.one().is_ok_and(|h| h.ctx.conn().is_ok_and(|c| c.is_ready()))
    }

    /// The holder behind a single lock; `InvalidArgument` for a multi-lock.
    pub(crate) fn one(&self) -> Result<&Arc<Holder>> {
        match &self.repr {
            Repr::One { holder, .. } => Ok(holder),
            Repr::Many(_) => Err(Error::invalid(format!(
                "{self:?} is a multi-lock: ask each of its members() (this call reads one server)"
            ))),
        }
    }

    fn multi_ref(&self) -> Option<&Arc<Multi>> {
        match &self.repr {
            Repr::One { .. } => None,
            Repr::Many(multi) => Some(multi),
        }
    }

    /// The members of a multi-lock, in order; empty for a single lock.
    pub fn members(&self) -> &[Lock] {
        match &self.repr {
            Repr::One { .. } => &[],
            Repr::Many(multi) => &multi.members,
        }
    }

    /// The quorum of a multi-lock; `None` for a single lock.
    pub fn quorum(&self) -> Option<Quorum> {
        match &self.repr {
            Repr::One { .. } => None,
            Repr::Many(multi) => Some(multi.quorum),
        }
    }

    pub(crate) fn runtime(&self) -> &tokio::runtime::Handle {
        match &self.repr {
            Repr::One { holder, .. } => &holder.ctx.runtime,
            Repr::Many(multi) => multi.members[0].runtime(),
        }
    }

    /// The lock name (lossy UTF-8 for non-UTF-8 names); a multi-lock's is its
    /// members' names joined by ",".
    pub fn name(&self) -> &str {
        match &self.repr {
            Repr::One { holder, .. } => holder.names.display(),
            Repr::Many(multi) => &multi.display,
        }
    }

    /// The lock name as given (a multi-lock: see [`Lock::name`]).
    pub fn name_bytes(&self) -> &[u8] {
        match &self.repr {
            Repr::One { holder, .. } => &holder.names.name,
            Repr::Many(multi) => multi.display.as_bytes(),
        }
    }

    /// The owner field this holder writes: `<client-id>:<holder-id>` (a
    /// multi-lock: its first member's).
    pub fn owner(&self) -> &str {
        match &self.repr {
            Repr::One { holder, .. } => &holder.owner,
            Repr::Many(multi) => multi.members[0].owner(),
        }
    }

    /// Which lock this is (a multi-lock: its members' kind).
    pub fn kind(&self) -> LockKind {
        match &self.repr {
            Repr::One { holder, .. } => holder.kind,
            Repr::Many(multi) => multi.members[0].kind(),
        }
    }

    /// True for fenced locks (never for a multi-lock: tokens do not compose).
    pub fn is_fenced(&self) -> bool {
        match &self.repr {
            Repr::One { holder, .. } => holder.is_fenced(),
            Repr::Many(_) => false,
        }
    }

    /// Waits until acquired, with the watchdog lease. The guard releases on drop.
    pub async fn acquire(&self) -> Result<Guard> {
        let hold = self.acquire_hold(AcquireOptions::default()).await?;
        Ok(Guard::new(self.clone(), hold.expect("an unbounded wait only returns when acquired")))
    }

    /// One attempt, no waiting.
    pub async fn try_acquire(&self) -> Result<Option<Guard>> {
        self.acquire_with(AcquireOptions::wait(Duration::ZERO)).await
    }

    /// Acquires with a wait bound and/or an explicit lease. `Ok(None)`: not acquired in time.
    pub async fn acquire_with(&self, options: AcquireOptions) -> Result<Option<Guard>> {
        Ok(self.acquire_hold(options).await?.map(|hold| Guard::new(self.clone(), hold)))
    }

    /// Like [`Lock::acquire_with`], without release-on-drop: the hold lasts until
    /// [`Lock::release`] (or its loss). This is what the bindings use.
    ///
    /// Dropping the returned future at any point leaves nothing held and no
    /// subscription behind.
    pub async fn acquire_hold(&self, options: AcquireOptions) -> Result<Option<Hold>> {
        match &self.repr {
            Repr::One { .. } => self.acquire_offering(options, None).await,
            Repr::Many(multi) => {
                let (lease_ms, deadline) = bounds(&options)?;
                Box::pin(multi.acquire(lease_ms, deadline)).await
            }
        }
    }

    /// A single lock's acquire, offering `candidate` to this client's releases once it
    /// waits (made by a multi-lock waiting on this member, which must know it; `None`:
    /// made when it starts waiting).
    pub(crate) async fn acquire_offering(&self, options: AcquireOptions, candidate: Option<Arc<handoff::Candidate>>) -> Result<Option<Hold>> {
        let (lease_ms, deadline) = bounds(&options)?;
        let holder = self.one()?;
        let ctx = &holder.ctx;
        let channel = waiting::Channel {
            hub: &ctx.hub,
            name: &holder.wait_channel(),
            policy: Policy::Lock,
            shutdown: &ctx.shutdown,
        };
        let timing = AcquireTiming::start(&ctx.transport.metrics, holder.kind.as_str(), &holder.names.display());
        let acquirer = acquirer::LockAcquire {
            holder,
            lease_ms,
            candidate: candidate.map_or_else(OnceLock::new, OnceLock::from),
            queued: AtomicBool::new(false),
            deadline,
            reporter: OnceLock::new(),
        };
        let acquired = waiting::acquire(&acquirer, channel, deadline).await;
        drop(acquirer);
        timing.end(&acquired);
        match acquired? {
            Some(level) => {
                let hold = level.take().hold;
                if holder.ctx.config.holder_notes == crate::HolderNotes::Always {
                    note::write_now(holder).await;
                }
                Ok(Some(hold))
            }
            None => {
                // Who was in the way, for the caller's error (not for a plain try: a
                // loop of tries must not pay a second call each).
                if options.wait.is_some_and(|w| !w.is_zero()) {
                    slow_wait::remember_holder(holder).await;
                }
                Ok(None)
            }
        }
    }

    /// Releases one level of this holder's hold. `NotOwner` if this holder does not
    /// hold it (nothing changes), `LockLost` if its hold was lost meanwhile.
    ///
    /// A release Redis has not answered by the end of the retry window succeeds all
    /// the same: the level is given up here and the client completes the release on
    /// the server as soon as Redis answers (docs/design.md, idempotence). `Connection`
    /// means nothing was sent (a refused connection): the level is still held.
    pub async fn release(&self) -> Result<Released> {
        match &self.repr {
            Repr::One { holder, .. } => holder.release(false).await,
            Repr::Many(multi) => Box::pin(multi.release(false)).await,
        }
    }

    /// Releases every level of this holder's hold at once.
    pub async fn release_all(&self) -> Result<Released> {
        match &self.repr {
            Repr::One { holder, .. } => holder.release(true).await,
            Repr::Many(multi) => Box::pin(multi.release(true)).await,
        }
    }

    /// True while a call of this holder is in flight or being settled in the
    /// background: after a release Redis did not answer within the retry window
    /// (which returned all the same), until Redis answers. A process about to exit
    /// then leaves the lock held until its lease ends, and should say so. A
    /// multi-lock is settling while so many members are that the others cannot make
    /// its quorum (a Redlock released on a majority is free for everyone else).
    pub fn is_settling(&self) -> bool {
        match &self.repr {
            Repr::One { holder, .. } => holder.op.try_lock().is_err(),
            Repr::Many(multi) => multi.is_settling(),
        }
    }

    /// The current hold of this holder (local view), if any.
    pub fn current_hold(&self) -> Option<Hold> {
        match &self.repr {
            Repr::One { holder, .. } => holder.cell.current_hold(),
            Repr::Many(multi) => multi.current_hold(),
        }
    }

    /// This holder's hold count (local view; 0 when not held).
    pub fn local_hold_count(&self) -> u32 {
        match &self.repr {
            Repr::One { holder, .. } => holder.cell.state.lock().unwrap().count,
            Repr::Many(multi) => multi.count(),
        }
    }

    /// The fencing token of this holder's latest acquisition, while held.
    pub fn token(&self) -> Option<u64> {
        self.current_hold().and_then(|h| h.token())
    }

    /// True if this holder's latest hold was lost (until it acquires again).
    pub fn is_lost(&self) -> bool {
        self.lost_error().is_some()
    }

    /// The `LockLost` error of this holder's latest hold, if it was lost.
    pub fn lost_error(&self) -> Option<Error> {
        match &self.repr {
            Repr::One { holder, .. } => holder.cell.state.lock().unwrap().lost_error.clone(),
            Repr::Many(multi) => multi.lost_error(),
        }
    }

    /// Calls `callback` (on a background thread) whenever a hold of this holder is lost.
    /// Replaces any earlier callback; `None` removes it.
    pub fn set_on_lost(&self, callback: Option<LostCallback>) {
        match &self.repr {
            Repr::One { holder, .. } => *holder.cell.on_lost.lock().unwrap() = callback,
            Repr::Many(multi) => *multi.on_lost.lock().unwrap() = callback,
        }
    }
}

/// An acquire's lease and deadline, checked.
fn bounds(options: &AcquireOptions) -> Result<(Option<u64>, Option<Instant>)> {
    let lease_ms = options.lease.map(validate::lease).transpose()?;
    let deadline = options.wait.map(validate::wait).transpose()?.map(|w| Instant::now() + w);
    Ok((lease_ms, deadline))
}
