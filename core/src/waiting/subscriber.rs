//! The subscriber connection task of a client's hub: connect, (re)subscribe the
//! channels that have waiters or listeners, dispatch messages by each channel's policy, and
//! apply subscription changes in order; on a broken connection start over (and
//! wake every waiter, since messages sent during the gap are lost). While anyone
//! waits, a PING every response timeout tells a stopped or cut-off server (which
//! keeps its sockets open) from a quiet one. A failover the client noticed starts it
//! over too (on the new master); on a cluster, a node's broken connection or a
//! server-side SUNSUBSCRIBE hints the slot map's watcher to look now. A channel
//! whose last waiter and listener left stays subscribed for `LINGER`, timed by the
//! task's own queue of lingering channels (no task per idle spell: nothing
//! outlives the hub's stop).

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use super::channels::{Channel, Shared};
use crate::transport::{Event, SubscriberSink};

/// The connection task: connect, (re)subscribe, dispatch messages, apply
/// subscription changes in order; on a broken connection start over.
pub(super) async fn run(shared: Arc<Shared>, mut reconcile: mpsc::UnboundedReceiver<Vec<u8>>) {
    let mut shutdown = shared.shutdown.clone();
    let mut failovers = shared.transport.failovers();
    let mut backoff = Duration::from_millis(20);
    let mut reconnect = false;
    // Across reconnects: a channel that lingered while the connection was down is
    // let go (its entry removed) once the task looks at it on the next connection.
    let mut lingering = Lingering::default();
    loop {
        let connect = tokio::time::timeout(shared.config.connect_timeout, shared.transport.subscriber());
        let pubsub = tokio::select! {
            r = connect => r,
            _ = shutdown.changed() => return,
        };
        let (mut sink, mut stream) = match pubsub {
            Ok(Ok(connection)) => connection,
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
            state.channels.iter().filter(|(_, c)| c.wanted()).map(|(k, _)| k.clone()).collect()
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
                    c.set_subscribed(true);
                }
            }
            if reconnect {
                shared.transport.metrics.reconnected();
                tracing::info!(channels = wanted.len(), "pub/sub connection made again; waking every waiter to retry");
                state.channels.values().for_each(Channel::missed);
            }
        }
        reconnect = true;
        backoff = Duration::from_millis(20);
        // While anyone waits, make sure the servers we listen on still answer.
        let period = shared.config.response_timeout;
        let mut heartbeat = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
        heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let linger_end = tokio::time::sleep(Duration::ZERO);
        tokio::pin!(linger_end);
        let mut armed = None;
        loop {
            let next = lingering.next_end();
            if let Some(end) = next.filter(|_| next != armed) {
                linger_end.as_mut().reset(end.into());
                armed = next;
            }
            tokio::select! {
                () = &mut linger_end, if next.is_some() => {
                    armed = None;
                    if let Err(e) = let_go(&shared, &mut sink, &mut lingering).await {
                        refused(&shared, &e);
                        break;
                    }
                }
                _ = heartbeat.tick(), if shared.waiting.load(Ordering::Acquire) + shared.listening.load(Ordering::Acquire) > 0 => {
                    if let Err(e) = sink.check(shared.config.response_timeout).await {
                        tracing::info!(error = %e, "a pub/sub server stopped answering; reconnecting");
                        break;
                    }
                }
                msg = stream.next() => match msg {
                    Some(Event::Message(channel, payload)) => dispatch(&shared, &channel, &payload),
                    Some(Event::Unsubscribed(channel)) => {
                        if let Err(e) = resubscribe(&shared, &mut sink, channel).await {
                            refused(&shared, &e);
                            break;
                        }
                    }
                    None => {
                        shared.transport.hint_failover();
                        break;
                    }
                },
                Ok(()) = failovers.changed() => {
                    tracing::info!("failover noticed; the pub/sub connection starts over on the new master");
                    break;
                }
                Some(name) = reconcile.recv() => {
                    if let Err(e) = apply(&shared, &mut sink, &mut lingering, name).await {
                        refused(&shared, &e);
                        break;
                    }
                }
                _ = shutdown.changed() => return,
            }
        }
        tracing::info!("pub/sub connection lost; reconnecting");
        let state = shared.state.lock().unwrap();
        state.channels.values().for_each(|c| {
            c.set_subscribed(false);
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

fn dispatch(shared: &Shared, name: &[u8], payload: &[u8]) {
    let state = shared.state.lock().unwrap();
    if let Some(channel) = state.channels.get(name) {
        channel.deliver(name, payload);
    }
}

/// A subscription the server ended (a cluster moved its slot or failed its node
/// over) while it has waiters: subscribe again (the cluster connection routes it to
/// the new owner) and wake them, since messages may have been lost in between.
/// The confirmation of our own unsubscribe lands here too, and changes nothing.
async fn resubscribe(shared: &Shared, sink: &mut SubscriberSink, name: Vec<u8>) -> redis::RedisResult<()> {
    let dropped = {
        let state = shared.state.lock().unwrap();
        state.channels.get(&name).is_some_and(|c| c.wanted() && *c.subscribed.borrow())
    };
    if !dropped {
        return Ok(());
    }
    tracing::info!(channel = %String::from_utf8_lossy(&name), "the server ended a subscription; subscribing again");
    shared.transport.hint_failover();
    sink.subscribe(std::slice::from_ref(&name)).await?;
    let state = shared.state.lock().unwrap();
    if let Some(c) = state.channels.get(&name) {
        c.missed();
    }
    Ok(())
}

/// How long a channel stays subscribed after its last waiter left: a client taking
/// turns on a lock with other clients would otherwise unsubscribe when it gets the
/// lock and subscribe again at its next wait (SUBSCRIBE, UNSUBSCRIBE and one more
/// try per wait: issue 30, 8 clients x 1 ms sections, 0.98 -> 1.00 of the protocol
/// floor). Short, since a client counts among the channel's subscribers (status's
/// waiting clients) meanwhile.
pub(super) const LINGER: Duration = Duration::from_millis(100);

/// The channels whose last waiter or listener left, each with the moment it left
/// (its idle spell), in order of their linger's end. LINGER is one constant, so a
/// spell that starts later ends later: an entry almost always goes at the back.
#[derive(Default)]
struct Lingering(VecDeque<(Instant, Vec<u8>)>);

impl Lingering {
    fn add(&mut self, idle_since: Instant, name: Vec<u8>) {
        // Spells are noted when the task gets to them, not quite in the order they began.
        let at = self.0.partition_point(|(since, _)| *since <= idle_since);
        self.0.insert(at, (idle_since, name));
    }

    /// When the first linger ends.
    fn next_end(&self) -> Option<Instant> {
        self.0.front().map(|(since, _)| *since + LINGER)
    }
}

/// Lets go of the channels whose linger has ended: those still in the idle spell
/// they were noted in (a channel that has waiters or listeners again, or is in a
/// later spell, which was noted itself, is left as it is).
async fn let_go(shared: &Arc<Shared>, sink: &mut SubscriberSink, lingering: &mut Lingering) -> redis::RedisResult<()> {
    let now = Instant::now();
    while lingering.next_end().is_some_and(|end| end <= now) {
        let (since, name) = lingering.0.pop_front().unwrap();
        let same_spell = shared.state.lock().unwrap().channels.get(&name).is_some_and(|c| c.idle_since == Some(since));
        if same_spell {
            apply(shared, sink, lingering, name).await?;
        }
    }
    Ok(())
}

/// Brings one channel's subscription in line with its waiters and listeners.
async fn apply(shared: &Arc<Shared>, sink: &mut SubscriberSink, lingering: &mut Lingering, name: Vec<u8>) -> redis::RedisResult<()> {
    let (wanted, subscribed) = {
        let mut state = shared.state.lock().unwrap();
        let Some(c) = state.channels.get_mut(&name) else { return Ok(()) };
        let wanted = c.wanted();
        let subscribed = *c.subscribed.borrow();
        if !wanted && subscribed {
            if let Some(since) = c.idle_since.filter(|t| *t + LINGER > Instant::now()) {
                // Looked at again when the linger ends (let_go).
                lingering.add(since, name);
                return Ok(());
            }
            // Not live from here on: a waiter that arrives while the unsubscribe is
            // under way must not count on this subscription (it would miss messages);
            // it asks for a new one and waits for it.
            c.set_subscribed(false);
        }
        (wanted, subscribed)
    };
    if wanted && !subscribed {
        sink.subscribe(std::slice::from_ref(&name)).await?;
        let state = shared.state.lock().unwrap();
        if let Some(c) = state.channels.get(&name) {
            c.set_subscribed(true);
            if !c.wanted() {
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
        if state.channels.get(&name).is_some_and(|c| !c.wanted()) {
            state.channels.remove(&name);
            shared.channels.fetch_sub(1, Ordering::AcqRel);
        } else if let Some(tx) = &state.reconcile {
            // A waiter or listener arrived meanwhile: subscribe again on the next pass.
            let _ = tx.send(name.clone());
        }
    }
    Ok(())
}
