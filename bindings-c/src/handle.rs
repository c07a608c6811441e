//! Handles as C sees them: opaque values that are never dereferenced. A
//! `ferrolock_client *`, `ferrolock_lock *`, `ferrolock_semaphore *`,
//! `ferrolock_permits *`, `ferrolock_latch *`, `ferrolock_inspection *` or
//! `ferrolock_scan *` encodes (type tag, slot index,
//! generation) in a registry of `Arc`s, so a handle that was freed (its slot's
//! generation moved on), freed twice, given as the other type, or that never came
//! from ferrolock is refused with `FERROLOCK_ERR_INVALID_ARGUMENT` instead of being
//! read as memory: the header's "no call crashes the program on bad input" holds
//! for handles too.
//!
//! Each call takes the handle's `Arc` out of the registry under a spin lock held
//! for a slot lookup and a reference-count increment (tens of ns, against the
//! network round-trip of almost every call). A handle freed while another thread
//! is still inside a call on it stays alive until that call returns.
//!
//! fork(): the registry lock is taken around fork() (pthread_atfork) so that a
//! child never inherits it locked by a thread that does not exist there.

use std::cell::UnsafeCell;
use std::collections::VecDeque;
use std::hint::spin_loop;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Once};

use ferrolock::Error;

use crate::client::ClientHandle;
use crate::counters::{LatchState, PermitsState, SemaphoreState};
use crate::election::{ElectionState, ObserverState};
use crate::ffi::invalid;
use crate::inspect::{InspectionState, ScanState};
use crate::lock::LockState;

/// Low bits of a handle value: which registry it belongs to (never 0, so no handle is NULL).
const TAG_BITS: u32 = 4;
const TAG_MASK: usize = (1 << TAG_BITS) - 1;
const TAG_CLIENT: usize = 1;
const TAG_LOCK: usize = 2;
const TAG_SEMAPHORE: usize = 3;
const TAG_PERMITS: usize = 4;
const TAG_LATCH: usize = 5;
const TAG_INSPECTION: usize = 6;
const TAG_SCAN: usize = 7;
const TAG_ELECTION: usize = 8;
const TAG_OBSERVER: usize = 9;
/// Slot index bits above the tag; the generation takes the rest (30 bits on 64-bit
/// targets: a stale handle is mistaken for a live one only after its slot was
/// reused 2^30 times, and slots are reused oldest-freed first).
const INDEX_BITS: u32 = if usize::BITS >= 64 { 30 } else { 20 };
const GEN_SHIFT: u32 = TAG_BITS + INDEX_BITS;
const MAX_SLOTS: usize = 1 << INDEX_BITS;
const GEN_MASK: usize = usize::MAX >> GEN_SHIFT;

pub(crate) struct Registry<T> {
    locked: AtomicBool,
    slots: UnsafeCell<Slots<T>>,
    tag: usize,
    /// The C type, e.g. "ferrolock_lock", and the function that frees it.
    what: &'static str,
    free_fn: &'static str,
}

// The slots are only touched with `locked` held.
unsafe impl<T: Send + Sync> Sync for Registry<T> {}

struct Slots<T> {
    entries: Vec<Entry<T>>,
    /// Free slot indexes, oldest first.
    free: VecDeque<usize>,
}

struct Entry<T> {
    generation: usize,
    value: Option<Arc<T>>,
}

pub(crate) static CLIENTS: Registry<ClientHandle> = Registry::new(TAG_CLIENT, "ferrolock_client", "ferrolock_client_free");
pub(crate) static LOCKS: Registry<LockState> = Registry::new(TAG_LOCK, "ferrolock_lock", "ferrolock_lock_free");
pub(crate) static SEMAPHORES: Registry<SemaphoreState> =
    Registry::new(TAG_SEMAPHORE, "ferrolock_semaphore", "ferrolock_semaphore_free");
pub(crate) static PERMITS: Registry<PermitsState> = Registry::new(TAG_PERMITS, "ferrolock_permits", "ferrolock_permits_free");
pub(crate) static LATCHES: Registry<LatchState> = Registry::new(TAG_LATCH, "ferrolock_latch", "ferrolock_latch_free");
pub(crate) static INSPECTIONS: Registry<InspectionState> =
    Registry::new(TAG_INSPECTION, "ferrolock_inspection", "ferrolock_inspection_free");
pub(crate) static SCANS: Registry<ScanState> = Registry::new(TAG_SCAN, "ferrolock_scan", "ferrolock_scan_free");
pub(crate) static ELECTIONS: Registry<ElectionState> = Registry::new(TAG_ELECTION, "ferrolock_election", "ferrolock_election_free");
pub(crate) static OBSERVERS: Registry<ObserverState> = Registry::new(TAG_OBSERVER, "ferrolock_observer", "ferrolock_observer_free");

fn encode(tag: usize, index: usize, generation: usize) -> usize {
    (generation << GEN_SHIFT) | (index << TAG_BITS) | tag
}

impl<T> Registry<T> {
    const fn new(tag: usize, what: &'static str, free_fn: &'static str) -> Self {
        Registry {
            locked: AtomicBool::new(false),
            slots: UnsafeCell::new(Slots { entries: Vec::new(), free: VecDeque::new() }),
            tag,
            what,
            free_fn,
        }
    }

    fn lock(&self) {
        let mut spins = 0u32;
        while self.locked.compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
            while self.locked.load(Ordering::Relaxed) {
                spins += 1;
                if spins < 64 {
                    spin_loop();
                } else {
                    // The holder may have been preempted: let it run.
                    std::thread::yield_now();
                }
            }
        }
    }

    fn unlock(&self) {
        self.locked.store(false, Ordering::Release);
    }

    /// Runs `f` on the slots with the registry locked. `f` must not drop an `Arc<T>`
    /// (its `Drop` may block on Redis): callers return it and drop it afterwards.
    fn with<R>(&self, f: impl FnOnce(&mut Slots<T>) -> R) -> R {
        register_atfork();
        self.lock();
        struct Unlock<'a, T>(&'a Registry<T>);
        impl<T> Drop for Unlock<'_, T> {
            fn drop(&mut self) {
                self.0.unlock();
            }
        }
        let _unlock = Unlock(self);
        // SAFETY: `locked` is held until `_unlock` drops.
        f(unsafe { &mut *self.slots.get() })
    }

    /// Registers `value` and returns its handle value.
    pub(crate) fn insert(&self, value: T) -> Result<usize, Error> {
        let value = Arc::new(value);
        let tag = self.tag;
        let what = self.what;
        self.with(move |s| {
            let index = match s.free.pop_front() {
                Some(index) => index,
                None if s.entries.len() < MAX_SLOTS => {
                    s.entries.push(Entry { generation: 0, value: None });
                    s.entries.len() - 1
                }
                None => {
                    return Err((
                        value,
                        invalid(format!("too many live {what} handles ({MAX_SLOTS}); free the ones no longer used")),
                    ))
                }
            };
            let entry = &mut s.entries[index];
            entry.value = Some(value);
            Ok(encode(tag, index, entry.generation))
        })
        .map_err(|(value, e)| {
            drop(value); // outside the registry lock
            e
        })
    }

    /// The slot of a handle value, if it is one of this registry's (live or freed).
    fn slot(&self, handle: usize, arg: &str) -> Result<(usize, usize), Error> {
        let tag = handle & TAG_MASK;
        if tag != self.tag {
            let other = match tag {
                TAG_CLIENT => Some(CLIENTS.what),
                TAG_LOCK => Some(LOCKS.what),
                TAG_SEMAPHORE => Some(SEMAPHORES.what),
                TAG_PERMITS => Some(PERMITS.what),
                TAG_LATCH => Some(LATCHES.what),
                TAG_INSPECTION => Some(INSPECTIONS.what),
                TAG_SCAN => Some(SCANS.what),
                TAG_ELECTION => Some(ELECTIONS.what),
                TAG_OBSERVER => Some(OBSERVERS.what),
                _ => None,
            };
            return Err(match other {
                Some(other) => invalid(format!("{arg} is a {other} handle, not a {}", self.what)),
                None => self.unknown(handle, arg),
            });
        }
        Ok(((handle >> TAG_BITS) & (MAX_SLOTS - 1), (handle >> GEN_SHIFT) & GEN_MASK))
    }

    fn unknown(&self, handle: usize, arg: &str) -> Error {
        invalid(format!(
            "{arg} ({handle:#x}) is not a live {}: it was freed with {}() (calls on a freed handle, \
             and freeing it again, are refused) or never came from ferrolock",
            self.what, self.free_fn
        ))
    }

    /// The live object behind a handle value. NULL, freed and foreign values are
    /// `InvalidArgument` naming `arg`.
    pub(crate) fn get(&self, handle: usize, arg: &str) -> Result<Arc<T>, Error> {
        if handle == 0 {
            return Err(invalid(format!("{arg} is NULL")));
        }
        let (index, generation) = self.slot(handle, arg)?;
        self.with(|s| match s.entries.get(index) {
            Some(Entry { generation: g, value: Some(value) }) if *g == generation => Some(value.clone()),
            _ => None,
        })
        .ok_or_else(|| self.unknown(handle, arg))
    }

    /// Unregisters a handle value and returns its object (the caller drops it
    /// outside the registry lock). NULL: `None`.
    pub(crate) fn remove(&self, handle: usize, arg: &str) -> Result<Option<Arc<T>>, Error> {
        if handle == 0 {
            return Ok(None);
        }
        let (index, generation) = self.slot(handle, arg)?;
        self.with(|s| {
            let entry = s.entries.get_mut(index).filter(|e| e.generation == generation && e.value.is_some())?;
            let value = entry.value.take();
            entry.generation = (entry.generation + 1) & GEN_MASK;
            s.free.push_back(index);
            value
        })
        .map(Some)
        .ok_or_else(|| self.unknown(handle, arg))
    }
}

/// Takes every registry lock around fork(), so the child gets them unlocked and
/// consistent (only the forking thread exists there).
fn register_atfork() {
    static ONCE: Once = Once::new();
    extern "C" fn prepare() {
        CLIENTS.lock();
        LOCKS.lock();
        SEMAPHORES.lock();
        PERMITS.lock();
        LATCHES.lock();
        INSPECTIONS.lock();
        SCANS.lock();
        ELECTIONS.lock();
        OBSERVERS.lock();
    }
    extern "C" fn after() {
        OBSERVERS.unlock();
        ELECTIONS.unlock();
        SCANS.unlock();
        INSPECTIONS.unlock();
        LATCHES.unlock();
        PERMITS.unlock();
        SEMAPHORES.unlock();
        LOCKS.unlock();
        CLIENTS.unlock();
    }
    ONCE.call_once(|| {
        // SAFETY: plain functions with static data; registered once.
        unsafe { libc::pthread_atfork(Some(prepare), Some(after), Some(after)) };
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    static TEST: Registry<String> = Registry::new(TAG_LOCK, "ferrolock_lock", "ferrolock_lock_free");

    #[test]
    fn freed_double_freed_and_foreign_handles_are_refused() {
        let a = TEST.insert("a".into()).unwrap();
        assert_eq!(*TEST.get(a, "lock").unwrap(), "a");
        let gone = TEST.remove(a, "lock").unwrap().unwrap();
        assert_eq!(*gone, "a");
        let e = TEST.get(a, "lock").unwrap_err();
        assert!(e.message().contains("not a live ferrolock_lock"), "{}", e.message());
        assert!(TEST.remove(a, "lock").is_err(), "double free");
        // The slot is reused with a new generation: the stale handle stays refused.
        let b = TEST.insert("b".into()).unwrap();
        assert_ne!(a, b);
        assert!(TEST.get(a, "lock").is_err());
        assert_eq!(*TEST.get(b, "lock").unwrap(), "b");
        assert!(TEST.get(0, "lock").unwrap_err().message().contains("NULL"));
        assert!(TEST.remove(0, "lock").unwrap().is_none());
        let as_client = encode(TAG_CLIENT, 0, 0);
        assert!(TEST.get(as_client, "lock").unwrap_err().message().contains("ferrolock_client handle"));
        assert!(TEST.get(0x7fff_dead_bee0, "lock").is_err());
        assert!(TEST.get(usize::MAX, "lock").is_err());
    }

    #[test]
    fn generations_wrap_within_their_bits() {
        let h = encode(TAG_LOCK, MAX_SLOTS - 1, GEN_MASK);
        assert_eq!(TEST.slot(h, "lock").unwrap(), (MAX_SLOTS - 1, GEN_MASK));
    }
}
