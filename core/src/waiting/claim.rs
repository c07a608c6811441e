//! The states a waiter goes through when a release of its own client may hand it
//! what it waits for (a lock's hold, a semaphore's permits), shared by every
//! primitive that hands over: the acquire's own tries and a release's claim exclude
//! each other, and what was handed waits here until the acquire takes it.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Mutex;

const OPEN: u8 = 0; // waiting: may be claimed
const TRYING: u8 = 1; // running its own acquire attempt
const CLAIMED: u8 = 2; // a release is handing over to it
const CLOSED: u8 = 3; // handed, or gone

pub(crate) struct Claim<T> {
    state: AtomicU8,
    /// What was handed over, until the acquire takes it. Dropped untaken (the
    /// acquire gave up), it undoes itself.
    handed: Mutex<Option<T>>,
}

impl<T> Default for Claim<T> {
    fn default() -> Self {
        Claim { state: AtomicU8::new(OPEN), handed: Mutex::new(None) }
    }
}

impl<T> Claim<T> {
    fn transition(&self, from: u8, to: u8) -> bool {
        self.state.compare_exchange(from, to, Ordering::AcqRel, Ordering::Acquire).is_ok()
    }

    /// Before the acquire's own attempt: false while a release is handing over to it.
    pub fn begin_attempt(&self) -> bool {
        self.transition(OPEN, TRYING)
    }

    pub fn end_attempt(&self) {
        self.transition(TRYING, OPEN);
    }

    /// The acquire gives up (its wait is over); false if a hand-off is under way.
    pub fn close(&self) -> bool {
        self.transition(OPEN, CLOSED)
    }

    /// True while a release is handing over to this acquire.
    pub fn is_claimed(&self) -> bool {
        self.state.load(Ordering::Acquire) == CLAIMED
    }

    /// A release claims the waiter: false unless it is waiting (not trying, not claimed).
    pub fn claim(&self) -> bool {
        self.transition(OPEN, CLAIMED)
    }

    /// The hand-off did not happen: the waiter goes on by itself.
    pub fn unclaim(&self) {
        self.transition(CLAIMED, OPEN);
    }

    pub fn take_handed(&self) -> Option<T> {
        self.handed.lock().unwrap().take()
    }

    pub fn hand(&self, value: T) {
        *self.handed.lock().unwrap() = Some(value);
        self.state.store(CLOSED, Ordering::Release);
    }
}
