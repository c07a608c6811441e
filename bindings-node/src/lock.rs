//! A lock handle (single, or a multi-lock over several), and the numbering of its
//! holds that lets `lib/lock.js` tell a re-entry from a new hold and a current
//! hold's loss from an old one's.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ferrolock::{AcquireOptions, Quorum, Released};
use napi::bindgen_prelude::{BigInt, ClassInstance, Either, PromiseRaw};
use napi::Env;
use napi_derive::napi;

use crate::cancel::{unless_aborted, Abort};
use crate::client::Shared;
use crate::errors::{caught, invalid, millis, promise, IntoJs, Result};

/// Lock ids are unique in the process (not per client): a multi-lock is known to
/// each of its members' clients under one id.
static NEXT_LOCK: AtomicU32 = AtomicU32::new(1);

pub(crate) fn next_lock_id() -> u32 {
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
    /// Connections subscribed to the lock's release channel (one per client with waiters).
    pub subscribers: f64,
    /// The last fencing token handed out for this name, if any.
    pub last_token: Option<BigInt>,
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
    fn track(&self, hold: &ferrolock::Hold) -> u32 {
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

// `tag` first (`repr(C)`): lib/lock.js passes the object itself to the hot calls,
// which find the handle through the object's wrap (fast.rs) and tell ours from any
// other wrapped object by it: no External per lock (about 340 B of RSS each).
// (Not a doc comment: it would land in native.d.ts.)
#[napi]
#[repr(C)]
pub struct NativeLock {
    tag: u64,
    handle: Arc<Handle>,
}

const TAG: u64 = u64::from_be_bytes(*b"ferroLck");

/// The handle of the `NativeLock` that `data` (a wrapped object's native pointer)
/// points to, if it is one.
///
/// # Safety
/// `data` is null or points to at least 8 readable bytes (what any addon wraps).
pub(crate) unsafe fn wrapped_handle(data: *mut std::ffi::c_void) -> Option<Arc<Handle>> {
    let lock = data.cast::<NativeLock>();
    if lock.is_null() || !lock.is_aligned() || unsafe { (*lock).tag } != TAG {
        return None;
    }
    Some(unsafe { (*lock).handle.clone() })
}

impl NativeLock {
    /// Wraps a new core handle whose losses are told as lock `id` to the lost
    /// handler of the first client in `shared` (not empty) that is still open.
    pub(crate) fn new(lock: ferrolock::Lock, id: u32, first: Arc<Shared>, others: Vec<Arc<Shared>>) -> NativeLock {
        let handle = Arc::new(Handle { lock, holds: Mutex::default(), id, first, others });
        // Weak: core keeps the callback with the hold, which must not keep the handle
        // (a cycle); once the handle is gone no JS lock object is left to tell.
        let weak = Arc::downgrade(&handle);
        handle.lock.set_on_lost(Some(Arc::new(move |event: &ferrolock::LostEvent| {
            if let Some(handle) = weak.upgrade() {
                handle.lost(event);
            }
        })));
        NativeLock { tag: TAG, handle }
    }

    /// Runs `f` on the runtime with the handle; the promise settles with its result.
    fn run<'env, T, F>(&self, env: &'env Env, f: impl FnOnce(Arc<Handle>) -> F) -> napi::Result<PromiseRaw<'env, T>>
    where
        T: napi::bindgen_prelude::ToNapiValue + Send + 'static,
        F: std::future::Future<Output = Result<T>> + Send + 'static,
    {
        promise(env, f(self.handle.clone()))
    }
}

#[napi]
impl NativeLock {
    #[napi(getter)]
    pub fn id(&self) -> u32 {
        self.handle.id
    }

    #[napi(getter)]
    pub fn name(&self) -> String {
        self.handle.lock.name().to_string()
    }

    /// The owner field this holder writes: `<client-id>:<holder-id>`.
    #[napi(getter)]
    pub fn owner(&self) -> String {
        self.handle.lock.owner().to_string()
    }

    /// Which lock: "reentrant", "fenced", "fair", "read" or "write" (the core's name of its kind).
    #[napi(getter)]
    pub fn kind(&self) -> &'static str {
        self.handle.lock.kind().as_str()
    }

    /// A multi-lock's quorum, "majority" or "all"; `null` for a single lock.
    #[napi(getter)]
    pub fn quorum(&self) -> Option<&'static str> {
        match self.handle.lock.quorum()? {
            Quorum::Majority => Some("majority"),
            Quorum::All => Some("all"),
            _ => Some("unknown"),
        }
    }

    #[napi(getter)]
    pub fn fenced(&self) -> bool {
        self.handle.lock.is_fenced()
    }

    /// Fencing token of the current hold (local view).
    #[napi(getter)]
    pub fn token(&self) -> Option<BigInt> {
        self.handle.lock.token().map(BigInt::from)
    }

    /// True if this holder's latest hold was lost (until it acquires again).
    #[napi(getter)]
    pub fn lost(&self) -> bool {
        self.handle.lock.is_lost()
    }

    /// Hold count as this holder knows it (no round-trip).
    #[napi(getter)]
    pub fn local_hold_count(&self) -> u32 {
        self.handle.lock.local_hold_count()
    }

    /// The handle lib/lock.js passes to the hot calls, `lockAcquire` and
    /// `lockRelease` (fast.rs): made once per lock.
    #[napi(ts_return_type = "unknown")]
    pub fn handle<'env>(&self, env: &'env Env) -> napi::Result<napi::bindgen_prelude::Unknown<'env>> {
        crate::fast::lock_handle(env, self.handle.clone())
    }

    /// Releases every level at once.
    #[napi]
    pub fn release_all<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, ()>> {
        self.run(env, |h| async move {
            let result = h.lock.release_all().await;
            h.released();
            result.js().map(|_| ())
        })
    }

    #[napi]
    pub fn is_locked<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, bool>> {
        self.run(env, |h| async move { h.lock.is_locked().await.js() })
    }

    #[napi]
    pub fn is_held<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, bool>> {
        self.run(env, |h| async move { h.lock.is_held().await.js() })
    }

    #[napi]
    pub fn hold_count<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, u32>> {
        self.run(env, |h| async move { h.lock.hold_count().await.js() })
    }

    /// Ms left on the lease of whoever holds it; `null` when not locked, `Infinity`
    /// for a lock without expiry.
    #[napi]
    pub fn remaining_lease_ms<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, Option<f64>>> {
        self.run(env, |h| async move {
            Ok(lease_ms(h.lock.remaining_lease().await.js()?))
        })
    }

    /// Holders with their counts, lease left, subscribed clients and last fencing
    /// token, read in one round-trip (two when locked).
    #[napi]
    pub fn status<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, LockStatus>> {
        self.run(env, |h| async move {
            let s = h.lock.status().await.js()?;
            Ok(LockStatus {
                name: s.name,
                holders: s.holders.into_iter().map(HolderStatus::from).collect(),
                remaining_lease_ms: lease_ms(s.remaining_lease),
                subscribers: s.subscribers as f64,
                last_token: s.last_token.map(BigInt::from),
            })
        })
    }

    /// Adds `ms` to the explicit lease of this holder's hold; resolves with the ms now left.
    #[napi]
    pub fn extend<'env>(&self, env: &'env Env, ms: f64) -> napi::Result<PromiseRaw<'env, f64>> {
        self.run(env, |h| async move {
            let by = required_millis(ms, "extend(ms)")?;
            Ok(h.lock.extend(by).await.js()?.as_millis() as f64)
        })
    }

    /// Sets the explicit lease of this holder's hold to `ms`; resolves with it.
    #[napi]
    pub fn set_lease<'env>(&self, env: &'env Env, ms: f64) -> napi::Result<PromiseRaw<'env, f64>> {
        self.run(env, |h| async move {
            let lease = required_millis(ms, "extend(ms, { replace: true })")?;
            Ok(h.lock.set_lease(lease).await.js()?.as_millis() as f64)
        })
    }

    /// Resets the lease to the one the hold was taken with; resolves with it (ms).
    #[napi]
    pub fn reacquire<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, f64>> {
        self.run(env, |h| async move { Ok(h.lock.reacquire().await.js()?.as_millis() as f64) })
    }

    /// Text shown next to this holder in `status()`; `null` removes it.
    #[napi]
    pub fn set_holder_info<'env>(&self, env: &'env Env, info: Option<String>) -> napi::Result<PromiseRaw<'env, ()>> {
        self.run(env, |h| async move { h.lock.set_holder_info(info.as_deref()).await.js() })
    }

    /// Names this holder in its notes (the thread or job); `null` removes it. No round-trip.
    #[napi]
    pub fn set_holder_label(&self, label: Option<String>) -> Result<()> {
        caught(|| self.handle.lock.set_holder_label(label.as_deref()).js())
    }

    /// Who held the lock when this holder's latest acquire with a wait timed out.
    #[napi]
    pub fn last_holder(&self) -> Result<Option<HolderStatus>> {
        caught(|| Ok(self.handle.lock.last_holder().map(HolderStatus::from)))
    }

    #[napi]
    pub fn force_unlock<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, bool>> {
        self.run(env, |h| async move { h.lock.force_unlock().await.js() })
    }
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

/// A multi-lock over `members` (single lock handles, usually one name on several
/// clients, one per Redis server): `quorum` "majority" (Redlock, N/2+1) or "all"
/// (MultiLock). A new holder; its losses are told to the first open client among
/// its members'. Bad members (none, a multi-lock, one lock twice) throw `ERR_INVALID_ARGUMENT`.
#[napi]
pub fn multi_lock<'env>(
    #[napi(ts_arg_type = "Array<NativeLock>")] members: Vec<ClassInstance<'env, NativeLock>>,
    quorum: String,
) -> Result<NativeLock> {
    caught(|| {
        let quorum = match quorum.as_str() {
            "majority" => Quorum::Majority,
            "all" => Quorum::All,
            other => return Err(invalid(format!("quorum = \"{other}\"; give \"majority\" (Redlock) or \"all\" (MultiLock)"))),
        };
        let mut shared: Vec<Arc<Shared>> = Vec::new();
        for member in &members {
            for s in member.handle.shared() {
                if !shared.iter().any(|known| Arc::ptr_eq(known, s)) {
                    shared.push(s.clone());
                }
            }
        }
        let lock = ferrolock::Lock::multi(members.iter().map(|m| m.handle.lock.clone()).collect(), quorum).js()?;
        let (first, others) = (shared.remove(0), shared);
        Ok(NativeLock::new(lock, next_lock_id(), first, others))
    })
}
