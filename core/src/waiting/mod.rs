//! Waiting: one acquire loop for every primitive that waits (locks, semaphores,
//! the count-down latch). A primitive says how to try ([`Acquire::attempt`]:
//! acquired, or busy for at most some time) and, if its releases may hand over to
//! a local waiter, how it is handed; the loop tries once without subscribing (the
//! uncontended case costs one round-trip), then registers on the channel and
//! retries on every wake-up: a message, the primitive's TTL (nothing is published
//! when something expires), the caller's deadline, or shutdown. No fixed-sleep
//! polling. Dropping the loop's future leaves the channel.
//!
//! A waiter rides out a failover: once it waits, a try that fails for a reason
//! that passes (the connection, or no replica acknowledging) is tried again with a
//! growing back-off until the caller's deadline, which then reports that error
//! instead of "not acquired". The first try's error still reaches the caller at once.

mod channels;
pub(crate) mod claim;
pub(crate) mod hub;
mod subscriber;

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::error::{Error, ErrorKind, Result};
pub(crate) use channels::{Heard, Known, Policy, Successor};
pub(crate) use hub::Listener;
use hub::Hub;

/// The outcome of one try.
pub(crate) enum Attempt<T> {
    Acquired(T),
    /// Held by someone else; retry after at most this long (None: no expiry).
    Busy(Option<Duration>),
}

/// One waiting acquire, as the loop sees it. The hand-off hooks have defaults for
/// primitives whose releases never hand over.
pub(crate) trait Acquire: Sync {
    type Output: Send;

    /// One try on the server.
    fn attempt(&self) -> impl Future<Output = Result<Attempt<Self::Output>>> + Send;

    /// True if this acquirer should queue behind the client's waiters already on the
    /// channel rather than try first (a lock's re-entry never queues).
    fn queue_behind(&self) -> bool {
        true
    }

    /// What a release of this client may hand over to, while waiting.
    fn successor(&self) -> Option<Arc<dyn Successor>> {
        None
    }

    /// What a release handed over, if it did.
    fn handed(&self) -> Option<Self::Output> {
        None
    }

    /// Before a try of its own: false while a release is handing over to it.
    fn begin_attempt(&self) -> bool {
        true
    }

    fn end_attempt(&self) {}

    /// True while a release is handing over to it (it must wait for that, even past its deadline).
    fn being_handed(&self) -> bool {
        false
    }

    /// The wait is over: false if a hand-off is under way after all.
    fn give_up(&self) -> bool {
        true
    }

    /// Work of its own while it waits (a lock logs a long wait), polled beside the
    /// wait and dropped with it: a timer in the waiter's future rather than a task,
    /// which a thread outside the runtime (a blocking binding's) would wake a runtime
    /// thread to spawn, and again to abort, at every wait.
    fn while_waiting(&self) -> impl Future<Output = ()> + Send + '_ {
        std::future::pending()
    }
}

/// Where a primitive waits: its channel and the client's hub.
pub(crate) struct Channel<'a> {
    pub hub: &'a Hub,
    pub name: &'a [u8],
    pub policy: Policy,
    pub shutdown: &'a watch::Sender<bool>,
}

/// Acquires with `acquirer`, waiting on `channel` until `deadline` (None: as long as
/// it takes). `Ok(None)`: not acquired in time.
pub(crate) async fn acquire<A: Acquire>(acquirer: &A, channel: Channel<'_>, deadline: Option<Instant>) -> Result<Option<A::Output>> {
    if *channel.shutdown.borrow() {
        return Err(Error::shut_down());
    }
    // Inside one client, a new acquirer queues behind the waiters already there
    // instead of racing the one the last release woke.
    let (has_waiters, seen) = channel.hub.before_try(channel.name);
    let queue_behind = acquirer.queue_behind() && has_waiters;
    let mut busy = None;
    if !queue_behind {
        // Fast path: uncontended acquisitions cost one round-trip, no subscription.
        match acquirer.attempt().await? {
            Attempt::Acquired(output) => return Ok(Some(output)),
            Attempt::Busy(ttl) => busy = ttl,
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(None);
        }
    }
    let (waiter, queued) = channel.hub.waiter(channel.name, channel.policy, acquirer.successor()).await;
    let mut shutdown = channel.shutdown.subscribe();
    // Subscribed now: a release from here on reaches us. Try again before waiting,
    // since it may have been released before the subscription, unless we queued
    // behind live waiters (the release woke one of them) or the subscription was
    // live before the first try and nothing came on it since (a release after that
    // try would have: a client taking turns with others keeps it, subscriber.rs's
    // LINGER).
    let unchanged = !queue_behind && seen.is_some_and(|epoch| channel.hub.unchanged_since(channel.name, epoch));
    let mut retry_now = queued.is_none() && !unchanged;
    if let Some(until) = queued {
        busy = Some(until.saturating_duration_since(Instant::now()));
    }
    let mut failing: Option<(Error, Duration)> = None;
    let mut beside = std::pin::pin!(acquirer.while_waiting());
    loop {
        if let Some(output) = acquirer.handed() {
            return Ok(Some(output));
        }
        // No try of our own while a release is handing over to us.
        if retry_now && acquirer.begin_attempt() {
            // A try may wait behind an earlier one still settling a lost reply: the
            // caller's deadline bounds it (a dropped try undoes what it took).
            let attempt = match deadline {
                Some(d) => tokio::select! {
                    attempt = acquirer.attempt() => Some(attempt),
                    _ = tokio::time::sleep_until(d.into()) => None,
                },
                None => Some(acquirer.attempt().await),
            };
            acquirer.end_attempt();
            match attempt {
                // The deadline came first: the check below gives up.
                None => {}
                Some(Ok(Attempt::Acquired(output))) => return Ok(Some(output)),
                Some(Ok(Attempt::Busy(ttl))) => {
                    failing = None;
                    busy = ttl;
                    if let Some(ttl) = ttl {
                        channel.hub.note_busy(channel.name, Instant::now() + ttl);
                    }
                }
                Some(Err(e)) if passes(&e) => {
                    let backoff = failing.as_ref().map_or(Duration::from_millis(25), |(_, b)| (*b * 2).min(Duration::from_secs(1)));
                    if failing.is_none() {
                        tracing::warn!(error = %e, "a waiting acquire failed; trying again until its deadline");
                    }
                    busy = Some(backoff);
                    failing = Some((e, backoff));
                }
                Some(Err(e)) => return Err(e),
            }
        }
        let now = Instant::now();
        // A hand-off under way ends with a wake-up either way: wait for it even past the deadline.
        let handing = acquirer.being_handed();
        if !handing && deadline.is_some_and(|d| now >= d) && acquirer.give_up() {
            return match failing {
                Some((e, _)) => Err(e),
                None => Ok(None),
            };
        }
        // Nothing is published when something expires: wake by its TTL as well.
        let mut until = busy.map(|ttl| now + ttl);
        if let Some(d) = deadline {
            until = Some(until.map_or(d, |u| u.min(d)));
        }
        if handing {
            until = None;
        }
        let sleep = async {
            match until {
                Some(t) => tokio::time::sleep_until(t.into()).await,
                None => std::future::pending().await,
            }
        };
        let _parked = channel.hub.park();
        tokio::select! {
            _ = waiter.woken() => {}
            _ = sleep => {}
            _ = beside.as_mut() => {}
            _ = shutdown.wait_for(|down| *down) => return Err(Error::shut_down()),
        }
        retry_now = true;
    }
}

/// Failures a waiter tries again after: they pass with the connection or the replica.
fn passes(e: &Error) -> bool {
    matches!(e.kind(), ErrorKind::Connection | ErrorKind::NotReplicated)
}

#[cfg(test)]
mod tests {
    use super::channels::{Policy, Wake};

    #[test]
    fn each_policy_decodes_its_messages() {
        let table: [(Policy, &[u8], Wake); 8] = [
            (Policy::Lock, b"0", Wake::First(1)),
            (Policy::Lock, b"1", Wake::All),
            (Policy::Lock, b"x", Wake::None),
            (Policy::Permits, b"3", Wake::First(3)),
            (Policy::Permits, b"-1", Wake::None),
            (Policy::Gate, b"0", Wake::All),
            (Policy::Gate, b"1", Wake::None),
            (Policy::Gate, b"", Wake::None),
        ];
        for (policy, payload, wake) in table {
            assert_eq!(policy.decode(payload), wake, "{policy:?} {:?}", String::from_utf8_lossy(payload));
        }
    }
}
