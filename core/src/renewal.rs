//! Renewal of held holds: the registry of what a client holds (kept alive there,
//! renewed by the watchdog, released at shutdown) and renewal rounds. A round asks
//! every held hold for a ticket (its renew script, key and owner), groups the
//! tickets by (script, cluster slot), at most [`BATCH`] per call, and sends all calls
//! at once. A hold is due a third of the lease after its previous renewal was sent,
//! answered or not, so on a slow link renewals overlap (hold/state.rs). A call waits
//! for its answer for up to a lease, not the response timeout (an answer after the
//! hold's deadline still tells us to delete a field it kept alive), and is sent again
//! (on a fresh connection) after a connection failure while its holds can be saved.
//! A renewal that finds the owner field gone marks the hold lost; a hold that cannot
//! be renewed is marked lost at its deadline by the client's one deadline timer
//! ([`Deadlines`], driven by a task in ctx.rs).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use futures_util::stream::{FuturesUnordered, StreamExt as _};
use redis::Script;

use crate::error::{Error, Result};
use crate::metrics::Recorder;
use crate::transport::{Conn, Transport};

/// Holds per renewal script call.
pub const BATCH: usize = 100;

/// What one renewal round did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RenewalReport {
    /// Holds renewed.
    pub renewed: usize,
    /// Holds found lost (owner field gone).
    pub lost: usize,
    /// Holds whose renewal could not get through before their deadline (lost there).
    pub failed: usize,
    /// Script calls made.
    pub script_calls: usize,
    /// Wall time of the round.
    pub duration: Duration,
}

/// What the renewal of one hold sends.
pub(crate) struct Ticket {
    /// The renew script of the hold's kind: `KEYS` = keys, `ARGV[1]` = lease, `ARGV[i+1]` = owner i.
    pub script: &'static Script,
    pub key: Arc<[u8]>,
    pub owner: Arc<str>,
    pub generation: u64,
}

/// What writing or refreshing one holder note sends (lock/note.rs, scripts/lock/notes.lua).
pub(crate) struct NoteTicket {
    pub key: Arc<[u8]>,
    pub note_key: Vec<u8>,
    pub owner: Arc<str>,
    /// The note to write; `None` refreshes the expiry of the one written.
    pub text: Option<String>,
    /// How long the hold has lasted (the server turns it into "since").
    pub held_ms: u64,
    pub generation: u64,
}

/// A hold the client keeps (held by some primitive with an owner).
pub(crate) trait Held: Send + Sync {
    /// A note to write or refresh in this round, if due; `renewing`: the round renews
    /// the hold (a written note follows its lease).
    fn begin_note(&self, _renewing: bool) -> Option<NoteTicket> {
        None
    }
    /// The note of `generation` was written.
    fn noted(&self, _generation: u64) {}
    /// A ticket if the hold should be renewed now: with a `horizon`, only if due
    /// before it (renewals of it already in flight do not matter); counts the next
    /// renewal from now.
    fn begin_renewal(&self, horizon: Option<Instant>) -> Option<Ticket>;
    /// The renewal of `generation` sent at `sent_at` succeeded.
    fn renewed(self: Arc<Self>, generation: u64, sent_at: Instant);
    /// The renewal of `generation` found the owner field gone; returns whether the
    /// hold was reported lost (not when a release ended it meanwhile).
    fn found_gone(&self, generation: u64) -> bool;
    /// The local deadline of `generation`, while held.
    fn deadline_of(&self, generation: u64) -> Option<Instant>;
    /// Marks the hold lost if its deadline is not after `now`; otherwise its deadline
    /// (`None` when nothing is held).
    fn expire_if_due(&self, now: Instant) -> Option<Instant>;
    /// Releases every level (client shutdown).
    fn release_all(self: Arc<Self>) -> BoxFuture<'static, ()>;
}

/// Every hold a client holds, by holder uid.
#[derive(Default)]
pub(crate) struct Registry {
    held: Mutex<HashMap<u64, Arc<dyn Held>, BuildHasherDefault<UidHasher>>>,
}

/// Holder uids come from a counter of ours, never from outside: SipHash's defence
/// against chosen keys buys nothing here, and a hold is registered and unregistered
/// on every uncontended cycle. (Multiplying spreads consecutive uids over the high
/// bits the table looks at.)
#[derive(Default)]
struct UidHasher(u64);

impl Hasher for UidHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8 | u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

impl Registry {
    pub fn register(&self, uid: u64, held: Arc<dyn Held>) {
        self.held.lock().unwrap().insert(uid, held);
    }

    pub fn unregister(&self, uid: u64) {
        self.held.lock().unwrap().remove(&uid);
    }

    pub fn all(&self) -> Vec<Arc<dyn Held>> {
        self.held.lock().unwrap().values().cloned().collect()
    }

    pub fn count(&self) -> usize {
        self.held.lock().unwrap().len()
    }

    pub fn clear(&self) {
        self.held.lock().unwrap().clear();
    }
}

/// When the client's deadline timer looks at its holds next: the earliest deadline
/// any hold armed since its last look. One timer per client, not a task per hold: a
/// spawned timer task per hold (spawned, then aborted, on every lock and unlock) cost
/// the uncontended cycle more than its bookkeeping. A hold arms it when it is taken
/// or its deadline moves earlier; renewals move deadlines later, which the next look
/// finds (it re-arms at the earliest deadline left).
pub(crate) struct Deadlines {
    base: Instant,
    /// Nanoseconds after `base`; `u64::MAX`: nothing to look at.
    armed: AtomicU64,
    pub(crate) wake: tokio::sync::Notify,
}

impl Deadlines {
    pub fn new() -> Deadlines {
        Deadlines { base: Instant::now(), armed: AtomicU64::new(u64::MAX), wake: tokio::sync::Notify::new() }
    }

    /// Has the timer look no later than `deadline`.
    pub fn arm(&self, deadline: Instant) {
        let at = deadline.saturating_duration_since(self.base).as_nanos().min(u64::MAX as u128 - 1) as u64;
        // Mostly a later deadline than the one armed: a plain read decides.
        if at < self.armed.load(Ordering::Acquire) && at < self.armed.fetch_min(at, Ordering::AcqRel) {
            self.wake.notify_one();
        }
    }

    /// When the timer should look next, if at all.
    pub fn next(&self) -> Option<Instant> {
        let at = self.armed.load(Ordering::Acquire);
        (at != u64::MAX).then(|| self.base + Duration::from_nanos(at))
    }

    /// Before a look: holds taken from here on arm it again.
    pub fn disarm(&self) {
        self.armed.store(u64::MAX, Ordering::Release);
    }
}

/// One look of the deadline timer: marks lost every hold whose deadline passed and
/// arms the timer at the earliest deadline left (at least a millisecond ahead, the
/// timer's resolution, so that many holds close together cost one look, not one each).
pub(crate) fn expire_due(held: &Registry, deadlines: &Deadlines) {
    deadlines.disarm();
    let now = Instant::now();
    let next = held.all().iter().filter_map(|hold| hold.expire_if_due(now)).min();
    if let Some(next) = next {
        deadlines.arm(next.max(now + Duration::from_millis(1)));
    }
}

/// One round over every hold due before `horizon` (all holds without one). A round a
/// failover notice started (`noticed`: when) records, for each hold it finds lost, the
/// time from the notice to that hold's report (`failover_loss_report`): its own batch's
/// answer, not the round's end, which a batch for another master can hold up.
pub(crate) async fn renew_all<F>(held: &Registry, conn: F, transport: &Transport, lease_ms: u64, horizon: Option<Instant>, noticed: Option<Instant>) -> RenewalReport
where
    F: Fn() -> Result<Conn> + Sync,
{
    let started = Instant::now();
    let mut groups: HashMap<(&'static str, Option<u16>), Vec<(Arc<dyn Held>, Ticket)>> = HashMap::new();
    let all = held.all();
    let mut renewing = Vec::with_capacity(all.len());
    for hold in &all {
        let ticket = hold.begin_renewal(horizon);
        renewing.push(ticket.is_some());
        if let Some(ticket) = ticket {
            let group = (ticket.script.get_hash(), transport.slot_of(&ticket.key));
            groups.entry(group).or_default().push((hold.clone(), ticket));
        }
    }
    let batches: Vec<&[(Arc<dyn Held>, Ticket)]> = groups.values().flat_map(|g| g.chunks(BATCH)).collect();
    let conn = &conn;
    let calls = batches.into_iter().map(|batch| renew_batch(conn, lease_ms, batch, &transport.metrics, noticed));
    // Polled after the renewals, so sent after them on the same connection: a
    // refreshed note takes the renewed lease.
    let notes = write_notes(conn, transport, Duration::from_millis(lease_ms), all.into_iter().zip(renewing));
    let (parts, _) = futures_util::future::join(futures_util::future::join_all(calls), notes).await;
    let mut report = RenewalReport::default();
    for part in parts {
        report.renewed += part.renewed;
        report.lost += part.lost;
        report.failed += part.failed;
        report.script_calls += part.script_calls;
    }
    report.duration = started.elapsed();
    report
}

/// Note calls a round has in flight at once. Notes are made batch by batch as they
/// are sent: when thousands of holds taken together pass `holder_note_after` in the
/// same round, their notes (a few hundred bytes each) and requests are never all in
/// memory at once (a burst malloc keeps as resident memory afterwards).
const NOTE_CALLS_IN_FLIGHT: usize = 2;

/// Writes or refreshes the notes due among `holds` (each with whether this round renews it).
async fn write_notes<F>(conn: &F, transport: &Transport, lease: Duration, holds: impl Iterator<Item = (Arc<dyn Held>, bool)>)
where
    F: Fn() -> Result<Conn> + Sync,
{
    let mut pending: HashMap<Option<u16>, Vec<(Arc<dyn Held>, NoteTicket)>> = HashMap::new();
    let send = |batch: Vec<(Arc<dyn Held>, NoteTicket)>| async move { note_batch(conn, lease, &batch).await };
    let mut in_flight = FuturesUnordered::new();
    for (hold, renewing) in holds {
        let Some(note) = hold.begin_note(renewing) else { continue };
        let group = pending.entry(transport.slot_of(&note.key)).or_default();
        group.push((hold, note));
        if group.len() == BATCH {
            let batch = std::mem::take(group);
            start_bounded(&mut in_flight, send(batch)).await;
        }
    }
    for batch in pending.into_values().filter(|b| !b.is_empty()) {
        start_bounded(&mut in_flight, send(batch)).await;
    }
    while in_flight.next().await.is_some() {}
}

/// Starts `call` once fewer than [`NOTE_CALLS_IN_FLIGHT`] run: a round keeps at
/// most that many batches of notes made and unsent.
async fn start_bounded<Fut: std::future::Future>(in_flight: &mut FuturesUnordered<Fut>, call: Fut) {
    while in_flight.len() >= NOTE_CALLS_IN_FLIGHT {
        in_flight.next().await;
    }
    in_flight.push(call);
}

/// Writes or refreshes a batch of holder notes: once, best effort (a note is only
/// informative; the next round tries a note not written again).
async fn note_batch<F>(conn: &F, lease: Duration, batch: &[(Arc<dyn Held>, NoteTicket)])
where
    F: Fn() -> Result<Conn> + Sync,
{
    let mut call = crate::scripts::NOTES.prepare_invoke();
    for (_, note) in batch {
        call.key(&note.key).key(&note.note_key).arg(&*note.owner).arg(note.text.as_deref().unwrap_or("")).arg(note.held_ms);
    }
    // Sent behind the round's renewals, so answered no sooner: as patient as they are,
    // and a timeout does not retire the connection the renewals use.
    let Ok(conn) = conn() else { return };
    let mut conn = conn.with_timeout(lease).best_effort();
    match call.invoke_async::<Vec<i64>>(&mut conn).await {
        Ok(flags) => {
            for ((hold, note), flag) in batch.iter().zip(flags) {
                if flag == 1 && note.text.is_some() {
                    hold.noted(note.generation);
                }
            }
        }
        Err(e) => tracing::debug!(error = %e, notes = batch.len(), "holder notes not written; the next round tries again"),
    }
}

async fn renew_batch<F>(conn: &F, lease_ms: u64, batch: &[(Arc<dyn Held>, Ticket)], metrics: &Recorder, noticed: Option<Instant>) -> RenewalReport
where
    F: Fn() -> Result<Conn> + Sync,
{
    let mut report = RenewalReport::default();
    let mut call = batch[0].1.script.prepare_invoke();
    call.arg(lease_ms);
    for (_, ticket) in batch {
        call.key(&ticket.key).arg(&*ticket.owner);
    }
    let lease = Duration::from_millis(lease_ms);
    let mut delay = Duration::from_millis(10);
    loop {
        // Worth sending while any of the holds can still be saved. Holds that ended
        // meanwhile (released: a close releases while renewing) are no failure.
        let Some(until) = batch.iter().filter_map(|(h, t)| h.deadline_of(t.generation)).max() else {
            return report;
        };
        let now = Instant::now();
        if until <= now {
            report.failed = batch.len();
            metrics.renewals(0, 1);
            return report;
        }
        let Ok(conn) = conn() else { return report };
        // Waiting past `until` saves no hold, but a late "renewed" has the field it kept
        // deleted (`Held::renewed`), so the lock is free well before that lease ends;
        // a field kept by an answer later than a lease just expires.
        let mut conn = conn.with_timeout(lease);
        // Sent once a connection is up: the lease it confirms counts from the send.
        let ready = conn.ready().await;
        let sent_at = Instant::now();
        // A NOSCRIPT (SCRIPT FLUSH) makes it three requests: bound them together too.
        let reply = match ready {
            Err(e) => Err(e),
            Ok(()) => {
                report.script_calls += 1;
                match tokio::time::timeout(lease, call.invoke_async::<Vec<i64>>(&mut conn)).await {
                    Ok(reply) => reply,
                    Err(_) => Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "no renewal reply within a lease").into()),
                }
            }
        };
        match reply {
            Ok(flags) if flags.len() == batch.len() => {
                for ((hold, ticket), flag) in batch.iter().zip(flags) {
                    if flag == 1 {
                        hold.clone().renewed(ticket.generation, sent_at);
                        report.renewed += 1;
                    } else {
                        // Not a loss when its release ended it meanwhile (the round took its
                        // holds before sending): counted, they made most of the failover
                        // harness's "loss reports" while its clients reported no loss.
                        if hold.found_gone(ticket.generation) {
                            report.lost += 1;
                            if let Some(noticed) = noticed {
                                metrics.lost_after_failover(noticed.elapsed());
                            }
                        }
                    }
                }
                metrics.renewals(report.renewed as u64, 0);
                return report;
            }
            Ok(flags) => {
                tracing::error!(expected = batch.len(), got = flags.len(), "unexpected renewal reply");
                report.failed = batch.len();
                metrics.renewals(0, 1);
                return report;
            }
            // A refusal for now (CLUSTERDOWN during a failover, say) did not run it: as a lost reply.
            Err(e) if Error::is_ambiguous(&e) || Error::is_refused_for_now(&e) => {
                tracing::warn!(error = %e, holds = batch.len(), "renewal call failed; sending it again until the holds' deadline");
                metrics.renewals(0, 1);
                tokio::time::sleep(delay.min(until.saturating_duration_since(Instant::now()))).await;
                delay = (delay * 2).min(Duration::from_millis(200));
            }
            Err(e) => {
                let e = Error::from_redis(&e, "renewing held locks");
                tracing::warn!(error = %e, "renewal refused");
                report.failed = batch.len();
                metrics.renewals(0, 1);
                return report;
            }
        }
    }
}
