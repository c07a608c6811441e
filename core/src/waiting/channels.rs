//! What a client's hub (hub.rs) shares with its subscriber task (subscriber.rs):
//! the channels with waiters, each waiter's wake-up flag, and how a channel's
//! messages wake its waiters ([`Policy`]: data, not code per primitive).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::runtime::Handle;
use tokio::sync::{mpsc, watch, Notify};
use tokio::task::JoinHandle;

use crate::config::Config;
use crate::transport::Transport;

/// How a channel's messages wake its waiters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(dead_code)] // Permits and Gate come with the semaphores and the count-down latch.
pub(crate) enum Policy {
    /// Locks: `0` wakes one waiter, `1` (a write lock's release) wakes all.
    Lock,
    /// Semaphores: the payload is a number of permits; wake that many waiters.
    Permits,
    /// Count-down latches: `0` (opened) wakes all; anything else wakes none.
    Gate,
}

/// What one message does to a channel's waiters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wake {
    None,
    /// The first n waiters not already woken.
    First(usize),
    All,
}

impl Policy {
    pub fn decode(self, payload: &[u8]) -> Wake {
        match (self, payload) {
            (Policy::Lock, b"0") => Wake::First(1),
            (Policy::Lock, b"1") => Wake::All,
            (Policy::Permits, n) => std::str::from_utf8(n).ok().and_then(|n| n.parse().ok()).map_or(Wake::None, Wake::First),
            (Policy::Gate, b"0") => Wake::All,
            _ => Wake::None,
        }
    }
}

/// What a listener hears on a channel (an observer: every message, without taking
/// a waiter's wake-up).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Heard {
    /// A message: its channel and payload.
    Message(Vec<u8>, Vec<u8>),
    /// Messages may have been missed (a reconnect, a subscription the server ended).
    Gap,
}

/// A waiter a release of this client may hand its hold to.
pub(crate) trait Successor: Send + Sync {
    /// Claims this waiter for a hand-off of what a release offers (a lock: the
    /// releasing holder's id; a semaphore: the permits it returns); false if it
    /// cannot take that now (it is the releaser, wants other permits, is busy, or
    /// is already claimed).
    fn try_claim(&self, offer: u64) -> bool;
    /// The concrete waiter, for the primitive that made it.
    fn as_any(self: Arc<Self>) -> Arc<dyn std::any::Any + Send + Sync>;
}

/// What the client knows of a count behind a channel (a semaphore's free permits)
/// before a try of `amount` ([`super::hub::Hub::known`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Known {
    /// A try sent since the channel's last message found fewer than that free: the
    /// count only rises with a release that publishes, which this client has not
    /// heard yet, so this try would fail too.
    Short,
    /// Ask the server; after a failed try, tell the hub with this epoch (None: not
    /// subscribed, so a rise could go unheard and nothing is noted).
    Ask(Option<u64>),
}

pub(super) struct Shared {
    pub state: Mutex<State>,
    pub transport: Transport,
    pub config: Config,
    pub runtime: Handle,
    pub shutdown: watch::Receiver<bool>,
    /// Waiters registered on any channel: every acquire and every release asks
    /// whether a channel has waiters, and mostly none has; this answers without the lock.
    pub waiting: AtomicUsize,
    /// Set once the server refused a subscription (ACL): warned about once per client.
    pub refused_warned: AtomicBool,
    /// Acquires parked between tries, waiting for a wake-up.
    pub parked: AtomicUsize,
    /// Entries in `State::streaks`: while there are none and nobody waits, a
    /// release has nothing to ask the hub.
    pub streaking: AtomicUsize,
    /// Entries in `State::channels` (with waiters, or lingering): while there are
    /// none, an acquire has nothing to ask the hub before its first try.
    pub channels: AtomicUsize,
    /// Listeners registered on any channel (observers: hub.rs's `listen`).
    pub listening: AtomicUsize,
}

#[derive(Default)]
pub(super) struct State {
    pub channels: HashMap<Vec<u8>, Channel>,
    /// Channels whose subscription may need changing; the connection task drains it.
    pub reconcile: Option<mpsc::UnboundedSender<Vec<u8>>>,
    pub task: Option<JoinHandle<()>>,
    /// Hand-offs in a row per channel, for what has no holder to count them (a
    /// semaphore's permits). Kept apart from `channels`, whose entries go whenever
    /// the client has no waiter left; an entry goes with the next release that frees.
    pub streaks: HashMap<Vec<u8>, u32>,
}

pub(super) struct Channel {
    pub waiters: VecDeque<Arc<Slot>>,
    /// Listeners, by id: each hears every message and gap, and takes no wake-up.
    pub listeners: Vec<(u64, mpsc::UnboundedSender<Heard>)>,
    policy: Policy,
    /// When the primitive was last seen to expire (from a failed attempt): a waiter
    /// that queues behind others without trying wakes by then at the latest.
    pub busy_until: Option<Instant>,
    /// True while subscribed on the current connection; set with [`Channel::set_subscribed`].
    pub subscribed: watch::Sender<bool>,
    /// Moves with every message, wake-all and change of subscription: whatever may
    /// follow a rise of the count that a try sent before it did not see.
    pub epoch: AtomicU64,
    /// (epoch, amount): a try for `amount` sent in that epoch found the count short.
    pub short: Option<(u64, u64)>,
    /// When its last waiter or listener left (None while [`Channel::wanted`]): the subscription
    /// outlives it by subscriber.rs's `LINGER`. The moment also names the idle spell.
    pub idle_since: Option<Instant>,
}

/// One waiter's wake-up flag, and what a release may hand its hold to.
pub(super) struct Slot {
    pub woken: AtomicBool,
    pub notify: Notify,
    pub successor: Option<Arc<dyn Successor>>,
}

impl Slot {
    pub fn wake(&self) {
        self.woken.store(true, Ordering::Release);
        self.notify.notify_one();
    }
}

impl Channel {
    pub fn new(policy: Policy) -> Self {
        Channel { waiters: VecDeque::new(), listeners: Vec::new(), policy, busy_until: None, subscribed: watch::channel(false).0, epoch: AtomicU64::new(0), short: None, idle_since: None }
    }

    /// True while it should be subscribed: someone waits or listens there.
    pub fn wanted(&self) -> bool {
        !self.waiters.is_empty() || !self.listeners.is_empty()
    }

    /// Messages may have been lost: every waiter tries again, every listener hears a gap.
    pub fn missed(&self) {
        self.wake_all();
        self.listeners.iter().for_each(|(_, tx)| {
            let _ = tx.send(Heard::Gap);
        });
    }

    /// The epoch while subscribed: a try sent after reading it, and the same epoch
    /// read again later, mean no message, wake-all or subscription change in between.
    pub fn live_epoch(&self) -> Option<u64> {
        self.subscribed.borrow().then(|| self.epoch.load(Ordering::Acquire))
    }

    /// Messages may be missed while not subscribed: what the tries before saw goes stale.
    pub fn set_subscribed(&self, live: bool) {
        self.epoch.fetch_add(1, Ordering::AcqRel);
        self.subscribed.send_replace(live);
    }

    /// Wakes the first `n` waiters that are not already woken.
    pub fn wake_first(&self, n: usize) {
        self.waiters.iter().filter(|s| !s.woken.load(Ordering::Acquire)).take(n).for_each(|s| s.wake());
    }

    pub fn wake_all(&self) {
        self.epoch.fetch_add(1, Ordering::AcqRel);
        self.waiters.iter().for_each(|s| s.wake());
    }

    /// Applies one message, by the channel's policy.
    pub fn deliver(&self, channel: &[u8], payload: &[u8]) {
        self.epoch.fetch_add(1, Ordering::AcqRel);
        for (_, tx) in &self.listeners {
            let _ = tx.send(Heard::Message(channel.to_vec(), payload.to_vec()));
        }
        match self.policy.decode(payload) {
            Wake::None => {}
            Wake::First(n) => self.wake_first(n),
            Wake::All => self.wake_all(),
        }
    }
}
