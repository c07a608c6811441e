//! Lock handles (single, or a multi-lock over several) named by id, the calls on
//! them, and the numbering of their holds that lets `lib/lock.js` tell a re-entry
//! from a new hold and a current hold's loss from an old one's.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ferrolock::{AcquireOptions, Quorum, Released};
use napi::bindgen_prelude::{BigInt, Either, PromiseRaw};
use napi::Env;
use napi_derive::napi;

use crate::cancel::{unless_aborted, Abort};
use crate::lost::Shared;
use crate::errors::{caught, invalid, millis, IntoJs, Result};
use crate::executor::promise;

/// Lock ids are unique in the process (not per client): a multi-lock is known to
/// each of its members' clients under one id.
static NEXT_LOCK: AtomicU32 = AtomicU32::new(1);

fn next_lock_id() -> u32 {
    NEXT_LOCK.fetch_add(1, Ordering::Relaxed)
}

/// A hold without a token as one number, `seq * 2^21 + count` (exact in an f64 for
/// every seq < 2^31 and count < 2^21): the common acquire's result without a JS object
/// made natively for it (which cost as much as a tenth of the call). lib/lock.js decodes it.
pub const COUNT_SPAN: f64 = 2_097_152.0;

fn compact(info: HoldInfo) -> Either<f64, HoldInfo> {
    if info.token.is_none() && info.count < 1 << 21 && info.seq < 1 << 31 {
        Either::A(f64::from(info.seq) * COUNT_SPAN + f64::from(info.count))
    } else {
        Either::B(info)
    }
}

/// What one successful acquire returns (as an object: a fenced lock's, or when the
/// count or seq do not fit the compact number).
#[napi(object)]
pub struct HoldInfo {
    /// Hold count right after this acquisition (1 = a new hold).
    pub count: u32,
    /// Fencing token (fenced locks).
    pub token: Option<BigInt>,
    /// Sequence number of the hold this acquisition belongs to (re-entries share it).
    pub seq: u32,
}

/// One owner field of the lock with its note, as `status()`, `inspect()` and
/// `lastHolder()` report it (core's `HolderEntry`; lib/holder.js makes absent fields null).
#[napi(object)]
pub struct HolderStatus {
    /// `<client-id>:<holder-id>` (ferrolock) or `<uuid>:<thread-id>` (Redisson).
    pub owner: String,
    /// How many times that holder has entered the lock.
    pub count: f64,
    /// The note as stored: the client's JSON note, or the text given to `setHolderInfo`.
    pub info: Option<String>,
    pub app: Option<String>,
    pub host: Option<String>,
    pub pid: Option<f64>,
    /// The holder's thread, task or label.
    pub thread: Option<String>,
    pub command: Option<String>,
    /// True when the watchdog renews the hold.
    pub renewed: Option<bool>,
    /// When the hold began, Unix ms by the Redis server's clock.
    pub since: Option<f64>,
    pub held_for_ms: Option<f64>,
    /// Core's description: "billing on host-7 pid 4242 (thread worker-3) for 5 m 12 s".
    pub description: String,
}

impl From<ferrolock::HolderEntry> for HolderStatus {
    fn from(e: ferrolock::HolderEntry) -> HolderStatus {
        let description = e.describe();
        let note = e.note.unwrap_or_default();
        HolderStatus {
            owner: e.owner,
            count: e.count as f64,
            info: e.info,
            app: note.app,
            host: note.host,
            pid: note.pid.map(|p| p as f64),
            thread: note.thread,
            command: note.command,
            renewed: note.renewed,
            since: note.since_ms.map(|ms| ms as f64),
            held_for_ms: e.held_for.map(|d| d.as_millis() as f64),
            description,
        }
    }
}

/// The lock as the server sees it at one moment.
#[napi(object)]
pub struct LockStatus {
    pub name: String,
    /// Every holder with its hold count; empty when the lock is free.
    pub holders: Vec<HolderStatus>,
    /// Ms left on the lease; absent when free, `Infinity` for a lock without expiry.
    pub remaining_lease_ms: Option<f64>,
    /// Connections subscribed to the lock's release channel (one per client with waiters; a client stays subscribed 100 ms after its last waiter left).
    pub subscribers: f64,
    /// The last fencing token handed out for this name, if any.
    pub last_token: Option<BigInt>,
    /// The server's maxmemory-policy when it may evict lock keys (set noeviction); absent when it cannot.
    pub eviction_policy: Option<String>,
}

/// A duration the call cannot do without.
fn required_millis(ms: f64, what: &str) -> Result<Duration> {
    millis(Some(ms), what)?.ok_or_else(|| invalid(format!("{what} needs a number of milliseconds")))
}

fn lease_ms(left: Option<Duration>) -> Option<f64> {
    left.map(|d| if d == Duration::MAX { f64::INFINITY } else { d.as_millis() as f64 })
}

#[derive(Default)]
struct Holds {
    seq: u32,
    /// The current hold, to tell a re-entry from a new hold (and whether it was lost).
    current: Option<ferrolock::Hold>,
}

/// The core handle, its hold numbering and who tells its losses, shared with the
/// calls in flight and (weakly) with the lost callback. One allocation per lock: a
/// process may keep many (issue 30: memory per hold).
pub(crate) struct Handle {
    lock: ferrolock::Lock,
    holds: Mutex<Holds>,
    id: u32,
    /// The clients that can tell this handle's losses: its own (a single lock), or
    /// its members' without repeats (a multi-lock): `first`, then `others`.
    first: Arc<Shared>,
    others: Vec<Arc<Shared>>,
}

impl Handle {
    /// Numbers the hold: a re-entry keeps the number of the hold it enters.
    pub(crate) fn track(&self, hold: &ferrolock::Hold) -> u32 {
        let mut holds = self.holds.lock().unwrap();
        if !holds.current.as_ref().is_some_and(|c| c.same_hold(hold)) {
            holds.seq = holds.seq.wrapping_add(1);
            holds.current = Some(hold.clone());
        }
        holds.seq
    }

    /// After a release: forgets the current hold once this holder holds nothing.
    fn released(&self) {
        if self.lock.local_hold_count() > 0 {
            return;
        }
        let mut holds = self.holds.lock().unwrap();
        // A hold that ended lost stays current until its 'lost' event is out.
        if holds.current.as_ref().is_some_and(|c| !c.is_lost()) {
            holds.current = None;
        }
    }

    fn shared(&self) -> impl Iterator<Item = &Arc<Shared>> {
        std::iter::once(&self.first).chain(&self.others)
    }

    /// Told by core (from a background thread) when a hold of this handle is lost.
    fn lost(&self, event: &ferrolock::LostEvent) {
        let seq = {
            let holds = self.holds.lock().unwrap();
            // Only the current hold matters: the JS layer ignores holds already over.
            match &holds.current {
                Some(current) if current.is_lost() => holds.seq,
                _ => return,
            }
        };
        let _ = self.shared().any(|s| s.tell_lost(self.id, seq, event));
    }
}

thread_local! {
    /// This JS thread's lock handles by lock id. A JS Lock keeps only its id: no wrapped
    /// native object per lock (a napi-rs class instance cost ~450 B of RSS, a plain
    /// `napi_wrap` ~235 B, an id and the FinalizationRegistry entry that drops it ~100 B:
    /// issue 30, memory per lock). lib/lock.js calls `lockDrop` when the Lock is
    /// collected; a worker's entries go with its thread.
    static HANDLES: RefCell<HashMap<u32, Arc<Handle>, BuildHasherDefault<IdHasher>>> = RefCell::default();
}

/// Lock ids are a counter: a multiplication spreads them over the table.
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8 | u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u32(&mut self, id: u32) {
        self.0 = u64::from(id).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// The handle of lock `id` on this thread.
pub(crate) fn handle(id: u32) -> Result<Arc<Handle>> {
    HANDLES.with(|h| h.borrow().get(&id).cloned()).ok_or_else(|| gone(id))
}

/// Runs `f` on the handle of lock `id` (a synchronous call: no reference taken).
fn with<T>(id: u32, f: impl FnOnce(&Handle) -> Result<T>) -> Result<T> {
    caught(|| HANDLES.with(|h| h.borrow().get(&id).map_or_else(|| Err(gone(id)), |handle| f(handle))))
}

fn gone(id: u32) -> crate::errors::Coded {
    invalid(format!("lock handle {id} is not known on this thread (a Lock is used on the thread that made it)"))
}

/// Makes the handle of a new core lock and names it by a new id, whose losses are
/// told as that id to the lost handler of the first client in `shared` (not empty)
/// that is still open.
pub(crate) fn new_handle(lock: ferrolock::Lock, first: Arc<Shared>, others: Vec<Arc<Shared>>) -> u32 {
    let id = next_lock_id();
    let handle = Arc::new(Handle { lock, holds: Mutex::default(), id, first, others });
    // Weak: core keeps the callback with the hold, which must not keep the handle
    // (a cycle); once the handle is gone no JS lock object is left to tell.
    let weak = Arc::downgrade(&handle);
    handle.lock.set_on_lost(Some(Arc::new(move |event: &ferrolock::LostEvent| {
        if let Some(handle) = weak.upgrade() {
            handle.lost(event);
        }
    })));
    HANDLES.with(|h| h.borrow_mut().insert(id, handle));
    id
}

/// Runs `f` on the runtime with the handle of lock `id`; the promise settles with its result.
fn run<'env, T, F>(env: &'env Env, id: u32, f: impl FnOnce(Arc<Handle>) -> F + Send + 'static) -> napi::Result<PromiseRaw<'env, T>>
where
    T: napi::bindgen_prelude::ToNapiValue + Send + 'static,
    F: std::future::Future<Output = Result<T>> + Send + 'static,
{
    let handle = handle(id);
    promise(env, async move { f(handle?).await })
}

/// Forgets lock `id` (its Lock object was collected): its core handle goes once no
/// call in flight uses it.
#[napi]
pub fn lock_drop(id: u32) {
    let dropped = HANDLES.with(|h| h.borrow_mut().remove(&id));
    drop(dropped); // outside the borrow: a core handle's drop may log
}

/// How many lock handles this thread keeps (lib/lock.js drops a collected Lock's).
#[napi]
pub fn live_locks() -> u32 {
    HANDLES.with(|h| h.borrow().len() as u32)
}

#[napi]
pub fn lock_name(id: u32) -> Result<String> {
    with(id, |h| Ok(h.lock.name().to_string()))
}

/// The owner field this holder writes: `<client-id>:<holder-id>`.
#[napi]
pub fn lock_owner(id: u32) -> Result<String> {
    with(id, |h| Ok(h.lock.owner().to_string()))
}

/// Which lock: "reentrant", "fenced", "fair", "read" or "write" (the core's name of its kind).
#[napi(ts_return_type = "'reentrant' | 'fenced' | 'fair' | 'read' | 'write'")]
pub fn lock_kind(id: u32) -> Result<&'static str> {
    with(id, |h| Ok(h.lock.kind().as_str()))
}

/// A multi-lock's quorum, "majority" or "all"; `null` for a single lock.
#[napi]
pub fn lock_quorum(id: u32) -> Result<Option<&'static str>> {
    with(id, |h| {
        Ok(match h.lock.quorum() {
            None => None,
            Some(Quorum::Majority) => Some("majority"),
            Some(Quorum::All) => Some("all"),
            Some(_) => Some("unknown"),
        })
    })
}

#[napi]
pub fn lock_fenced(id: u32) -> Result<bool> {
    with(id, |h| Ok(h.lock.is_fenced()))
}

/// Fencing token of the current hold (local view).
#[napi]
pub fn lock_token(id: u32) -> Result<Option<BigInt>> {
    with(id, |h| Ok(h.lock.token().map(BigInt::from)))
}

/// True if this holder's latest hold was lost (until it acquires again).
#[napi]
pub fn lock_lost(id: u32) -> Result<bool> {
    with(id, |h| Ok(h.lock.is_lost()))
}

/// Hold count as this holder knows it (no round-trip).
#[napi]
pub fn lock_local_hold_count(id: u32) -> Result<u32> {
    with(id, |h| Ok(h.lock.local_hold_count()))
}

/// Releases every level at once.
#[napi]
pub fn lock_release_all<'env>(env: &'env Env, id: u32) -> napi::Result<PromiseRaw<'env, ()>> {
    run(env, id, |h| async move {
        let result = h.lock.release_all().await;
        h.released();
        result.js().map(|_| ())
    })
}

#[napi]
pub fn lock_is_locked<'env>(env: &'env Env, id: u32) -> napi::Result<PromiseRaw<'env, bool>> {
    run(env, id, |h| async move { h.lock.is_locked().await.js() })
}

#[napi]
pub fn lock_is_held<'env>(env: &'env Env, id: u32) -> napi::Result<PromiseRaw<'env, bool>> {
    run(env, id, |h| async move { h.lock.is_held().await.js() })
}

#[napi]
pub fn lock_hold_count<'env>(env: &'env Env, id: u32) -> napi::Result<PromiseRaw<'env, u32>> {
    run(env, id, |h| async move { h.lock.hold_count().await.js() })
}

/// Ms left on the lease of whoever holds it; `null` when not locked, `Infinity`
/// for a lock without expiry.
#[napi]
pub fn lock_remaining_lease_ms<'env>(env: &'env Env, id: u32) -> napi::Result<PromiseRaw<'env, Option<f64>>> {
    run(env, id, |h| async move { Ok(lease_ms(h.lock.remaining_lease().await.js()?)) })
}

/// Holders with their counts, lease left, subscribed clients and last fencing
/// token, read in one round-trip (two when locked).
#[napi]
pub fn lock_status<'env>(env: &'env Env, id: u32) -> napi::Result<PromiseRaw<'env, LockStatus>> {
    run(env, id, |h| async move {
        let s = h.lock.status().await.js()?;
        Ok(LockStatus {
            name: s.name,
            holders: s.holders.into_iter().map(HolderStatus::from).collect(),
            remaining_lease_ms: lease_ms(s.remaining_lease),
            subscribers: s.subscribers as f64,
            last_token: s.last_token.map(BigInt::from),
            eviction_policy: s.eviction_policy,
        })
    })
}

/// Adds `ms` to the explicit lease of this holder's hold; resolves with the ms now left.
#[napi]
pub fn lock_extend<'env>(env: &'env Env, id: u32, ms: f64) -> napi::Result<PromiseRaw<'env, f64>> {
    run(env, id, move |h| async move {
        let by = required_millis(ms, "extend(ms)")?;
        Ok(h.lock.extend(by).await.js()?.as_millis() as f64)
    })
}

/// Sets the explicit lease of this holder's hold to `ms`; resolves with it.
#[napi]
pub fn lock_set_lease<'env>(env: &'env Env, id: u32, ms: f64) -> napi::Result<PromiseRaw<'env, f64>> {
    run(env, id, move |h| async move {
        let lease = required_millis(ms, "extend(ms, { replace: true })")?;
        Ok(h.lock.set_lease(lease).await.js()?.as_millis() as f64)
    })
}

/// Resets the lease to the one the hold was taken with; resolves with it (ms).
#[napi]
pub fn lock_reacquire<'env>(env: &'env Env, id: u32) -> napi::Result<PromiseRaw<'env, f64>> {
    run(env, id, |h| async move { Ok(h.lock.reacquire().await.js()?.as_millis() as f64) })
}

/// Text shown next to this holder in `status()`; `null` removes it.
#[napi]
pub fn lock_set_holder_info<'env>(env: &'env Env, id: u32, info: Option<String>) -> napi::Result<PromiseRaw<'env, ()>> {
    run(env, id, move |h| async move { h.lock.set_holder_info(info.as_deref()).await.js() })
}

/// Names this holder in its notes (the thread or job); `null` removes it. No round-trip.
#[napi]
pub fn lock_set_holder_label(id: u32, label: Option<String>) -> Result<()> {
    with(id, |h| h.lock.set_holder_label(label.as_deref()).js())
}

/// Who held the lock when this holder's latest acquire with a wait timed out.
#[napi]
pub fn lock_last_holder(id: u32) -> Result<Option<HolderStatus>> {
    with(id, |h| Ok(h.lock.last_holder().map(HolderStatus::from)))
}

#[napi]
pub fn lock_force_unlock<'env>(env: &'env Env, id: u32) -> napi::Result<PromiseRaw<'env, bool>> {
    run(env, id, |h| async move { h.lock.force_unlock().await.js() })
}

/// Ends this holder's hold no sooner than `ms` after it was taken (a cron job's
/// minimum hold): now once it lasted that long, else it is left on a fixed lease
/// until then. Resolves with the ms it stays held, or null when released now.
#[napi]
pub fn lock_release_min_hold<'env>(env: &'env Env, id: u32, ms: f64) -> napi::Result<PromiseRaw<'env, Option<f64>>> {
    run(env, id, move |h| async move {
        let min_hold = required_millis(ms, "minHoldMs")?;
        let result = h.lock.release_min_hold(min_hold).await;
        h.released();
        Ok(result.js()?.map(|left| left.as_millis() as f64))
    })
}

/// Acquires, waiting at most `wait_ms` (unbounded when absent); `None` when not
/// acquired in time. `abort` (the call's cancel handle, from `newCancel`) ends the wait.
pub(crate) async fn acquire(h: Arc<Handle>, wait_ms: Option<f64>, lease_ms: Option<f64>, abort: Abort) -> Result<Option<Either<f64, HoldInfo>>> {
    let options = AcquireOptions { wait: millis(wait_ms, "waitMs")?, lease: millis(lease_ms, "leaseMs")? };
    let result = unless_aborted(abort, async { h.lock.acquire_hold(options).await.js() }).await;
    Ok(result?.map(|hold| compact(HoldInfo { count: hold.hold_count(), token: hold.token().map(BigInt::from), seq: h.track(&hold) })))
}

/// Releases one level; the levels left (0 = unlocked).
pub(crate) async fn release(h: Arc<Handle>) -> Result<u32> {
    let result = h.lock.release().await;
    h.released();
    match result.js()? {
        Released::StillHeld(n) => Ok(n),
        Released::Unlocked => Ok(0),
    }
}

/// A multi-lock over `members` (ids of single lock handles, usually one name on
/// several clients, one per Redis server): `quorum` "majority" (Redlock, N/2+1) or
/// "all" (MultiLock). A new holder, named by the id returned; its losses are told to
/// the first open client among its members'. Bad members (none, a multi-lock, one
/// lock twice) throw `ERR_INVALID_ARGUMENT`.
#[napi]
pub fn multi_lock(members: Vec<u32>, quorum: String) -> Result<u32> {
    caught(|| {
        let quorum = match quorum.as_str() {
            "majority" => Quorum::Majority,
            "all" => Quorum::All,
            other => return Err(invalid(format!("quorum = \"{other}\"; give \"majority\" (Redlock) or \"all\" (MultiLock)"))),
        };
        let members = members.into_iter().map(handle).collect::<Result<Vec<_>>>()?;
        let mut shared: Vec<Arc<Shared>> = Vec::new();
        for member in &members {
            for s in member.shared() {
                if !shared.iter().any(|known| Arc::ptr_eq(known, s)) {
                    shared.push(s.clone());
                }
            }
        }
        let lock = ferrolock::Lock::multi(members.iter().map(|m| m.lock.clone()).collect(), quorum).js()?;
        let (first, others) = (shared.remove(0), shared);
        Ok(new_handle(lock, first, others))
    })
}
