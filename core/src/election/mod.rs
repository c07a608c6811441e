//! Leader election on the fenced lock of the election's name: the candidate that
//! holds the lock leads, its fencing token is its term (strictly increasing across
//! leaders), and its loss is the lock's loss, told as a hold's is. A Redisson
//! `RLock` or `RFencedLock` of the same name excludes our candidates and is
//! excluded by them: same keys, same scripts' effects.
//!
//! What the lock alone does not give: a leader says who it is at once (its holder
//! note, written by the campaign rather than once the hold has lasted) and
//! announces itself on a channel of ferrolock's own (announce.rs), so that
//! [`Election::leader`] answers right after a campaign and observers
//! (observe.rs) hear every new leader, in order, without polling; leader.rs reads
//! who leads now.

mod announce;
mod leader;
mod observe;

pub use leader::Leader;
pub use observe::Observer;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::ctx::Alive;
use crate::error::{Error, ErrorKind, Result};
use crate::hold::{Hold, LostCallback};
use crate::lock::{AcquireOptions, Guard, Lock};

/// One candidate in the election `name`: campaigns, leads with a term, resigns.
/// Clones are the same candidate. Made by [`crate::Client::election`].
///
/// The candidate is the fenced lock of the name (one holder): leading is holding
/// it, renewed by the client's watchdog with the client's lease (so the lease,
/// notes and replica-ack settings are the client's).
#[derive(Clone)]
pub struct Election {
    lock: Lock,
    alive: Arc<Alive>,
    /// Set while a campaign of this candidate is under way.
    campaigning: Arc<AtomicBool>,
}

impl std::fmt::Debug for Election {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Election").field("name", &self.name()).field("candidate", &self.lock.owner()).finish()
    }
}

/// This candidate's leadership: its term and a signal that fires if it is lost.
/// Dropping it resigns (in the background) unless it was turned into a plain
/// [`Hold`] with [`Leadership::into_hold`].
#[must_use = "dropping the leadership resigns at once"]
pub struct Leadership {
    guard: Guard,
    term: u64,
}

impl std::fmt::Debug for Leadership {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Leadership").field("election", &self.guard.lock().name()).field("term", &self.term).finish()
    }
}

impl Election {
    pub(crate) fn new(lock: Lock, alive: Arc<Alive>) -> Election {
        Election { lock, alive, campaigning: Arc::default() }
    }

    /// The election's name (the lock's; lossy UTF-8).
    pub fn name(&self) -> &str {
        self.lock.name()
    }

    /// The fenced lock this candidate holds while it leads (for its status, notes).
    pub fn lock(&self) -> &Lock {
        &self.lock
    }

    /// Waits (on pub/sub, as an acquire does) until this candidate leads.
    pub async fn campaign(&self) -> Result<Leadership> {
        let led = self.campaign_with(None).await?;
        Ok(led.expect("an unbounded campaign only returns when it leads"))
    }

    /// Campaigns for at most `wait` (`None`: as long as it takes; zero: one try).
    /// `Ok(None)`: another candidate (or a Redisson lock holder) led all along.
    /// `InvalidArgument` if this candidate leads already or campaigns elsewhere.
    ///
    /// Dropping the future at any point leaves nothing held.
    pub async fn campaign_with(&self, wait: Option<Duration>) -> Result<Option<Leadership>> {
        if let Some(term) = self.term() {
            return Err(Error::invalid(format!(
                "this candidate already leads election \"{}\" (term {term}); resign first",
                self.name()
            )));
        }
        if self.campaigning.swap(true, Ordering::AcqRel) {
            return Err(Error::invalid(format!(
                "a campaign of this candidate in election \"{}\" is already under way; one at a time",
                self.name()
            )));
        }
        struct Done<'a>(&'a AtomicBool);
        impl Drop for Done<'_> {
            fn drop(&mut self) {
                self.0.store(false, Ordering::Release);
            }
        }
        let _done = Done(&self.campaigning);
        let options = AcquireOptions { wait, lease: None };
        // A guard until the end: a campaign dropped while it announces resigns.
        let Some(guard) = self.lock.acquire_with(options).await? else { return Ok(None) };
        let term = guard.token().ok_or_else(|| Error::internal("a fenced acquire returned no token"))?;
        announce::announce(&self.lock, term).await;
        Ok(Some(Leadership { guard, term }))
    }

    /// [`Election::campaign_with`] without resign-on-drop: the leadership lasts
    /// until [`Election::resign`], its loss or the client's close. What the bindings use.
    pub async fn campaign_hold(&self, wait: Option<Duration>) -> Result<Option<Hold>> {
        Ok(self.campaign_with(wait).await?.map(Leadership::into_hold))
    }

    /// Ends this candidate's leadership: the lock is released and another candidate
    /// may lead at once. `Ok(true)` if it led, `Ok(false)` if it did not (any more: a
    /// lost leadership was told through its lost signal).
    pub async fn resign(&self) -> Result<bool> {
        if self.lock.local_hold_count() == 0 {
            return Ok(false);
        }
        resigned(self.lock.release_all().await)
    }

    /// True while this candidate leads (local view: until it resigns or learns of a loss).
    pub fn is_leading(&self) -> bool {
        self.lock.current_hold().is_some_and(|h| !h.is_lost())
    }

    /// The term of this candidate's leadership while it leads.
    pub fn term(&self) -> Option<u64> {
        self.lock.current_hold().filter(|h| !h.is_lost()).and_then(|h| h.token())
    }

    /// This candidate's current leadership as a plain [`Hold`] (term = its token,
    /// and its lost signal), while it leads.
    pub fn leadership(&self) -> Option<Hold> {
        self.lock.current_hold()
    }

    /// The `LockLost` error of this candidate's latest leadership, if it was lost.
    pub fn lost_error(&self) -> Option<Error> {
        self.lock.lost_error()
    }

    /// Calls `callback` (on a background thread) whenever a leadership of this
    /// candidate is lost. Replaces any earlier callback; `None` removes it.
    pub fn set_on_lost(&self, callback: Option<LostCallback>) {
        self.lock.set_on_lost(callback);
    }

    /// Names this candidate in its leader note (a thread, task or job label);
    /// `None` removes it. At most 600 bytes.
    pub fn set_label(&self, label: Option<&str>) -> Result<()> {
        self.lock.set_holder_label(label)
    }

    /// Who leads now, as the server sees it: the holder of the election's lock with
    /// its note and the term. `None` when nobody leads. A holder that took the
    /// name with a plain Redisson `RLock` (no token) is shown with the latest term
    /// handed out. `WrongType` if the key at the name is not a lock.
    pub async fn leader(&self) -> Result<Option<Leader>> {
        leader::read(&self.alive.0, self.lock.name_bytes()).await
    }

    /// Leadership changes from now on, starting with who leads now: see [`Observer`].
    pub async fn observe(&self) -> Result<Observer> {
        Observer::start(self.alive.clone(), self.lock.name_bytes()).await
    }
}

impl Leadership {
    /// The term: this leadership's fencing token, larger than every earlier leader's.
    pub fn term(&self) -> u64 {
        self.term
    }

    /// True once this leadership has been lost.
    pub fn is_lost(&self) -> bool {
        self.guard.is_lost()
    }

    /// Resolves with the `LockLost` error when this leadership is lost (before
    /// another candidate can lead, as a hold's loss is told); never for a resignation.
    pub async fn lost(&self) -> Error {
        self.guard.lost().await
    }

    /// The hold behind this leadership.
    pub fn hold(&self) -> &Hold {
        self.guard.hold()
    }

    /// Resigns now: `Ok(true)`, or `Ok(false)` if the leadership was lost meanwhile.
    pub async fn resign(self) -> Result<bool> {
        resigned(self.guard.release().await)
    }

    /// Keeps leading without resign-on-drop; resign with [`Election::resign`].
    pub fn into_hold(self) -> Hold {
        self.guard.into_hold()
    }
}

/// A release's outcome as a resignation: a lost leadership (or none) resigns nothing.
fn resigned(released: Result<crate::Released>) -> Result<bool> {
    match released {
        Ok(_) => Ok(true),
        Err(e) if matches!(e.kind(), ErrorKind::LockLost | ErrorKind::NotOwner) => Ok(false),
        Err(e) => Err(e),
    }
}
