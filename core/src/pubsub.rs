//! The client's one pub/sub connection: one subscription per channel, reference
//! counted by the waiters on it, resubscribed after a reconnect.
//!
//! A message `0` wakes one local waiter of the channel (a wake left unused by a
//! waiter that leaves passes to the next), `1` wakes all. After a reconnect every
//! waiter is woken, since messages sent during the gap are lost.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use tokio::runtime::Handle;
use tokio::sync::{mpsc, watch, Notify};
use tokio::task::JoinHandle;

use crate::config::Config;
use crate::handoff::{Candidate, Claim};

pub(crate) struct PubSubHub {
    shared: Arc<Shared>,
}

struct Shared {
    state: Mutex<State>,
    redis: redis::Client,
    config: Config,
    runtime: Handle,
    shutdown: watch::Receiver<bool>,
    /// Waiters registered on any channel: every acquire and every release asks
    /// whether a channel has waiters, and mostly none has; this answers without the lock.
    waiting: AtomicUsize,
    /// Set once the server refused a subscription (ACL): warned about once per client.
    refused_warned: AtomicBool,
}

#[derive(Default)]
struct State {
    channels: HashMap<Vec<u8>, Channel>,
    /// Channels whose subscription may need changing; the connection task drains it.
    reconcile: Option<mpsc::UnboundedSender<Vec<u8>>>,
    task: Option<JoinHandle<()>>,
}

struct Channel {
    waiters: VecDeque<Arc<Slot>>,
    /// When the lock was last seen to expire (from a failed attempt): a waiter that
    /// queues behind others without trying wakes by then at the latest.
    busy_until: Option<Instant>,
    /// True while subscribed on the current connection.
    subscribed: watch::Sender<bool>,
}

/// One waiter's wake-up flag, and what a release may hand the lock to.
struct Slot {
    woken: AtomicBool,
    notify: Notify,
    candidate: Option<Arc<Candidate>>,
}

impl Slot {
    fn wake(&self) {
        self.woken.store(true, Ordering::Release);
        self.notify.notify_one();
    }
}

impl Channel {
    fn new() -> Self {
        Channel { waiters: VecDeque::new(), busy_until: None, subscribed: watch::channel(false).0 }
    }

    /// Wakes the first waiter that is not already woken.
    fn wake_one(&self) {
        if let Some(slot) = self.waiters.iter().find(|s| !s.woken.load(Ordering::Acquire)) {
            slot.wake();
        }
    }

    fn wake_all(&self) {
        self.waiters.iter().for_each(|s| s.wake());
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
            channel.wake_one();
        }
        if channel.waiters.is_empty() {
            if let Some(tx) = &state.reconcile {
                let _ = tx.send(self.channel.clone());
            }
        }
    }
}

impl PubSubHub {
    pub fn new(redis: redis::Client, config: Config, runtime: Handle, shutdown: watch::Receiver<bool>) -> Self {
        let state = Mutex::new(State::default());
        PubSubHub { shared: Arc::new(Shared { state, redis, config, runtime, shutdown, waiting: AtomicUsize::new(0), refused_warned: AtomicBool::new(false) }) }
    }

    /// True if this client already has waiters on `channel`.
    pub fn has_waiters(&self, channel: &[u8]) -> bool {
        if self.shared.waiting.load(Ordering::Acquire) == 0 {
            return false;
        }
        let state = self.shared.state.lock().unwrap();
        state.channels.get(channel).is_some_and(|c| !c.waiters.is_empty())
    }

    /// Records when the lock behind `channel` will expire unless renewed.
    pub fn note_busy(&self, channel: &[u8], until: Instant) {
        let mut state = self.shared.state.lock().unwrap();
        if let Some(c) = state.channels.get_mut(channel) {
            c.busy_until = Some(until);
        }
    }

    /// Registers a waiter on `channel`, subscribing if it is the first, and waits
    /// (bounded by the response timeout) until the subscription is confirmed.
    /// Past that bound the caller still wakes by the lock's TTL.
    ///
    /// Returns `Some(deadline)` when the waiter joined a live subscription behind
    /// other waiters while the lock was known busy until `deadline`: it may wait for
    /// its turn without trying first, since the next release wakes the queue in order.
    ///
    /// A waiter with a `candidate` may be handed the lock by a release of this client.
    pub async fn waiter(&self, channel: &[u8], candidate: Option<Arc<Candidate>>) -> (Waiter, Option<Instant>) {
        let slot = Arc::new(Slot { woken: AtomicBool::new(false), notify: Notify::new(), candidate });
        let (mut subscribed, queued) = {
            let mut state = self.shared.state.lock().unwrap();
            if state.task.is_none() {
                let (tx, rx) = mpsc::unbounded_channel();
                state.reconcile = Some(tx);
                state.task = Some(self.shared.runtime.spawn(run(self.shared.clone(), rx)));
            }
            let entry = state.channels.entry(channel.to_vec()).or_insert_with(Channel::new);
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
    /// hand the lock to, in queue order; `None` when there is none.
    pub fn claim_successor(&self, channel: &[u8], releaser: u64) -> Option<Claim> {
        if self.shared.waiting.load(Ordering::Acquire) == 0 {
            return None;
        }
        let state = self.shared.state.lock().unwrap();
        let entry = state.channels.get(channel)?;
        for slot in &entry.waiters {
            let Some(candidate) = &slot.candidate else { continue };
            if candidate.holder.uid == releaser || !candidate.claim() {
                continue;
            }
            // A successor busy with a call of its own is skipped, never waited for.
            match candidate.holder.op.clone().try_lock_owned() {
                Ok(guard) => {
                    let wake_slot = slot.clone();
                    return Some(Claim { candidate: candidate.clone(), wake: Box::new(move || wake_slot.wake()), guard });
                }
                Err(_) => candidate.unclaim(),
            }
        }
        None
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

/// The connection task: connect, (re)subscribe, dispatch messages, apply
/// subscription changes in order; on a broken connection start over.
async fn run(shared: Arc<Shared>, mut reconcile: mpsc::UnboundedReceiver<Vec<u8>>) {
    let mut shutdown = shared.shutdown.clone();
    let mut backoff = Duration::from_millis(20);
    let mut reconnect = false;
    loop {
        let connect = tokio::time::timeout(shared.config.connect_timeout, shared.redis.get_async_pubsub());
        let pubsub = tokio::select! {
            r = connect => r,
            _ = shutdown.changed() => return,
        };
        let (mut sink, mut stream) = match pubsub {
            Ok(Ok(p)) => p.split(),
            other => {
                if let Ok(Err(e)) = other {
                    tracing::debug!(error = %e, "pub/sub connection failed; retrying");
                }
                tokio::select! {
                    _ = tokio::time::sleep(backoff) => {}
                    _ = shutdown.changed() => return,
                }
                backoff = (backoff * 2).min(Duration::from_secs(1));
                continue;
            }
        };
        let wanted: Vec<Vec<u8>> = {
            let state = shared.state.lock().unwrap();
            state.channels.iter().filter(|(_, c)| !c.waiters.is_empty()).map(|(k, _)| k.clone()).collect()
        };
        if !wanted.is_empty() {
            if let Err(e) = sink.subscribe(&wanted).await {
                refused(&shared, &e);
                tokio::select! {
                    _ = tokio::time::sleep(backoff) => {}
                    _ = shutdown.changed() => return,
                }
                backoff = (backoff * 2).min(Duration::from_secs(1));
                continue;
            }
        }
        {
            let state = shared.state.lock().unwrap();
            for name in &wanted {
                if let Some(c) = state.channels.get(name) {
                    c.subscribed.send_replace(true);
                }
            }
            if reconnect {
                tracing::debug!("pub/sub reconnected; waking every waiter to retry");
                state.channels.values().for_each(Channel::wake_all);
            }
        }
        reconnect = true;
        backoff = Duration::from_millis(20);
        loop {
            tokio::select! {
                msg = stream.next() => match msg {
                    Some(msg) => dispatch(&shared, &msg),
                    None => break,
                },
                Some(name) = reconcile.recv() => {
                    if let Err(e) = apply(&shared, &mut sink, name).await {
                        refused(&shared, &e);
                        break;
                    }
                }
                _ = shutdown.changed() => return,
            }
        }
        tracing::debug!("pub/sub connection lost; reconnecting");
        let state = shared.state.lock().unwrap();
        state.channels.values().for_each(|c| {
            c.subscribed.send_replace(false);
        });
    }
}

/// A subscription the server refused (an ACL without +subscribe or channel access):
/// waiters still wake at the lock's expiry, but no longer at its release. Said once.
fn refused(shared: &Shared, e: &redis::RedisError) {
    let error = crate::error::Error::from_redis(e, "subscribing to lock channels");
    if error.kind() != crate::ErrorKind::PermissionDenied {
        tracing::debug!(error = %e, "subscribing failed; reconnecting");
        return;
    }
    if !shared.refused_warned.swap(true, Ordering::Relaxed) {
        tracing::warn!(
            "waiting for locks is slow: {}; waiters are woken only when a lock's lease runs out, \
             not when it is released",
            error.message()
        );
    }
}

fn dispatch(shared: &Shared, msg: &redis::Msg) {
    let Ok(name) = msg.get_channel::<Vec<u8>>() else { return };
    let state = shared.state.lock().unwrap();
    let Some(channel) = state.channels.get(&name) else { return };
    match msg.get_payload_bytes() {
        b"0" => channel.wake_one(),
        b"1" => channel.wake_all(),
        _ => {}
    }
}

/// Brings one channel's subscription in line with its waiters.
async fn apply(shared: &Shared, sink: &mut redis::aio::PubSubSink, name: Vec<u8>) -> redis::RedisResult<()> {
    let (wanted, subscribed) = {
        let state = shared.state.lock().unwrap();
        match state.channels.get(&name) {
            Some(c) => (!c.waiters.is_empty(), *c.subscribed.borrow()),
            None => return Ok(()),
        }
    };
    if wanted && !subscribed {
        sink.subscribe(&name).await?;
        let state = shared.state.lock().unwrap();
        if let Some(c) = state.channels.get(&name) {
            c.subscribed.send_replace(true);
            if c.waiters.is_empty() {
                // Everyone left while subscribing: undo on the next pass.
                if let Some(tx) = &state.reconcile {
                    let _ = tx.send(name.clone());
                }
            }
        }
    } else if !wanted {
        if subscribed {
            sink.unsubscribe(&name).await?;
        }
        let mut state = shared.state.lock().unwrap();
        if state.channels.get(&name).is_some_and(|c| c.waiters.is_empty()) {
            state.channels.remove(&name);
        } else if let Some(c) = state.channels.get(&name) {
            // A waiter arrived meanwhile: subscribe again on the next pass.
            c.subscribed.send_replace(false);
            if let Some(tx) = &state.reconcile {
                let _ = tx.send(name.clone());
            }
        }
    }
    Ok(())
}
