//! The waiters of one client, per channel: one subscription per channel on the
//! client's one subscriber connection (subscriber.rs), reference counted by the
//! waiters on it. How a message wakes them is the channel's [`Policy`] (data, not
//! code per primitive); a wake left unused by a waiter that leaves passes to the
//! next. After a reconnect every waiter is woken, since messages sent during the
//! gap are lost. A waiter may offer a [`Successor`]: a release of this client may
//! then hand its hold straight to it (lock/handoff.rs).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::runtime::Handle;
use tokio::sync::{mpsc, watch, Notify};
use tokio::task::JoinHandle;

use super::subscriber;
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

/// A waiter a release of this client may hand its hold to.
pub(crate) trait Successor: Send + Sync {
    /// Claims this waiter for a hand-off by the holder `releaser`; false if it
    /// cannot take one now (it is the releaser, busy, or already claimed).
    fn try_claim(&self, releaser: u64) -> bool;
    /// The concrete waiter, for the primitive that made it.
    fn as_any(self: Arc<Self>) -> Arc<dyn std::any::Any + Send + Sync>;
}

/// A claimed successor and the wake-up of its waiter.
pub(crate) struct Claimed {
    pub successor: Arc<dyn Successor>,
    pub wake: Box<dyn Fn() + Send + Sync>,
}

pub(crate) struct Hub {
    pub(super) shared: Arc<Shared>,
}

pub(super) struct Shared {
    pub state: Mutex<State>,
    pub transport: Transport,
    pub config: Config,
    runtime: Handle,
    pub shutdown: watch::Receiver<bool>,
    /// Waiters registered on any channel: every acquire and every release asks
    /// whether a channel has waiters, and mostly none has; this answers without the lock.
    pub waiting: AtomicUsize,
    /// Set once the server refused a subscription (ACL): warned about once per client.
    pub refused_warned: AtomicBool,
    /// Acquires parked between tries, waiting for a wake-up.
    parked: AtomicUsize,
}

#[derive(Default)]
pub(super) struct State {
    pub channels: HashMap<Vec<u8>, Channel>,
    /// Channels whose subscription may need changing; the connection task drains it.
    pub reconcile: Option<mpsc::UnboundedSender<Vec<u8>>>,
    task: Option<JoinHandle<()>>,
}

pub(super) struct Channel {
    pub waiters: VecDeque<Arc<Slot>>,
    policy: Policy,
    /// When the primitive was last seen to expire (from a failed attempt): a waiter
    /// that queues behind others without trying wakes by then at the latest.
    busy_until: Option<Instant>,
    /// True while subscribed on the current connection.
    pub subscribed: watch::Sender<bool>,
}

/// One waiter's wake-up flag, and what a release may hand its hold to.
pub(super) struct Slot {
    woken: AtomicBool,
    notify: Notify,
    successor: Option<Arc<dyn Successor>>,
}

impl Slot {
    fn wake(&self) {
        self.woken.store(true, Ordering::Release);
        self.notify.notify_one();
    }
}

impl Channel {
    fn new(policy: Policy) -> Self {
        Channel { waiters: VecDeque::new(), policy, busy_until: None, subscribed: watch::channel(false).0 }
    }

    /// Wakes the first `n` waiters that are not already woken.
    fn wake_first(&self, n: usize) {
        self.waiters.iter().filter(|s| !s.woken.load(Ordering::Acquire)).take(n).for_each(|s| s.wake());
    }

    pub fn wake_all(&self) {
        self.waiters.iter().for_each(|s| s.wake());
    }

    /// Applies one message, by the channel's policy.
    pub fn deliver(&self, payload: &[u8]) {
        match self.policy.decode(payload) {
            Wake::None => {}
            Wake::First(n) => self.wake_first(n),
            Wake::All => self.wake_all(),
        }
    }
}

/// A registered waiter on one channel. Dropping it leaves the channel (and
/// unsubscribes when it was the last waiter).
pub(crate) struct Waiter {
    shared: Arc<Shared>,
    channel: Vec<u8>,
    slot: Arc<Slot>,
}

impl Waiter {
    /// Resolves when a message (or a reconnect) woke this waiter.
    pub async fn woken(&self) {
        loop {
            let notified = self.slot.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.slot.woken.swap(false, Ordering::AcqRel) {
                return;
            }
            notified.await;
        }
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        let mut state = self.shared.state.lock().unwrap();
        self.shared.waiting.fetch_sub(1, Ordering::AcqRel);
        let Some(channel) = state.channels.get_mut(&self.channel) else { return };
        channel.waiters.retain(|s| !Arc::ptr_eq(s, &self.slot));
        if self.slot.woken.load(Ordering::Acquire) {
            // This waiter leaves with an unused wake: hand it on.
            channel.wake_first(1);
        }
        if channel.waiters.is_empty() {
            if let Some(tx) = &state.reconcile {
                let _ = tx.send(self.channel.clone());
            }
        }
    }
}

impl Hub {
    pub fn new(transport: Transport, config: Config, runtime: Handle, shutdown: watch::Receiver<bool>) -> Self {
        let shared = Shared {
            state: Mutex::new(State::default()),
            transport,
            config,
            runtime,
            shutdown,
            waiting: AtomicUsize::new(0),
            refused_warned: AtomicBool::new(false),
            parked: AtomicUsize::new(0),
        };
        Hub { shared: Arc::new(shared) }
    }

    /// True if this client already has waiters on `channel`.
    pub fn has_waiters(&self, channel: &[u8]) -> bool {
        if self.shared.waiting.load(Ordering::Acquire) == 0 {
            return false;
        }
        let state = self.shared.state.lock().unwrap();
        state.channels.get(channel).is_some_and(|c| !c.waiters.is_empty())
    }

    /// Records when the primitive behind `channel` will expire unless renewed.
    pub fn note_busy(&self, channel: &[u8], until: Instant) {
        let mut state = self.shared.state.lock().unwrap();
        if let Some(c) = state.channels.get_mut(channel) {
            c.busy_until = Some(until);
        }
    }

    /// Registers a waiter on `channel`, subscribing if it is the first, and waits
    /// (bounded by the response timeout) until the subscription is confirmed.
    /// Past that bound the caller still wakes by the primitive's TTL.
    ///
    /// Returns `Some(deadline)` when the waiter joined a live subscription behind
    /// other waiters while the primitive was known busy until `deadline`: it may wait
    /// for its turn without trying first, since the next release wakes the queue in order.
    ///
    /// A waiter with a `successor` may be handed a hold by a release of this client.
    pub async fn waiter(&self, channel: &[u8], policy: Policy, successor: Option<Arc<dyn Successor>>) -> (Waiter, Option<Instant>) {
        let slot = Arc::new(Slot { woken: AtomicBool::new(false), notify: Notify::new(), successor });
        let (mut subscribed, queued) = {
            let mut state = self.shared.state.lock().unwrap();
            if state.task.is_none() {
                let (tx, rx) = mpsc::unbounded_channel();
                state.reconcile = Some(tx);
                state.task = Some(self.shared.runtime.spawn(subscriber::run(self.shared.clone(), rx)));
            }
            let entry = state.channels.entry(channel.to_vec()).or_insert_with(|| Channel::new(policy));
            let live = *entry.subscribed.borrow();
            let queued = entry
                .busy_until
                .filter(|until| live && !entry.waiters.is_empty() && *until > Instant::now());
            entry.waiters.push_back(slot.clone());
            self.shared.waiting.fetch_add(1, Ordering::AcqRel);
            let rx = entry.subscribed.subscribe();
            if !live {
                if let Some(tx) = &state.reconcile {
                    let _ = tx.send(channel.to_vec());
                }
            }
            (rx, queued)
        };
        let waiter = Waiter { shared: self.shared.clone(), channel: channel.to_vec(), slot };
        let mut shutdown = self.shared.shutdown.clone();
        tokio::select! {
            _ = tokio::time::timeout(self.shared.config.response_timeout, subscribed.wait_for(|s| *s)) => {}
            _ = shutdown.wait_for(|down| *down) => {}
        }
        (waiter, queued)
    }

    /// Claims the first waiter on `channel` that a release by holder `releaser` may
    /// hand its hold to, in queue order; `None` when there is none.
    pub fn claim_successor(&self, channel: &[u8], releaser: u64) -> Option<Claimed> {
        if self.shared.waiting.load(Ordering::Acquire) == 0 {
            return None;
        }
        let state = self.shared.state.lock().unwrap();
        let entry = state.channels.get(channel)?;
        entry.waiters.iter().find_map(|slot| {
            let successor = slot.successor.as_ref()?;
            successor.try_claim(releaser).then(|| {
                let wake_slot = slot.clone();
                Claimed { successor: successor.clone(), wake: Box::new(move || wake_slot.wake()) }
            })
        })
    }

    /// Acquires of this client parked between tries (on every channel).
    pub fn parked(&self) -> usize {
        self.shared.parked.load(Ordering::Acquire)
    }

    /// Counts an acquire as parked until the guard drops.
    pub fn park(&self) -> Parked<'_> {
        self.shared.parked.fetch_add(1, Ordering::AcqRel);
        Parked(self)
    }


    /// Number of channels this client is subscribed to right now.
    pub fn subscribed_channels(&self) -> usize {
        let state = self.shared.state.lock().unwrap();
        state.channels.values().filter(|c| *c.subscribed.borrow()).count()
    }

    pub fn stop(&self) {
        let mut state = self.shared.state.lock().unwrap();
        if let Some(task) = state.task.take() {
            task.abort();
        }
        state.reconcile = None;
        for channel in state.channels.values() {
            channel.subscribed.send_replace(false);
            channel.wake_all();
        }
    }
}

/// An acquire parked between tries (see [`Hub::park`]).
pub(crate) struct Parked<'a>(&'a Hub);

impl Drop for Parked<'_> {
    fn drop(&mut self) {
        self.0.shared.parked.fetch_sub(1, Ordering::AcqRel);
    }
}
