//! One holder of one lock: its owner field, its local view of the hold (count,
//! token, lease deadline, lost signal) and the script calls that change the hold.
//!
//! Every call that changes the hold holds the holder's operation mutex and applies
//! the reply to the local state itself; a caller that goes away mid-call leaves the
//! rest of the call to a spawned task, so the server and the local view never part.

use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use crate::transport::Conn;
use tokio::sync::watch;
use tokio::task::AbortHandle;

use crate::client::ClientInner;
use crate::error::{Error, ErrorKind, Result};
use crate::handoff::{Handoff, STREAK};
use crate::keys::LockKeys;
use crate::scripts;

/// Called once when a hold is lost, from a background thread.
pub type LostCallback = Arc<dyn Fn(&LostEvent) + Send + Sync>;

/// What an `on_lost` callback is told.
#[derive(Debug, Clone)]
pub struct LostEvent {
    /// The lock name (lossy UTF-8).
    pub name: String,
    /// The owner field of the hold that was lost.
    pub owner: String,
    /// Why: a `LockLost` error whose message says what happened.
    pub error: Error,
    /// When the holder learned of the loss (monotonic clock).
    pub at: Instant,
}

/// A snapshot of one acquisition: its fencing token and a signal that fires if
/// the hold is lost. Dropping it changes nothing (see `Guard` for release-on-drop).
#[derive(Debug, Clone)]
pub struct Hold {
    token: Option<u64>,
    count: u32,
    lost: watch::Receiver<Option<Error>>,
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
        self.lost.borrow().is_some()
    }

    /// The `LockLost` error, if the hold has been lost.
    pub fn lost_error(&self) -> Option<Error> {
        self.lost.borrow().clone()
    }

    /// Resolves with the `LockLost` error when the hold is lost; never resolves
    /// for a hold that ends by release.
    pub async fn lost(&self) -> Error {
        let mut rx = self.lost.clone();
        let result = rx.wait_for(Option::is_some).await.map(|v| v.clone());
        match result {
            Ok(Some(err)) => err,
            _ => std::future::pending().await,
        }
    }

    /// A watch channel that turns `Some(error)` when the hold is lost (for bindings).
    pub fn lost_watch(&self) -> watch::Receiver<Option<Error>> {
        self.lost.clone()
    }
}

/// What a release did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Released {
    /// Re-entrant hold: still held with this many levels left.
    StillHeld(u32),
    /// The lock is free now; one waiter was woken.
    Unlocked,
}

pub(crate) enum Attempt {
    Acquired(PendingHold),
    /// Held by someone else; retry after at most this long (None: the key has no expiry).
    Busy(Option<Duration>),
}

/// An acquisition on its way to the caller. If the caller is gone before it takes
/// it (a dropped future), dropping this releases the level it acquired.
pub(crate) struct PendingHold {
    holder: Arc<Holder>,
    hold: Option<Hold>,
}

impl PendingHold {
    pub fn new(holder: Arc<Holder>, hold: Hold) -> Self {
        PendingHold { holder, hold: Some(hold) }
    }

    pub fn take(mut self) -> Hold {
        self.hold.take().expect("taken once")
    }
}

impl Drop for PendingHold {
    fn drop(&mut self) {
        if self.hold.take().is_some() {
            let holder = self.holder.clone();
            tracing::debug!(lock = %holder.keys.display, "acquire abandoned by its caller; releasing");
            self.holder.client.runtime.spawn(async move {
                let _ = holder.release(false).await;
            });
        }
    }
}

pub(crate) struct HoldState {
    pub count: u32,
    pub generation: u64,
    pub token: Option<u64>,
    /// Renewed by the watchdog (some level was taken without an explicit lease).
    pub watchdog: bool,
    /// PEXPIRE used when a partial release keeps the lock.
    pub lease_ms: u64,
    /// Local monotonic deadline: send time of the last confirmed acquire/renewal +
    /// lease - safety margin (see `Holder::deadline_after`).
    pub deadline: Instant,
    lost: watch::Sender<Option<Error>>,
    /// Set when the current hold was lost; cleared by the next first acquisition.
    pub lost_error: Option<Error>,
    /// Releases still to be answered with `LockLost` (the levels held when lost).
    lost_levels: u32,
    /// A release that ends the hold is under way: a renewal that finds the field gone
    /// raced it, and the release's own answer tells whether the hold was lost.
    releasing: bool,
    /// Hand-offs in a row that led to this hold (0: acquired by an attempt of its own).
    pub streak: u32,
    /// Handed over by a release whose script has not answered yet: the server may
    /// still show the previous holder's field, so the watchdog must not renew yet.
    unconfirmed: bool,
    /// The generation whose renewal call is in flight: later rounds leave it out.
    renewing: Option<u64>,
    /// When the watchdog should renew next: a third of the lease after the send time
    /// of the last confirmed renewal or acquisition.
    renew_due: Instant,
    deadline_task: Option<AbortHandle>,
}

pub(crate) struct Holder {
    pub client: Arc<ClientInner>,
    pub keys: LockKeys,
    pub owner: String,
    pub fenced: bool,
    pub uid: u64,
    /// Held by every call that changes the hold (and by a hand-off to this holder).
    pub op: Arc<tokio::sync::Mutex<()>>,
    pub state: Mutex<HoldState>,
    pub on_lost: Mutex<Option<LostCallback>>,
    /// Live `Lock` handles of this holder: the last one dropped while holding is logged.
    pub handles: std::sync::atomic::AtomicUsize,
}

static NEXT_UID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

impl Holder {
    pub fn new(client: Arc<ClientInner>, name: &[u8], owner: String, fenced: bool) -> Arc<Holder> {
        Arc::new(Holder {
            client,
            keys: LockKeys::new(name),
            owner,
            fenced,
            uid: NEXT_UID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            op: Arc::new(tokio::sync::Mutex::new(())),
            state: Mutex::new(HoldState {
                count: 0,
                generation: 0,
                token: None,
                watchdog: false,
                lease_ms: 0,
                deadline: Instant::now(),
                lost: watch::channel(None).0,
                lost_error: None,
                lost_levels: 0,
                releasing: false,
                streak: 0,
                unconfirmed: false,
                renewing: None,
                renew_due: Instant::now(),
                deadline_task: None,
            }),
            on_lost: Mutex::new(None),
            handles: std::sync::atomic::AtomicUsize::new(0),
        })
    }

    fn context(&self, what: &str) -> String {
        format!("{what} lock \"{}\"", self.keys.display)
    }

    /// The current hold, if this holder holds the lock (local view).
    pub fn current_hold(&self) -> Option<Hold> {
        let st = self.state.lock().unwrap();
        (st.count > 0).then(|| Hold {
            token: st.token,
            count: st.count,
            lost: st.lost.subscribe(),
        })
    }

    /// Runs `op` holding the operation mutex, so that it completes and updates the local
    /// state even if the caller goes away (see the module comment). It runs in the
    /// caller's own task (a spawned task per call costs thread hops on every lock and
    /// unlock); only if the caller drops it half-way is the rest moved to a task.
    async fn detached<T, F, Fut>(self: &Arc<Self>, op: F) -> Result<T>
    where
        F: FnOnce(Arc<Holder>, OpGuard) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = Result<T>> + Send + 'static,
        T: Send + 'static,
    {
        let call = self.client.begin_call();
        let op_guard = OpGuard(Arc::new((self.op.clone().lock_owned().await, call)));
        // Held here until the call completes, whatever `op` does with its own clone
        // (an acquire whose outcome is unknown passes it to its resolver).
        let held = op_guard.clone();
        let call = op(self.clone(), op_guard);
        let call = async move {
            let result = call.await;
            drop(held);
            result
        };
        FinishInBackground::new(call, self.client.runtime.clone()).await
    }

    /// One acquire attempt.
    pub async fn attempt(self: &Arc<Self>, lease_ms: Option<u64>) -> Result<Attempt> {
        self.detached(move |h, guard| async move { h.acquire_once(lease_ms, guard).await }).await
    }

    async fn acquire_once(self: &Arc<Self>, lease_ms: Option<u64>, guard: OpGuard) -> Result<Attempt> {
        if self.client.is_shut_down() {
            return Err(Error::shut_down());
        }
        let mut conn = self.client.conn()?;
        let lease = lease_ms.unwrap_or_else(|| self.client.config.watchdog_ms());
        let before = self.state.lock().unwrap().count;
        for _ in 0..2 {
            let sent_at = Instant::now();
            let mut call = scripts::ACQUIRE.key(&self.keys.name);
            if self.fenced {
                call.key(&self.keys.token);
            }
            call.arg(lease).arg(&self.owner);
            match call.invoke_async::<Vec<i64>>(&mut conn).await {
                Ok(reply) => return self.decode_acquire(&reply, lease_ms, sent_at),
                Err(e) if Error::is_ambiguous(&e) => {
                    // The script may or may not have run: our own field tells which. The
                    // connection that failed was retired, so the read goes to a fresh one.
                    tracing::debug!(lock = %self.keys.display, error = %e, "acquire reply lost; reading the hold back");
                    let (count, token) = match self.read_own_field(&mut conn).await {
                        Ok(field) => field,
                        Err(err) => {
                            // Still unknown: the caller gets the error, and a resolver settles
                            // it (holding the operation lock, so no call sees a half state).
                            let this = self.clone();
                            self.client.runtime.spawn(this.resolve_unknown_acquire(guard, before, lease, sent_at));
                            return Err(err);
                        }
                    };
                    if count > before as i64 {
                        let hold = self.apply_acquired(count as u32, token, lease_ms, sent_at);
                        return Ok(Attempt::Acquired(PendingHold { holder: self.clone(), hold: Some(hold) }));
                    }
                    // It did not run: sending it again is safe.
                }
                Err(e) => return Err(Error::from_redis(&e, &self.context("acquiring"))),
            }
        }
        Err(Error::new(
            ErrorKind::Connection,
            format!("{}: the connection failed twice; check that Redis is reachable", self.context("acquiring")),
        ))
    }

    fn decode_acquire(self: &Arc<Self>, reply: &[i64], lease_ms: Option<u64>, sent_at: Instant) -> Result<Attempt> {
        match reply {
            [1, count, token] => {
                let token = self.fenced.then_some(*token as u64);
                let hold = self.apply_acquired(*count as u32, token, lease_ms, sent_at);
                Ok(Attempt::Acquired(PendingHold { holder: self.clone(), hold: Some(hold) }))
            }
            [0, pttl] if *pttl >= 0 => Ok(Attempt::Busy(Some(Duration::from_millis((*pttl as u64).max(1))))),
            [0, _] => Ok(Attempt::Busy(None)),
            other => Err(Error::internal(format!("unexpected acquire reply {other:?}"))),
        }
    }

    /// Settles an acquire whose reply was lost and whose read-back failed: as soon as
    /// Redis answers, levels it added are released (publishing, as a release does),
    /// so the lock is free long before the lease ends and the local view never
    /// reports a hold the caller was not given. Gives up only when a new hold would
    /// have expired by itself, or when the client is gone.
    async fn resolve_unknown_acquire(self: Arc<Self>, guard: OpGuard, before: u32, lease_ms: u64, sent_at: Instant) {
        let _guard = guard;
        let mut delay = Duration::from_millis(20);
        loop {
            if before == 0 && Instant::now() >= sent_at + Duration::from_millis(lease_ms) {
                return;
            }
            let Ok(mut conn) = self.client.conn() else { return };
            let read: redis::RedisResult<Option<i64>> = redis::Cmd::hget(&self.keys.name, &self.owner).query_async(&mut conn).await;
            match read {
                Ok(count) => {
                    let extra = count.unwrap_or(0) - before as i64;
                    if extra <= 0 {
                        return;
                    }
                    let lease = if before == 0 { 0 } else { self.state.lock().unwrap().lease_ms };
                    let request_id = self.client.new_request_id();
                    let undone = release_script(&self.client, conn, &self.keys, &self.owner, &request_id, lease, Levels::Some(extra as u32), None).await;
                    match undone {
                        Ok(_) => {
                            tracing::info!(lock = %self.keys.display, owner = %self.owner, levels = extra, "undid an acquisition whose reply was lost");
                            return;
                        }
                        Err(e) => tracing::debug!(lock = %self.keys.display, error = %e, "could not undo a lost acquisition yet; retrying"),
                    }
                }
                Err(e) => tracing::debug!(lock = %self.keys.display, error = %e, "lost acquisition still unresolved; retrying"),
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(1));
        }
    }

    /// Like [`Holder::read_own_field`], on the client's connection.
    pub(crate) async fn read_own_field_now(&self) -> Result<(i64, Option<u64>)> {
        let mut conn = self.client.conn()?;
        self.read_own_field(&mut conn).await
    }

    /// The server confirmed a hold handed over early: the watchdog may renew it.
    pub(crate) fn confirm_handed(&self, generation: u64) {
        let mut st = self.state.lock().unwrap();
        if st.generation == generation {
            st.unconfirmed = false;
        }
    }

    /// Reads this holder's hold count (and the token counter) with a few retries
    /// while the connection re-establishes itself.
    async fn read_own_field(&self, conn: &mut Conn) -> Result<(i64, Option<u64>)> {
        let mut pipe = redis::pipe();
        pipe.hget(&self.keys.name, &self.owner);
        if self.fenced {
            pipe.get(&self.keys.token);
        } else {
            pipe.cmd("ECHO").arg(0);
        }
        let mut delay = Duration::from_millis(20);
        let give_up = Instant::now() + self.client.config.connect_timeout + self.client.config.response_timeout;
        loop {
            match pipe.query_async::<(Option<i64>, Option<u64>)>(conn).await {
                Ok((count, token)) => return Ok((count.unwrap_or(0), token.filter(|_| self.fenced))),
                Err(e) if Error::is_ambiguous(&e) && Instant::now() + delay < give_up => {
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(Duration::from_millis(500));
                }
                Err(e) => return Err(Error::from_redis(&e, &self.context("checking after a lost reply on"))),
            }
        }
    }

    fn apply_acquired(self: &Arc<Self>, count: u32, token: Option<u64>, lease_ms: Option<u64>, sent_at: Instant) -> Hold {
        self.apply(count, token, lease_ms, sent_at, 0, false)
    }

    /// Applies an acquisition to the local view. A hold handed over by a release
    /// (handoff.rs) is the `streak`-th hand-off in a row, and `unconfirmed` while the
    /// release script has not answered yet.
    pub(crate) fn apply(
        self: &Arc<Self>,
        count: u32,
        token: Option<u64>,
        lease_ms: Option<u64>,
        sent_at: Instant,
        streak: u32,
        unconfirmed: bool,
    ) -> Hold {
        let lease = lease_ms.unwrap_or_else(|| self.client.config.watchdog_ms());
        let mut st = self.state.lock().unwrap();
        let fresh = st.count == 0;
        st.count = count.max(1);
        st.token = token;
        st.lease_ms = lease;
        // A re-entry PEXPIREs to its own lease, so the deadline follows the latest call.
        st.deadline = self.deadline_after(sent_at, lease);
        st.renew_due = sent_at + self.client.config.renew_interval();
        if fresh {
            st.generation += 1;
            st.watchdog = lease_ms.is_none();
            st.lost = watch::channel(None).0;
            st.lost_error = None;
            st.lost_levels = 0;
            // Set together with the hold: the watchdog must never see it half-made.
            st.streak = streak;
            st.unconfirmed = unconfirmed;
            let task = self.client.runtime.spawn(watch_deadline(Arc::downgrade(self), st.generation));
            if let Some(old) = st.deadline_task.replace(task.abort_handle()) {
                old.abort();
            }
            self.client.register_held(self);
        } else if lease_ms.is_none() {
            st.watchdog = true;
        }
        Hold { token, count: st.count, lost: st.lost.subscribe() }
    }

    /// Releases one level (or all), idempotently: retries after a lost reply reuse
    /// the request id, so the unlock latch answers them with the first answer.
    pub async fn release(self: &Arc<Self>, all: bool) -> Result<Released> {
        self.detached(move |h, _guard| async move { h.release_once(all).await }).await
    }

    pub async fn release_all(self: &Arc<Self>) -> Result<Released> {
        self.release(true).await
    }

    async fn release_once(self: &Arc<Self>, all: bool) -> Result<Released> {
        let (lease_ms, full, early, streak) = {
            let mut st = self.state.lock().unwrap();
            if st.count == 0 && st.lost_levels > 0 {
                st.lost_levels = if all { 0 } else { st.lost_levels - 1 };
                return Err(st.lost_error.clone().unwrap_or_else(|| self.lost_error("it was lost")));
            }
            // A holder that never acquired here (a hand-over) does not know the lease: keep the TTL.
            let lease_ms = if st.count == 0 { 0 } else { st.lease_ms };
            let full = st.count > 0 && (all || st.count == 1);
            // Letting an unfenced successor go before the reply is only as safe as this
            // hold: it must outlive the reply (see handoff.rs).
            let early = st.deadline > Instant::now() + self.client.config.response_timeout;
            st.releasing = full;
            (lease_ms, full, early, st.streak)
        };
        // Not while shutting down: the successor's acquire ends with `Cancelled` instead.
        // After a streak of hand-offs, free the lock: waiters of other clients only wake by message.
        let handoff = if full && streak < STREAK && !self.client.is_shut_down() {
            let claim = self.client.pubsub.claim_successor(&self.keys.channel, self.uid);
            claim.and_then(|claim| Handoff::start(claim, early, streak + 1))
        } else {
            None
        };
        let outcome = self.run_release(lease_ms, all, handoff.as_ref()).await;
        let outcome = match handoff {
            None => outcome,
            Some(handoff) => {
                handoff.settle(&outcome).await;
                match outcome {
                    // The script failed before it wrote (a broken token counter of the
                    // successor, say): release plainly; the successor finds out by itself.
                    Err(e) if e.kind() != ErrorKind::Connection => self.run_release(lease_ms, all, None).await,
                    other => other,
                }
            }
        };
        self.state.lock().unwrap().releasing = false;
        self.settle_release(outcome?, all)
    }

    fn settle_release(self: &Arc<Self>, reply: ReleaseReply, all: bool) -> Result<Released> {
        let mut st = self.state.lock().unwrap();
        match reply {
            ReleaseReply::NotOwner if st.count > 0 => {
                let generation = st.generation;
                drop(st);
                self.mark_lost(generation, "its owner field was gone when it was released (expired or force-unlocked)");
                let mut st = self.state.lock().unwrap();
                st.lost_levels = st.lost_levels.saturating_sub(1);
                Err(st.lost_error.clone().unwrap_or_else(|| self.lost_error("it was lost")))
            }
            ReleaseReply::NotOwner => Err(Error::new(
                ErrorKind::NotOwner,
                format!(
                    "lock \"{}\" is not held by this holder ({}); acquire it before releasing it",
                    self.keys.display, self.owner
                ),
            )),
            ReleaseReply::StillHeld if !all => {
                if st.count > 1 {
                    st.count -= 1;
                }
                Ok(Released::StillHeld(st.count))
            }
            ReleaseReply::StillHeld | ReleaseReply::Released | ReleaseReply::Handed(_) => {
                self.finish(&mut st);
                Ok(Released::Unlocked)
            }
        }
    }

    async fn run_release(&self, lease_ms: u64, all: bool, handoff: Option<&Handoff>) -> Result<ReleaseReply> {
        let conn = self.client.conn()?;
        let request_id = self.client.new_request_id();
        let levels = if all { Levels::All } else { Levels::Some(1) };
        release_script(&self.client, conn, &self.keys, &self.owner, &request_id, lease_ms, levels, handoff).await
    }

    /// The hold is over (released): stop its deadline timer and renewals.
    fn finish(&self, st: &mut HoldState) {
        st.count = 0;
        st.token = None;
        st.watchdog = false;
        if let Some(task) = st.deadline_task.take() {
            task.abort();
        }
        self.client.unregister_held(self.uid);
    }

    fn lost_error(&self, reason: &str) -> Error {
        Error::new(
            ErrorKind::LockLost,
            format!(
                "lock \"{}\" was lost by its holder ({}): {reason}; the critical section was not protected since then",
                self.keys.display, self.owner
            ),
        )
    }

    /// Marks the hold of `generation` lost and notifies the holder, once.
    pub fn mark_lost(&self, generation: u64, reason: &str) {
        let at = Instant::now();
        let error = self.lost_error(reason);
        {
            let mut st = self.state.lock().unwrap();
            if st.generation != generation || st.count == 0 {
                return;
            }
            st.lost_levels = st.count;
            st.lost_error = Some(error.clone());
            st.lost.send_replace(Some(error.clone()));
            self.finish(&mut st);
        }
        tracing::warn!(lock = %self.keys.display, owner = %self.owner, "{}", error.message());
        let callback = self.on_lost.lock().unwrap().clone();
        if let Some(callback) = callback {
            let event = LostEvent { name: self.keys.display.clone(), owner: self.owner.clone(), error, at };
            // Callbacks may block (bindings take their interpreter's lock): keep them off the runtime's workers.
            self.client.runtime.spawn_blocking(move || callback(&event));
        }
    }

    /// A renewal of `generation` found the owner field gone: the hold is lost, unless a
    /// release that ends it is under way (it deleted the field; its answer decides).
    pub fn renewal_found_gone(&self, generation: u64) {
        if !self.state.lock().unwrap().releasing {
            self.mark_lost(generation, "the watchdog found its owner field gone (expired, force-unlocked, or the server lost its data)");
        }
    }

    /// A renewal of `generation` succeeded: the lease now runs from `sent_at`.
    /// If the hold ended meanwhile (its deadline passed while the renewal was in
    /// flight), the renewal revived a field nobody will release: release it.
    pub fn renewed(self: &Arc<Self>, generation: u64, sent_at: Instant) {
        let mut st = self.state.lock().unwrap();
        if st.generation == generation && st.count > 0 {
            st.deadline = self.deadline_after(sent_at, self.client.config.watchdog_ms());
            st.renew_due = sent_at + self.client.config.renew_interval();
        } else if st.generation == generation && st.lost_error.is_some() {
            drop(st);
            tracing::debug!(lock = %self.keys.display, "a renewal landed after its hold was reported lost; releasing it");
            let this = self.clone();
            self.client.runtime.spawn(async move {
                let _ = this.detached(move |h, _guard| async move { h.release_revived(generation).await }).await;
            });
        }
    }

    /// Deletes this holder's field, revived by a late renewal of a lost hold, unless
    /// the holder acquired again since.
    async fn release_revived(self: &Arc<Self>, generation: u64) -> Result<()> {
        if self.state.lock().unwrap().generation != generation {
            return Ok(());
        }
        let conn = self.client.conn()?;
        let request_id = self.client.new_request_id();
        release_script(&self.client, conn, &self.keys, &self.owner, &request_id, 0, Levels::All, None).await?;
        Ok(())
    }

    /// The generation of the hold, if the watchdog should renew it now: held, on the
    /// watchdog, confirmed, and (for a round with a `horizon`) due before it with no
    /// renewal of it in flight. Marks it as renewing.
    pub fn begin_renewal(&self, horizon: Option<Instant>) -> Option<u64> {
        let mut st = self.state.lock().unwrap();
        let wanted = match horizon {
            Some(h) => st.renew_due <= h && st.renewing != Some(st.generation),
            None => true,
        };
        let due = st.count > 0 && st.watchdog && !st.unconfirmed && wanted;
        due.then(|| {
            st.renewing = Some(st.generation);
            st.generation
        })
    }

    pub fn end_renewal(&self, generation: u64) {
        let mut st = self.state.lock().unwrap();
        if st.renewing == Some(generation) {
            st.renewing = None;
        }
    }

    /// The local deadline of the hold of `generation`, while it is held.
    pub fn deadline_of(&self, generation: u64) -> Option<Instant> {
        let st = self.state.lock().unwrap();
        (st.generation == generation && st.count > 0).then_some(st.deadline)
    }

    /// The local deadline of a lease of `lease_ms` sent at `sent_at`: Redis's expiry
    /// comes no sooner than `sent_at + lease`, so a loss told at this deadline
    /// precedes it by the safety margin (clock drift, timer and scheduling delays).
    fn deadline_after(&self, sent_at: Instant, lease_ms: u64) -> Instant {
        let lease = Duration::from_millis(lease_ms);
        sent_at + lease.saturating_sub(self.client.config.safety_margin(lease))
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        // Held holders are kept alive by the client (see `ClientInner::held`), so a
        // holder that goes away holds nothing.
        self.client.forget_holder(&self.keys.name, &self.owner, self.fenced);
    }
}

/// What the release script answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReleaseReply {
    /// The owner field was absent.
    NotOwner,
    /// Levels are left.
    StillHeld,
    /// The lock is free; a waiter was woken by a message.
    Released,
    /// The lock went straight to the hand-off's successor, with this token (0 unfenced).
    Handed(u64),
}

impl ReleaseReply {
    fn decode(value: &redis::Value) -> Result<ReleaseReply> {
        use redis::Value::{Array, Int, Nil};
        match value {
            Nil => Ok(ReleaseReply::NotOwner),
            Int(0) => Ok(ReleaseReply::StillHeld),
            Int(1) => Ok(ReleaseReply::Released),
            Array(parts) => match parts.as_slice() {
                [Int(2), Int(token)] => Ok(ReleaseReply::Handed(*token as u64)),
                _ => Err(Error::internal(format!("unexpected release reply {value:?}"))),
            },
            _ => Err(Error::internal(format!("unexpected release reply {value:?}"))),
        }
    }
}

/// How many levels a release script call gives up.
#[derive(Debug, Clone, Copy)]
enum Levels {
    All,
    Some(u32),
}

/// Runs the release script, retrying after a lost reply with the same request id
/// until the retry window closes; then queues the latch for deletion.
#[allow(clippy::too_many_arguments)]
async fn release_script(
    client: &ClientInner,
    mut conn: Conn,
    keys: &LockKeys,
    owner: &str,
    request_id: &str,
    lease_ms: u64,
    levels: Levels,
    handoff: Option<&Handoff>,
) -> Result<ReleaseReply> {
    let latch = keys.latch(request_id);
    let window = client.config.retry_window;
    let levels = match levels {
        Levels::All => "all".to_string(),
        Levels::Some(n) => n.to_string(),
    };
    let mut call = scripts::RELEASE.key(&keys.name);
    call.key(&keys.channel).key(&latch);
    call.arg(owner).arg(lease_ms).arg(scripts::PUBLISH).arg(window.as_millis() as u64).arg(levels);
    if let Some(handoff) = handoff {
        let successor = handoff.successor();
        if successor.fenced {
            call.key(&successor.keys.token);
        }
        call.arg(&successor.owner).arg(handoff.lease_ms);
    }
    let started = Instant::now();
    let mut delay = Duration::from_millis(10);
    let reply = loop {
        match call.invoke_async::<redis::Value>(&mut conn).await {
            Ok(reply) => break reply,
            Err(e) if Error::is_ambiguous(&e) && started.elapsed() + delay < window => {
                tracing::debug!(lock = %keys.display, error = %e, "release reply lost; retrying with the same request id");
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_millis(500));
            }
            Err(e) => return Err(Error::from_redis(&e, &format!("releasing lock \"{}\"", keys.display))),
        }
    };
    // The latch only answers retries of this call, which are over now.
    client.latches.remove_later(latch);
    ReleaseReply::decode(&reply)
}

/// Marks the hold lost when its local deadline passes without a renewal.
async fn watch_deadline(holder: Weak<Holder>, generation: u64) {
    loop {
        let deadline = {
            let Some(h) = holder.upgrade() else { return };
            let st = h.state.lock().unwrap();
            if st.generation != generation || st.count == 0 {
                return;
            }
            st.deadline
        };
        if Instant::now() >= deadline {
            if let Some(h) = holder.upgrade() {
                let lease = h.state.lock().unwrap().lease_ms;
                h.mark_lost(generation, &format!("its lease ({lease} ms) ran out before it was renewed or released"));
            }
            return;
        }
        tokio::time::sleep_until(deadline.into()).await;
    }
}

/// Held through one call that changes a hold: the holder's operation lock, and the
/// client's count of calls in flight (shutdown waits for them). Both are let go
/// when the last clone drops.
#[derive(Clone)]
struct OpGuard(#[allow(dead_code)] Arc<(tokio::sync::OwnedMutexGuard<()>, crate::client::CallGuard)>);

/// A future that, if dropped before it completes, finishes in a spawned task: the
/// operation's effects (and the undo of an acquisition nobody takes) still happen.
struct FinishInBackground<T: Send + 'static> {
    future: Option<std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send>>>,
    runtime: tokio::runtime::Handle,
}

impl<T: Send + 'static> FinishInBackground<T> {
    fn new(future: impl std::future::Future<Output = T> + Send + 'static, runtime: tokio::runtime::Handle) -> Self {
        FinishInBackground { future: Some(Box::pin(future)), runtime }
    }
}

impl<T: Send + 'static> std::future::Future for FinishInBackground<T> {
    type Output = T;

    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<T> {
        let future = self.future.as_mut().expect("FinishInBackground polled after completion");
        let output = std::task::ready!(future.as_mut().poll(cx));
        self.future = None;
        std::task::Poll::Ready(output)
    }
}

impl<T: Send + 'static> Drop for FinishInBackground<T> {
    fn drop(&mut self) {
        if let Some(rest) = self.future.take() {
            // The output (e.g. an acquisition) is dropped there, which undoes it.
            self.runtime.spawn(async move {
                drop(rest.await);
            });
        }
    }
}
