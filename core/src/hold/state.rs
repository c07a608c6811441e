//! The local view of one holder's hold: count, token, lease deadline, lost signal
//! and renewal bookkeeping, and what changes them (an acquisition applied, a loss
//! marked, a renewal confirmed). The deadline is `send time of the last confirmed
//! acquire or renewal + lease - safety margin`: Redis's expiry comes no sooner than
//! `send time + lease`, so a loss told at the deadline precedes anyone else's hold.
//! Renewals go a third of the lease after the previous one was *sent*, whether or
//! not it was answered yet: over a link whose round-trip is a good part of the
//! lease, renewals overlap, and a hold is kept while the round-trip stays under
//! about two thirds of the lease minus the margin (waiting for each answer before
//! counting the next third made it a third).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};


use super::{Hold, Lost, LostCallback, LostEvent, LostSignal};
use crate::ctx::Ctx;
use crate::error::{Error, ErrorKind};

pub(crate) struct HoldState {
    pub count: u32,
    pub generation: u64,
    pub token: Option<u64>,
    /// Renewed by the watchdog (some level was taken without an explicit lease).
    pub watchdog: bool,
    /// PEXPIRE used when a partial release keeps the hold.
    pub lease_ms: u64,
    /// The lease the latest acquisition asked for (what `reacquire` resets to).
    pub taken_lease_ms: u64,
    /// When the current hold began (for the hold-time metric).
    pub since: Instant,
    /// Local monotonic deadline (see the module comment).
    pub deadline: Instant,
    lost: Arc<LostSignal>,
    /// Set when the current hold was lost; cleared by the next first acquisition.
    pub lost_error: Option<Error>,
    /// Releases still to be answered with `LockLost` (the levels held when lost).
    pub lost_levels: u32,
    /// A release that ends the hold is under way: a renewal that finds the field gone
    /// raced it, and the release's own answer tells whether the hold was lost.
    pub releasing: bool,
    /// Hand-offs in a row that led to this hold (0: acquired by an attempt of its own).
    pub streak: u32,
    /// Handed over by a release whose script has not answered yet: the server may
    /// still show the previous holder's field, so the watchdog must not renew yet.
    unconfirmed: bool,
    /// When the watchdog should renew next: a third of the lease after the send time
    /// of the last renewal or acquisition, answered or not.
    renew_due: Instant,
    /// The current hold's note is on the server (lock/note.rs).
    note_written: bool,
}

/// An acquisition to apply to the local view (see [`HoldCell::apply`]).
pub(crate) struct Acquired {
    pub count: u32,
    pub token: Option<u64>,
    /// The explicit lease (`None`: the watchdog's).
    pub lease_ms: Option<u64>,
    /// When the acquiring call was sent: the lease runs from no earlier.
    pub sent_at: Instant,
    /// Hand-offs in a row that led to it (0: taken by an attempt of its own).
    pub streak: u32,
    /// Handed over by a release whose script has not answered yet.
    pub unconfirmed: bool,
}

impl Acquired {
    /// Taken by an attempt of the holder's own.
    pub fn by_attempt(count: u32, token: Option<u64>, lease_ms: Option<u64>, sent_at: Instant) -> Acquired {
        Acquired { count, token, lease_ms, sent_at, streak: 0, unconfirmed: false }
    }
}

/// One holder's hold state, with what it needs to tell a loss.
pub(crate) struct HoldCell {
    pub ctx: Arc<Ctx>,
    /// The holder's uid in the client's registry of held holds.
    uid: u64,
    /// The primitive's name and the owner field, for messages (shared with the holder).
    name: Arc<[u8]>,
    owner: Arc<str>,
    pub state: Mutex<HoldState>,
    pub on_lost: Mutex<Option<LostCallback>>,
}

impl HoldCell {
    pub fn new(ctx: Arc<Ctx>, uid: u64, name: Arc<[u8]>, owner: Arc<str>) -> Arc<HoldCell> {
        let now = Instant::now();
        let state = HoldState {
            count: 0,
            generation: 0,
            token: None,
            watchdog: false,
            lease_ms: 0,
            taken_lease_ms: 0,
            since: now,
            deadline: now,
            lost: Arc::default(),
            lost_error: None,
            lost_levels: 0,
            releasing: false,
            streak: 0,
            unconfirmed: false,
            renew_due: now,
            note_written: false,
        };
        Arc::new(HoldCell { ctx, uid, name, owner, state: Mutex::new(state), on_lost: Mutex::new(None) })
    }

    /// The current hold, if held (local view).
    pub fn current_hold(&self) -> Option<Hold> {
        let st = self.state.lock().unwrap();
        (st.count > 0).then(|| Hold { token: st.token, count: st.count, lost: Lost::Signal(st.lost.clone()) })
    }

    /// Applies an acquisition. Returns the hold, whether it is a new one (the caller
    /// registers it with the client then) and its deadline (for the client's timer).
    pub fn apply(self: &Arc<Self>, acquired: Acquired) -> (Hold, bool, Instant) {
        let Acquired { count, token, lease_ms, sent_at, streak, unconfirmed } = acquired;
        let config = &self.ctx.config;
        let lease = lease_ms.unwrap_or_else(|| config.watchdog_ms());
        let mut st = self.state.lock().unwrap();
        let fresh = st.count == 0;
        st.count = count.max(1);
        st.token = token;
        st.lease_ms = lease;
        st.taken_lease_ms = lease;
        // A re-entry PEXPIREs to its own lease, so the deadline follows the latest call.
        st.deadline = self.deadline_after(sent_at, lease);
        st.renew_due = sent_at + config.renew_interval();
        if fresh {
            st.generation += 1;
            st.since = Instant::now();
            st.watchdog = lease_ms.is_none();
            // A new loss signal, unless nobody can tell it from the old one (no hold
            // or receiver of it is left): an allocation less per lock cycle.
            if st.lost.is_heard() {
                st.lost.retire();
                st.lost = Arc::default();
            }
            st.lost_error = None;
            st.lost_levels = 0;
            st.note_written = false;
            // Set together with the hold: the watchdog must never see it half-made.
            st.streak = streak;
            st.unconfirmed = unconfirmed;
        } else if lease_ms.is_none() {
            st.watchdog = true;
        }
        (Hold { token, count: st.count, lost: Lost::Signal(st.lost.clone()) }, fresh, st.deadline)
    }

    /// The current hold's generation and the lease its latest acquisition asked for,
    /// for a change of an explicit lease; why not otherwise.
    pub fn explicit_lease(&self, context: &str) -> Result<(u64, u64), Error> {
        let st = self.state.lock().unwrap();
        if st.count == 0 {
            return Err(match &st.lost_error {
                Some(lost) => lost.clone(),
                None => Error::new(ErrorKind::NotOwner, format!("{context}: this holder does not hold it")),
            });
        }
        if st.watchdog {
            return Err(Error::invalid(format!(
                "{context}: the hold was taken without an explicit lease, so the watchdog renews it; \
                 extend applies to holds taken with a lease"
            )));
        }
        Ok((st.generation, st.taken_lease_ms))
    }

    /// The server confirmed a new lease of `lease_ms` for the hold of `generation`,
    /// set by a call sent at `sent_at`.
    pub fn lease_changed(self: &Arc<Self>, generation: u64, sent_at: Instant, lease_ms: u64) {
        let mut st = self.state.lock().unwrap();
        if st.generation != generation || st.count == 0 {
            return;
        }
        st.lease_ms = lease_ms;
        // Written again with the new expiry in the watchdog's next round.
        st.note_written = false;
        st.deadline = self.deadline_after(sent_at, lease_ms);
        // A shorter lease moves the deadline earlier than the timer may look.
        self.ctx.deadlines.arm(st.deadline);
    }

    /// The hold is over (released or lost): no more deadline or renewals.
    pub fn finish(&self, st: &mut HoldState) {
        self.ctx.transport.metrics.hold_ended(st.since.elapsed());
        st.count = 0;
        st.token = None;
        st.watchdog = false;
        self.ctx.held.unregister(self.uid);
    }

    /// Marks the hold lost if its local deadline is not after `now` (the client's
    /// deadline timer asks); otherwise its deadline, while held. Not once the client
    /// is closing: the close releases every hold, ending its critical section, and the
    /// release's answer tells whether the hold was lost (its field found gone). Its
    /// renewals, slowed down by the close's own releases, made the deadline report
    /// holds the close then released (thousands of 100,000 with a 3 s lease).
    pub fn expire_if_due(&self, now: Instant) -> Option<Instant> {
        let (generation, deadline, lease) = {
            let st = self.state.lock().unwrap();
            if st.count == 0 || self.ctx.is_shut_down() {
                return None;
            }
            (st.generation, st.deadline, st.lease_ms)
        };
        if now < deadline {
            return Some(deadline);
        }
        self.mark_lost(generation, &format!("its lease ({lease} ms) ran out before it was renewed or released"));
        None
    }

    /// The name for messages (lossy UTF-8).
    fn display(&self) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(&self.name)
    }

    pub fn lost_error(&self, reason: &str) -> Error {
        Error::new(
            ErrorKind::LockLost,
            format!(
                "lock \"{}\" was lost by its holder ({}): {reason}; the critical section was not protected since then",
                self.display(), self.owner
            ),
        )
    }

    /// Marks the hold of `generation` lost and notifies the holder, once.
    pub fn mark_lost(&self, generation: u64, reason: &str) -> bool {
        let at = Instant::now();
        let error = self.lost_error(reason);
        {
            let mut st = self.state.lock().unwrap();
            if st.generation != generation || st.count == 0 {
                return false;
            }
            st.lost_levels = st.count;
            st.lost_error = Some(error.clone());
            st.lost.set(error.clone());
            self.finish(&mut st);
        }
        self.ctx.transport.metrics.lost();
        tracing::warn!(lock = %self.display(), owner = %self.owner, "{}", error.message());
        let callback = self.on_lost.lock().unwrap().clone();
        if let Some(callback) = callback {
            let event = LostEvent {
                name: self.display().into_owned(),
                owner: self.owner.to_string(),
                reason: reason.to_string(),
                error,
                at,
            };
            // Callbacks may block (bindings take their interpreter's lock): keep them off the runtime's workers.
            self.ctx.runtime.spawn_blocking(move || callback(&event));
        }
        true
    }

    /// A renewal of `generation` found the owner field gone: the hold is lost, unless a
    /// release that ends it is under way (it deleted the field; its answer decides) or
    /// ended it already. Returns whether it was reported lost.
    pub fn renewal_found_gone(&self, generation: u64) -> bool {
        let releasing = self.state.lock().unwrap().releasing;
        !releasing && self.mark_lost(generation, "the watchdog found its owner field gone (expired, force-unlocked, or the server lost its data)")
    }

    /// A renewal of `generation` sent at `sent_at` succeeded: the lease now runs from
    /// then, unless a renewal sent later was answered first (renewals overlap on a
    /// slow link). Returns true if the hold had been reported lost meanwhile (its
    /// deadline passed while the renewal was in flight): the renewal revived a field
    /// nobody will release, and the caller must release it.
    pub fn renewed(&self, generation: u64, sent_at: Instant) -> bool {
        let mut st = self.state.lock().unwrap();
        if st.generation == generation && st.count > 0 {
            st.deadline = st.deadline.max(self.deadline_after(sent_at, self.ctx.config.watchdog_ms()));
            return false;
        }
        st.generation == generation && st.lost_error.is_some()
    }

    /// The generation of the hold if the watchdog should renew it now: held, on the
    /// watchdog, confirmed, and (for a round with a `horizon`) due before it. The next
    /// renewal is due a third of the lease from now, whatever becomes of this one.
    pub fn begin_renewal(&self, horizon: Option<Instant>) -> Option<u64> {
        let mut st = self.state.lock().unwrap();
        let due = st.count > 0 && st.watchdog && !st.unconfirmed && horizon.is_none_or(|h| st.renew_due <= h);
        if !due {
            return None;
        }
        st.renew_due = Instant::now() + self.ctx.config.renew_interval();
        Some(st.generation)
    }

    /// Whether the current hold's note should be written or refreshed now: the hold's
    /// generation, whether the note is still to be written, how long the hold has
    /// lasted and whether the watchdog renews it. A note is written once the hold has
    /// lasted `after`; a written one is refreshed when the hold is renewed.
    pub fn note_due(&self, renewing: bool, after: Duration) -> Option<(u64, bool, Duration, bool)> {
        let st = self.state.lock().unwrap();
        if st.count == 0 || st.unconfirmed {
            return None;
        }
        let held = st.since.elapsed();
        let due = if st.note_written { renewing } else { held >= after };
        due.then_some((st.generation, !st.note_written, held, st.watchdog))
    }

    /// The note of the hold of `generation` is on the server.
    pub fn note_written(&self, generation: u64) {
        let mut st = self.state.lock().unwrap();
        if st.generation == generation && st.count > 0 {
            st.note_written = true;
        }
    }

    /// After the hold ended: whether it had left a note (to remove), once.
    pub fn take_note_written(&self) -> bool {
        let mut st = self.state.lock().unwrap();
        st.count == 0 && std::mem::take(&mut st.note_written)
    }

    /// The local deadline of the hold of `generation`, while it is held.
    pub fn deadline_of(&self, generation: u64) -> Option<Instant> {
        let st = self.state.lock().unwrap();
        let held = st.generation == generation && st.count > 0;
        if held && self.ctx.is_shut_down() {
            // A closing client renews what it has yet to release past the local
            // deadline: no loss is told from the deadline then (expire_if_due), the
            // release tells it, and a renewal that still finds the field keeps the key
            // until its release comes (a close over a slow link, 256 releases at a time).
            return Some(st.deadline.max(Instant::now() + Duration::from_millis(st.lease_ms)));
        }
        held.then_some(st.deadline)
    }

    /// The server confirmed a hold handed over early: the watchdog may renew it.
    pub fn confirm_handed(&self, generation: u64) {
        let mut st = self.state.lock().unwrap();
        if st.generation == generation {
            st.unconfirmed = false;
        }
    }

    /// Redis's expiry comes no sooner than `sent_at + lease`, so a loss told at this
    /// deadline precedes it by the safety margin (clock drift, timer and scheduling delays).
    fn deadline_after(&self, sent_at: Instant, lease_ms: u64) -> Instant {
        let lease = Duration::from_millis(lease_ms);
        sent_at + lease.saturating_sub(self.ctx.config.safety_margin(lease))
    }
}
