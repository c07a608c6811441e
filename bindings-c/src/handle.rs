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
//! fork(): the registry locks are taken around fork() (pthread_atfork) so that a
//! child never inherits one locked by a thread that does not exist there.
//!
//! Each registry is a `static` beside the type it holds (`LOCKS` in lock.rs, ...):
//! this file knows the handle types by their [`Kind`] only, so it sits below them.

use std::cell::UnsafeCell;
use std::collections::VecDeque;
use std::hint::spin_loop;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Once};

use ferrolock::Error;

use crate::status::invalid;

/// Low bits of a handle value: which registry it belongs to (its [`Kind`]).
const TAG_BITS: u32 = 4;
const TAG_MASK: usize = (1 << TAG_BITS) - 1;

/// The handle types, each a registry's tag (never 0, so no handle is NULL).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Kind {
    Client = 1,
    Lock,
    Semaphore,
    Permits,
    Latch,
    Inspection,
    Scan,
    Election,
    Observer,
}

impl Kind {
    const ALL: [Kind; 9] = [
        Kind::Client,
        Kind::Lock,
        Kind::Semaphore,
        Kind::Permits,
        Kind::Latch,
        Kind::Inspection,
        Kind::Scan,
        Kind::Election,
        Kind::Observer,
    ];

    /// The C type and the function that frees it.
    const fn names(self) -> (&'static str, &'static str) {
        match self {
            Kind::Client => ("ferrolock_client", "ferrolock_client_free"),
            Kind::Lock => ("ferrolock_lock", "ferrolock_lock_free"),
            Kind::Semaphore => ("ferrolock_semaphore", "ferrolock_semaphore_free"),
            Kind::Permits => ("ferrolock_permits", "ferrolock_permits_free"),
            Kind::Latch => ("ferrolock_latch", "ferrolock_latch_free"),
            Kind::Inspection => ("ferrolock_inspection", "ferrolock_inspection_free"),
            Kind::Scan => ("ferrolock_scan", "ferrolock_scan_free"),
            Kind::Election => ("ferrolock_election", "ferrolock_election_free"),
            Kind::Observer => ("ferrolock_observer", "ferrolock_observer_free"),
        }
    }

    fn of_tag(tag: usize) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| *k as usize == tag)
    }
}

/// Each kind's registry lock, by tag: kept here rather than in the registries, so
/// that the fork handler takes them all without knowing the registries' types.
static LOCKED: [AtomicBool; 1 << TAG_BITS] = [const { AtomicBool::new(false) }; 1 << TAG_BITS];

/// Slot index bits above the tag; the generation takes the rest (30 bits on 64-bit
/// targets: a stale handle is mistaken for a live one only after its slot was
/// reused 2^30 times, and slots are reused oldest-freed first).
const INDEX_BITS: u32 = if usize::BITS >= 64 { 30 } else { 20 };
const GEN_SHIFT: u32 = TAG_BITS + INDEX_BITS;
const MAX_SLOTS: usize = 1 << INDEX_BITS;
const GEN_MASK: usize = usize::MAX >> GEN_SHIFT;

pub(crate) struct Registry<T> {
    slots: UnsafeCell<Slots<T>>,
    kind: Kind,
    /// The C type, e.g. "ferrolock_lock", and the function that frees it.
    what: &'static str,
    free_fn: &'static str,
}

// The slots are only touched with the kind's lock (`LOCKED`) held.
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

fn lock_kind(kind: Kind) {
    let locked = &LOCKED[kind as usize];
    let mut spins = 0u32;
    while locked.compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
        while locked.load(Ordering::Relaxed) {
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

fn unlock_kind(kind: Kind) {
    LOCKED[kind as usize].store(false, Ordering::Release);
}

fn encode(tag: usize, index: usize, generation: usize) -> usize {
    (generation << GEN_SHIFT) | (index << TAG_BITS) | tag
}

impl<T> Registry<T> {
    /// The registry of `kind`'s handles (one per kind, in a `static`).
    pub(crate) const fn new(kind: Kind) -> Self {
        let (what, free_fn) = kind.names();
        Registry { slots: UnsafeCell::new(Slots { entries: Vec::new(), free: VecDeque::new() }), kind, what, free_fn }
    }

    fn lock(&self) {
        lock_kind(self.kind);
    }

    fn unlock(&self) {
        unlock_kind(self.kind);
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
        // SAFETY: the kind's lock is held until `_unlock` drops.
        f(unsafe { &mut *self.slots.get() })
    }

    /// Registers `value` and returns its handle value.
    pub(crate) fn insert(&self, value: T) -> Result<usize, Error> {
        let value = Arc::new(value);
        let tag = self.kind as usize;
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
        if tag != self.kind as usize {
            let other = Kind::of_tag(tag).map(|k| k.names().0);
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
        Kind::ALL.into_iter().for_each(lock_kind);
    }
    extern "C" fn after() {
        Kind::ALL.into_iter().rev().for_each(unlock_kind);
    }
    ONCE.call_once(|| {
        // SAFETY: plain functions with static data; registered once.
        unsafe { libc::pthread_atfork(Some(prepare), Some(after), Some(after)) };
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    static TEST: Registry<String> = Registry::new(Kind::Lock);

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
        let as_client = encode(Kind::Client as usize, 0, 0);
        assert!(TEST.get(as_client, "lock").unwrap_err().message().contains("ferrolock_client handle"));
        assert!(TEST.get(0x7fff_dead_bee0, "lock").is_err());
        assert!(TEST.get(usize::MAX, "lock").is_err());
    }

    #[test]
    fn generations_wrap_within_their_bits() {
        let h = encode(Kind::Lock as usize, MAX_SLOTS - 1, GEN_MASK);
        assert_eq!(TEST.slot(h, "lock").unwrap(), (MAX_SLOTS - 1, GEN_MASK));
    }
}
