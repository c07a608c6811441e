//! Holds: the public view of an acquisition ([`Hold`], [`Released`], loss
//! notices), the local state behind it (state.rs: count, token, deadline, lost
//! signal, renewal bookkeeping) and the machinery that keeps the server and the
//! local view together when callers go away (pending.rs).

pub(crate) mod pending;
pub(crate) mod state;

use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::watch;

use crate::error::Error;

/// Called once when a hold is lost, from a background thread.
pub type LostCallback = Arc<dyn Fn(&LostEvent) + Send + Sync>;

/// What an `on_lost` callback is told.
#[derive(Debug, Clone)]
pub struct LostEvent {
    /// The lock name (lossy UTF-8).
    pub name: String,
    /// The owner field of the hold that was lost.
    pub owner: String,
    /// Why, in a few words (e.g. "its lease (5000 ms) ran out before it was renewed or released").
    pub reason: String,
    /// The `LockLost` error, whose message names the lock and the holder and gives the reason.
    pub error: Error,
    /// When the holder learned of the loss (monotonic clock).
    pub at: Instant,
}

/// A snapshot of one acquisition: its fencing token and a signal that fires if
/// the hold is lost. Dropping it changes nothing (see `Guard` for release-on-drop).
#[derive(Debug, Clone)]
pub struct Hold {
    pub(crate) token: Option<u64>,
    pub(crate) count: u32,
    pub(crate) lost: Lost,
}

/// Where a hold's loss shows: a single lock's [`LostSignal`], or a multi-lock's watch channel.
#[derive(Debug, Clone)]
pub(crate) enum Lost {
    Signal(Arc<LostSignal>),
    Watch(watch::Receiver<Option<Error>>),
}

impl From<watch::Receiver<Option<Error>>> for Lost {
    fn from(rx: watch::Receiver<Option<Error>>) -> Lost {
        Lost::Watch(rx)
    }
}

/// The loss signal of one hold of a single lock: the error once lost, and a watch
/// channel made only when someone asks for one. A channel is about 400 bytes and
/// most holds never need it (issue 30: memory per hold).
#[derive(Debug, Default)]
pub(crate) struct LostSignal(Mutex<LostState>);

#[derive(Debug, Default)]
struct LostState {
    error: Option<Error>,
    watch: Option<watch::Sender<Option<Error>>>,
    /// Run once when the hold is lost (a multi-lock over it checks its quorum then).
    hooks: Option<Box<Hooks>>,
}

/// What runs when a hold is lost: a push, so that nothing waits on every hold (a
/// multi-lock's task per hold cost its cycle two wake-ups of a runtime thread).
/// Runs under the holder's lock: a hook must only hand the work on (spawn it).
pub(crate) type LossHook = Box<dyn FnOnce() + Send>;

#[derive(Default)]
struct Hooks(Vec<LossHook>);

impl std::fmt::Debug for Hooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} loss hook(s)", self.0.len())
    }
}

impl LostSignal {
    pub fn error(&self) -> Option<Error> {
        self.0.lock().unwrap().error.clone()
    }

    pub fn is_set(&self) -> bool {
        self.0.lock().unwrap().error.is_some()
    }

    /// Marks the hold lost (once: the holder's generation check keeps it so).
    pub fn set(&self, error: Error) {
        let mut st = self.0.lock().unwrap();
        if let Some(tx) = &st.watch {
            tx.send_replace(Some(error.clone()));
        }
        st.error = Some(error);
        let hooks = st.hooks.take();
        drop(st);
        for hook in hooks.into_iter().flat_map(|h| h.0) {
            hook();
        }
    }

    /// Runs `hook` once the hold is lost (at once if it is already).
    pub fn on_lost(&self, hook: LossHook) {
        let mut st = self.0.lock().unwrap();
        if st.error.is_some() {
            drop(st);
            return hook();
        }
        st.hooks.get_or_insert_with(Default::default).0.push(hook);
    }

    /// True if a hold of it, or a receiver, may still tell it from a new one.
    pub fn is_heard(self: &Arc<Self>) -> bool {
        let st = self.0.lock().unwrap();
        Arc::strong_count(self) > 1 || st.error.is_some() || st.watch.is_some() || st.hooks.is_some()
    }

    /// Its hold is over and a new one takes another signal: its receivers see the
    /// channel close, and its hooks (a hold's that is over) go.
    pub fn retire(&self) {
        let mut st = self.0.lock().unwrap();
        st.watch = None;
        st.hooks = None;
    }

    /// A receiver that turns `Some(error)` when the hold is lost (already, if it is).
    pub fn watch(&self) -> watch::Receiver<Option<Error>> {
        let mut st = self.0.lock().unwrap();
        if let Some(tx) = &st.watch {
            return tx.subscribe();
        }
        let (tx, rx) = watch::channel(st.error.clone());
        st.watch = Some(tx);
        rx
    }
}

impl Hold {
    /// The fencing token of this acquisition (fenced locks only).
    pub fn token(&self) -> Option<u64> {
        self.token
    }

    /// The hold count right after this acquisition (1 for a first acquisition).
    pub fn hold_count(&self) -> u32 {
        self.count
    }

    /// True once the hold has been lost.
    pub fn is_lost(&self) -> bool {
        match &self.lost {
            Lost::Signal(signal) => signal.is_set(),
            Lost::Watch(rx) => rx.borrow().is_some(),
        }
    }

    /// The `LockLost` error, if the hold has been lost.
    pub fn lost_error(&self) -> Option<Error> {
        match &self.lost {
            Lost::Signal(signal) => signal.error(),
            Lost::Watch(rx) => rx.borrow().clone(),
        }
    }

    /// True if `other` is an acquisition of the same hold as this one (re-entries of
    /// a hold share it; a new hold after a release or a loss is another).
    pub fn same_hold(&self, other: &Hold) -> bool {
        match (&self.lost, &other.lost) {
            (Lost::Signal(a), Lost::Signal(b)) => Arc::ptr_eq(a, b),
            (Lost::Watch(a), Lost::Watch(b)) => a.same_channel(b),
            _ => false,
        }
    }

    /// Resolves with the `LockLost` error when the hold is lost; never resolves
    /// for a hold that ends by release.
    pub async fn lost(&self) -> Error {
        let mut rx = self.lost_watch();
        let result = rx.wait_for(Option::is_some).await.map(|v| v.clone());
        match result {
            Ok(Some(err)) => err,
            _ => std::future::pending().await,
        }
    }

    /// Runs `hook` once this hold is lost (a single lock's: a multi-lock's never runs it).
    pub(crate) fn on_lost(&self, hook: LossHook) {
        if let Lost::Signal(signal) = &self.lost {
            signal.on_lost(hook);
        }
    }

    /// A watch channel that turns `Some(error)` when the hold is lost (for bindings).
    pub fn lost_watch(&self) -> watch::Receiver<Option<Error>> {
        match &self.lost {
            Lost::Signal(signal) => signal.watch(),
            Lost::Watch(rx) => rx.clone(),
        }
    }
}

/// What a release did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Released {
    /// Re-entrant hold: still held with this many levels left.
    StillHeld(u32),
    /// The hold is over: the lock is free now (one waiter was woken) or was handed to
    /// a waiter of this client. (After a release Redis did not answer within the retry
    /// window: on the server as soon as Redis answers.)
    Unlocked,
}

