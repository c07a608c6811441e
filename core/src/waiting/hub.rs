//! The waiters of one client, per channel: one subscription per channel on the
//! client's one subscriber connection (subscriber.rs), reference counted by the
//! waiters on it and kept a moment after the last one leaves (subscriber.rs's
//! `LINGER`). How a message wakes them is the channel's policy
//! (channels.rs); a wake left unused by a waiter that leaves passes to the
//! next. After a reconnect every waiter is woken, since messages sent during the
//! gap are lost. A waiter may offer a [`Successor`]: a release of this client may
//! then hand its hold straight to it (lock/handoff.rs, semaphore/handoff.rs).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::runtime::Handle;
use tokio::sync::{mpsc, watch, Notify};

use super::channels::{Channel, Heard, Known, Policy, Shared, Slot, State, Successor};
use super::subscriber;
use crate::config::Config;
use crate::transport::Transport;

/// A claimed successor and the wake-up of its waiter.
pub(crate) struct Claimed {
    pub successor: Arc<dyn Successor>,
    pub wake: Box<dyn Fn() + Send + Sync>,
}

pub(crate) struct Hub {
    pub(super) shared: Arc<Shared>,
}

/// A registered waiter on one channel. Dropping it leaves the channel (and
/// unsubscribes, a moment later, when it was the last waiter).
pub(crate) struct Waiter {
    shared: Arc<Shared>,
    channel: Vec<u8>,
    slot: Arc<Slot>,
}

impl Waiter {
    /// Resolves when a message (or a reconnect) woke this waiter.
    pub async fn woken(&self) {
        crate::until::until(&self.slot.notify, || self.slot.woken.swap(false, Ordering::AcqRel)).await
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
        if !channel.wanted() {
            channel.idle_since = Some(Instant::now());
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
            streaking: AtomicUsize::new(0),
            channels: AtomicUsize::new(0),
            listening: AtomicUsize::new(0),
        };
        Hub { shared: Arc::new(shared) }
    }

    /// Before an acquire's first try on `channel`: whether this client already has
    /// waiters there (the acquire then queues behind them, without a try), and the
    /// channel's epoch if it is subscribed (a lingering subscription, see
    /// [`Hub::unchanged_since`]).
    pub fn before_try(&self, channel: &[u8]) -> (bool, Option<u64>) {
        if self.shared.channels.load(Ordering::Acquire) == 0 {
            return (false, None);
        }
        let state = self.shared.state.lock().unwrap();
        state.channels.get(channel).map_or((false, None), |c| (!c.waiters.is_empty(), c.live_epoch()))
    }

    /// True if `channel` stayed subscribed, with no message, since [`Hub::before_try`]
    /// read `epoch`: a release after that try would have published on it, so a waiter
    /// registered since needs no second try (its wake-up comes by message).
    pub fn unchanged_since(&self, channel: &[u8], epoch: u64) -> bool {
        let state = self.shared.state.lock().unwrap();
        state.channels.get(channel).and_then(Channel::live_epoch) == Some(epoch)
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
            let entry = state.channels.entry(channel.to_vec()).or_insert_with(|| {
                self.shared.channels.fetch_add(1, Ordering::AcqRel);
                Channel::new(policy)
            });
            let live = *entry.subscribed.borrow();
            let queued = entry
                .busy_until
                .filter(|until| live && !entry.waiters.is_empty() && *until > Instant::now());
            entry.idle_since = None;
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

    /// Listens on `channels` (an observer): every message there, and a gap whenever
    /// messages may have been missed, go to the returned receiver, in the order the
    /// server sent them; no waiter's wake-up is taken. Subscribes where needed and
    /// waits (bounded by the response timeout) until every subscription is confirmed.
    /// Dropping the [`Listener`] leaves the channels (a moment later, as a waiter does).
    pub async fn listen(&self, channels: &[Vec<u8>]) -> (Listener, mpsc::UnboundedReceiver<Heard>) {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::unbounded_channel();
        let mut confirmations = Vec::new();
        {
            let mut state = self.shared.state.lock().unwrap();
            if state.task.is_none() {
                let (reconcile, requests) = mpsc::unbounded_channel();
                state.reconcile = Some(reconcile);
                state.task = Some(self.shared.runtime.spawn(subscriber::run(self.shared.clone(), requests)));
            }
            for name in channels {
                let entry = state.channels.entry(name.clone()).or_insert_with(|| {
                    self.shared.channels.fetch_add(1, Ordering::AcqRel);
                    Channel::new(Policy::Lock)
                });
                entry.idle_since = None;
                entry.listeners.push((id, tx.clone()));
                confirmations.push(entry.subscribed.subscribe());
                if !*entry.subscribed.borrow() {
                    if let Some(reconcile) = &state.reconcile {
                        let _ = reconcile.send(name.clone());
                    }
                }
            }
            self.shared.listening.fetch_add(1, Ordering::AcqRel);
        }
        let listener = Listener { shared: self.shared.clone(), channels: channels.to_vec(), id };
        let mut shutdown = self.shared.shutdown.clone();
        // Each to a bool: a `Ref` kept by the join while the others wait is not Send.
        let confirmed = futures_util::future::join_all(confirmations.iter_mut().map(|rx| async { rx.wait_for(|s| *s).await.is_ok() }));
        tokio::select! {
            _ = tokio::time::timeout(self.shared.config.response_timeout, confirmed) => {}
            _ = shutdown.wait_for(|down| *down) => {}
        }
        (listener, rx)
    }

    /// Claims the first waiter on `channel` that a release by holder `releaser` may
    /// hand its hold to, in queue order; `None` when there is none.
    pub fn claim_successor(&self, channel: &[u8], releaser: u64) -> Option<Claimed> {
        if self.shared.waiting.load(Ordering::Acquire) == 0 {
            return None;
        }
        let state = self.shared.state.lock().unwrap();
        first_claim(state.channels.get(channel)?, releaser)
    }

    /// [`Hub::claim_successor`] for what nobody owns (a semaphore's permits), so no
    /// hold can count the hand-offs: the client counts them per channel, and after
    /// `streak` in a row the next release goes to everyone, since waiters of other
    /// clients only wake by message.
    pub fn claim_in_turn(&self, channel: &[u8], offer: u64, streak: u32) -> Option<Claimed> {
        if self.shared.waiting.load(Ordering::Acquire) == 0 && self.shared.streaking.load(Ordering::Acquire) == 0 {
            return None;
        }
        let mut state = self.shared.state.lock().unwrap();
        let so_far = state.streaks.get(channel).copied().unwrap_or(0);
        let claimed = if so_far < streak { state.channels.get(channel).and_then(|c| first_claim(c, offer)) } else { None };
        if claimed.is_some() {
            *state.streaks.entry(channel.to_vec()).or_default() += 1;
        } else {
            state.streaks.remove(channel);
        }
        self.shared.streaking.store(state.streaks.len(), Ordering::Release);
        claimed
    }

    /// Before a try for `amount` of the count behind `channel` (a semaphore's permits):
    /// [`Known::Short`] when this client already knows it would fail. Sound only for
    /// counts that rise by published releases alone (Redisson's and ours do);
    /// a waiter that skips its try stays queued, and the release that publishes wakes
    /// the waiters ahead of it.
    pub fn known(&self, channel: &[u8], amount: u64) -> Known {
        if self.shared.waiting.load(Ordering::Acquire) == 0 {
            return Known::Ask(None);
        }
        let state = self.shared.state.lock().unwrap();
        let Some(c) = state.channels.get(channel).filter(|c| *c.subscribed.borrow()) else { return Known::Ask(None) };
        let epoch = c.epoch.load(Ordering::Acquire);
        match c.short {
            Some((at, least)) if at == epoch && amount >= least => Known::Short,
            _ => Known::Ask(Some(epoch)),
        }
    }

    /// A try for `amount` sent in `epoch` (from [`Hub::known`]) found the count short.
    pub fn note_short(&self, channel: &[u8], epoch: u64, amount: u64) {
        let mut state = self.shared.state.lock().unwrap();
        let Some(c) = state.channels.get_mut(channel) else { return };
        if c.epoch.load(Ordering::Acquire) != epoch {
            return;
        }
        let least = match c.short {
            Some((at, least)) if at == epoch => least.min(amount),
            _ => amount,
        };
        c.short = Some((epoch, least));
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
        for channel in state.channels.values_mut() {
            channel.set_subscribed(false);
            channel.wake_all();
            // Their receivers end: an observer reports the client closed.
            channel.listeners.clear();
        }
    }
}

/// A listener on some channels (see [`Hub::listen`]). Dropping it leaves them.
pub(crate) struct Listener {
    shared: Arc<Shared>,
    channels: Vec<Vec<u8>>,
    id: u64,
}

impl Drop for Listener {
    fn drop(&mut self) {
        let mut state = self.shared.state.lock().unwrap();
        self.shared.listening.fetch_sub(1, Ordering::AcqRel);
        for name in &self.channels {
            let Some(channel) = state.channels.get_mut(name) else { continue };
            channel.listeners.retain(|(id, _)| *id != self.id);
            if !channel.wanted() {
                channel.idle_since = Some(Instant::now());
                if let Some(tx) = &state.reconcile {
                    let _ = tx.send(name.clone());
                }
            }
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

/// The first waiter of `entry`, in queue order, that takes the release's `offer`.
fn first_claim(entry: &Channel, offer: u64) -> Option<Claimed> {
    entry.waiters.iter().find_map(|slot| {
        let successor = slot.successor.as_ref()?;
        successor.try_claim(offer).then(|| {
            let wake_slot = slot.clone();
            Claimed { successor: successor.clone(), wake: Box::new(move || wake_slot.wake()) }
        })
    })
}
