//! Node.js binding of ferrolock (napi-rs 3, napi's tokio runtime).
//!
//! This layer only translates: JS numbers to durations (through
//! `ferrolock::validate`), core errors to JS errors, and core holds to small
//! objects. The hand-written JS layer (`index.js`) turns error codes into
//! `FerrolockError` subclasses, wires `AbortSignal` through [`cancel`], and
//! turns lost-hold notifications into `'lost'` events and aborted signals.
//! No lock logic lives here (DESIGN §1).

use std::collections::HashMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ferrolock::{AcquireOptions, ErrorKind, LockOptions, Released};
use futures_util::FutureExt;
use napi::bindgen_prelude::{BigInt, Buffer, Either, FnArgs};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{Env, Status};
use napi_derive::napi;
use tokio::sync::{oneshot, watch};

/// `(lock id, hold sequence number, message)`: a hold of a lock handle was lost.
/// Weak (unref'd): it never keeps the event loop alive.
type LostArgs = FnArgs<(u32, u32, String)>;
type LostFn = ThreadsafeFunction<LostArgs, (), LostArgs, Status, false, true>;

// ---------------------------------------------------------------------------
// errors

/// Core errors cross as `"[<code>] <message>"`; `index.js` turns the code into
/// the matching `FerrolockError` subclass with `err.code`.
fn js_error(kind: ErrorKind, message: &str) -> napi::Error {
    napi::Error::new(Status::GenericFailure, format!("[{}] {}", kind.code(), message))
}

fn to_js(e: ferrolock::Error) -> napi::Error {
    js_error(e.kind(), e.message())
}

fn invalid(message: String) -> napi::Error {
    js_error(ErrorKind::InvalidArgument, &message)
}

fn cancelled() -> napi::Error {
    js_error(ErrorKind::Cancelled, "the wait for the lock was aborted; nothing is held")
}

/// Runs a future, turning a panic into an `ERR_INTERNAL` rejection.
async fn guarded<T>(fut: impl Future<Output = napi::Result<T>>) -> napi::Result<T> {
    match AssertUnwindSafe(fut).catch_unwind().await {
        Ok(result) => result,
        Err(panic) => Err(js_error(ErrorKind::Internal, &format!("ferrolock bug: {}", panic_message(&panic)))),
    }
}

fn guarded_sync<T>(f: impl FnOnce() -> napi::Result<T>) -> napi::Result<T> {
    match std::panic::catch_unwind(AssertUnwindSafe(f)) {
        Ok(result) => result,
        Err(panic) => Err(js_error(ErrorKind::Internal, &format!("ferrolock bug: {}", panic_message(&panic)))),
    }
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic".to_string()
    }
}

/// A duration in ms from JS (`undefined`/`null` = not given). Fractions round up.
fn millis(value: Option<f64>, what: &str) -> napi::Result<Option<Duration>> {
    match value {
        None => Ok(None),
        Some(v) if !v.is_finite() => Err(invalid(format!("{what} = {v} is not a number of milliseconds"))),
        Some(v) => ferrolock::validate::millis(v.ceil() as i64, what).map(Some).map_err(to_js),
    }
}

// ---------------------------------------------------------------------------
// cancellation of pending acquires (AbortSignal is wired in index.js)

struct CancelSlot {
    _tx: oneshot::Sender<()>,
    rx: Option<oneshot::Receiver<()>>,
}

static CANCELS: Mutex<Option<HashMap<u32, CancelSlot>>> = Mutex::new(None);
static NEXT_CANCEL: AtomicU32 = AtomicU32::new(1);

fn with_cancels<R>(f: impl FnOnce(&mut HashMap<u32, CancelSlot>) -> R) -> R {
    let mut slot = CANCELS.lock().unwrap_or_else(|p| p.into_inner());
    f(slot.get_or_insert_with(HashMap::new))
}

/// A cancel handle for one acquire call. Pass it to `acquire`; `cancel(id)` stops that wait.
#[napi]
pub fn new_cancel() -> u32 {
    let id = NEXT_CANCEL.fetch_add(1, Ordering::Relaxed);
    let (tx, rx) = oneshot::channel();
    with_cancels(|m| m.insert(id, CancelSlot { _tx: tx, rx: Some(rx) }));
    id
}

/// Cancels the acquire that took this handle (or will take it): the acquire
/// future is dropped, which leaves nothing held and no subscription behind.
#[napi]
pub fn cancel(id: u32) {
    // Dropping the sender completes the receiver the acquire waits on.
    with_cancels(|m| m.remove(&id));
}

/// Removes the cancel slot when the acquire ends, whichever way.
struct CancelGuard(Option<u32>);

impl Drop for CancelGuard {
    fn drop(&mut self) {
        if let Some(id) = self.0 {
            with_cancels(|m| m.remove(&id));
        }
    }
}

// ---------------------------------------------------------------------------
// client

struct Shared {
    /// `None` once closed (or once the JS environment that made it went away).
    client: Mutex<Option<ferrolock::Client>>,
    on_lost: Mutex<Option<Arc<LostFn>>>,
    next_lock: AtomicU32,
}

impl Shared {
    fn lost_fn(&self) -> Option<Arc<LostFn>> {
        self.on_lost.lock().unwrap().clone()
    }

    /// Takes the client out (once) and drops the lost callback, which releases the
    /// threadsafe function.
    fn take(&self) -> Option<ferrolock::Client> {
        self.on_lost.lock().unwrap().take();
        self.client.lock().unwrap().take()
    }
}

/// Longest wait for releasing a client's locks when its JS environment ends.
const SHUTDOWN_ON_EXIT: Duration = Duration::from_secs(2);

/// Settings for `connect`: durations in milliseconds, and the drift factor (a
/// fraction of the lease, range-checked by the core builder).
#[napi(object)]
pub struct ConnectOptions {
    pub watchdog_timeout_ms: Option<f64>,
    pub response_timeout_ms: Option<f64>,
    pub connect_timeout_ms: Option<f64>,
    pub retry_window_ms: Option<f64>,
    pub drift_factor: Option<f64>,
}

/// Connects a client (fails fast on an unreachable server or a bad URL).
#[napi]
pub async fn connect(url: String, options: Option<ConnectOptions>) -> napi::Result<NativeClient> {
    guarded(async move {
        let mut builder = ferrolock::Client::builder(url);
        if let Some(o) = options {
            if let Some(d) = millis(o.watchdog_timeout_ms, "watchdogTimeoutMs")? {
                builder = builder.watchdog_timeout(d);
            }
            if let Some(d) = millis(o.response_timeout_ms, "responseTimeoutMs")? {
                builder = builder.response_timeout(d);
            }
            if let Some(d) = millis(o.connect_timeout_ms, "connectTimeoutMs")? {
                builder = builder.connect_timeout(d);
            }
            if let Some(d) = millis(o.retry_window_ms, "retryWindowMs")? {
                builder = builder.retry_window(d);
            }
            if let Some(f) = o.drift_factor {
                builder = builder.drift_factor(f);
            }
        }
        let client = builder.connect().await.map_err(to_js)?;
        Ok(NativeClient {
            shared: Arc::new(Shared {
                client: Mutex::new(Some(client.clone())),
                on_lost: Mutex::new(None),
                next_lock: AtomicU32::new(1),
            }),
            client,
            hooked: AtomicU32::new(0),
        })
    })
    .await
}

#[napi]
pub struct NativeClient {
    client: ferrolock::Client,
    shared: Arc<Shared>,
    hooked: AtomicU32,
}

#[napi]
impl NativeClient {
    #[napi(getter)]
    pub fn id(&self) -> String {
        self.client.id().to_string()
    }

    /// Sets the function told about lost holds, and ties the client to this JS
    /// environment: when the environment ends (a worker exits) the client shuts down.
    #[napi]
    pub fn set_lost_handler(&self, env: Env, callback: LostFn) -> napi::Result<()> {
        guarded_sync(|| {
            *self.shared.on_lost.lock().unwrap() = Some(Arc::new(callback));
            if self.hooked.swap(1, Ordering::AcqRel) == 0 {
                env.add_env_cleanup_hook(self.shared.clone(), |shared| {
                    if let Some(client) = shared.take() {
                        // Releases what this environment still holds, synchronously: this hook
                        // runs before the environment's objects are finalized, and the client
                        // keeps every held holder alive, so `shutdown` releases them all before
                        // the worker or process goes. (Left to the finalizers, the last handle's
                        // drop would only start a shutdown that the exit does not wait for.)
                        // Bounded, so an unreachable Redis cannot hold up a worker's or the
                        // process's exit.
                        let _ = std::panic::catch_unwind(AssertUnwindSafe(|| {
                            napi::bindgen_prelude::block_on(async move {
                                let _ = tokio::time::timeout(SHUTDOWN_ON_EXIT, client.shutdown()).await;
                            })
                        }));
                    }
                })?;
            }
            Ok(())
        })
    }

    /// A lock handle: a new holder. `holderId` / `owner` pick an explicit holder.
    #[napi]
    pub fn lock(
        &self,
        name: Either<String, Buffer>,
        fenced: bool,
        holder_id: Option<i64>,
        owner: Option<String>,
    ) -> napi::Result<NativeLock> {
        guarded_sync(|| {
            let holder_id = match holder_id {
                Some(id) if id < 0 => return Err(invalid(format!("holderId = {id} is negative"))),
                other => other.map(|id| id as u64),
            };
            let options = LockOptions { fenced, holder_id, owner };
            let lock = match &name {
                Either::A(s) => self.client.lock_with(s.as_bytes(), options),
                Either::B(b) => self.client.lock_with(&b[..], options),
            }
            .map_err(to_js)?;
            let id = self.shared.next_lock.fetch_add(1, Ordering::Relaxed);
            let local = Arc::new(Mutex::new(LockLocal::default()));
            let (shared, tracked) = (self.shared.clone(), local.clone());
            // Told by core (from a background thread) when a hold of this handle is lost.
            lock.set_on_lost(Some(Arc::new(move |event: &ferrolock::LostEvent| {
                let seq = {
                    let local = tracked.lock().unwrap();
                    // Only the current hold matters: the JS layer ignores holds already over.
                    match &local.current {
                        Some(current) if current.borrow().is_some() => local.seq,
                        _ => return,
                    }
                };
                if let Some(f) = shared.lost_fn() {
                    f.call((id, seq, event.error.message().to_string()).into(), ThreadsafeFunctionCallMode::NonBlocking);
                }
            })));
            Ok(NativeLock { lock, id, local })
        })
    }

    /// Releases what this client holds, stops its waits (they reject with
    /// `ERR_CANCELLED`) and closes its connections. Idempotent.
    #[napi]
    pub async fn close(&self) -> napi::Result<()> {
        let client = self.shared.take();
        guarded(async move {
            if let Some(client) = client {
                client.shutdown().await.map_err(to_js)?;
            }
            Ok(())
        })
        .await
    }

    #[napi(getter)]
    pub fn closed(&self) -> bool {
        self.shared.client.lock().unwrap().is_none()
    }

    /// Lock channels the client's pub/sub connection is subscribed to now.
    #[napi]
    pub fn subscribed_channels(&self) -> u32 {
        self.client.subscribed_channels() as u32
    }

    /// Locks this client holds now.
    #[napi]
    pub fn held_count(&self) -> u32 {
        self.client.held_count() as u32
    }
}

// ---------------------------------------------------------------------------
// lock

#[derive(Default)]
struct LockLocal {
    seq: u32,
    /// The lost signal of the current hold, to tell a re-entry from a new hold.
    current: Option<watch::Receiver<Option<ferrolock::Error>>>,
}

/// What one successful acquire returns.
#[napi(object)]
pub struct HoldInfo {
    /// Hold count right after this acquisition (1 = a new hold).
    pub count: u32,
    /// Fencing token (fenced locks).
    pub token: Option<BigInt>,
    /// Sequence number of the hold this acquisition belongs to (re-entries share it).
    pub seq: u32,
}

#[napi]
pub struct NativeLock {
    lock: ferrolock::Lock,
    id: u32,
    local: Arc<Mutex<LockLocal>>,
}

impl NativeLock {
    /// Numbers the hold: a re-entry keeps the number of the hold it enters.
    fn track(&self, hold: &ferrolock::Hold) -> u32 {
        let lost = hold.lost_watch();
        let mut local = self.local.lock().unwrap();
        if !local.current.as_ref().is_some_and(|c| c.same_channel(&lost)) {
            local.seq = local.seq.wrapping_add(1);
            local.current = Some(lost);
        }
        local.seq
    }

    fn released(&self) {
        let mut local = self.local.lock().unwrap();
        // A hold that ended lost stays current until its 'lost' event is out.
        if local.current.as_ref().is_some_and(|c| c.borrow().is_none()) {
            local.current = None;
        }
    }
}

#[napi]
impl NativeLock {
    #[napi(getter)]
    pub fn id(&self) -> u32 {
        self.id
    }

    #[napi(getter)]
    pub fn name(&self) -> String {
        self.lock.name().to_string()
    }

    /// The owner field this holder writes: `<client-id>:<holder-id>`.
    #[napi(getter)]
    pub fn owner(&self) -> String {
        self.lock.owner().to_string()
    }

    #[napi(getter)]
    pub fn fenced(&self) -> bool {
        self.lock.is_fenced()
    }

    /// Fencing token of the current hold (local view).
    #[napi(getter)]
    pub fn token(&self) -> Option<BigInt> {
        self.lock.token().map(BigInt::from)
    }

    /// True if this holder's latest hold was lost (until it acquires again).
    #[napi(getter)]
    pub fn lost(&self) -> bool {
        self.lock.is_lost()
    }

    /// Hold count as this holder knows it (no round-trip).
    #[napi(getter)]
    pub fn local_hold_count(&self) -> u32 {
        self.lock.local_hold_count()
    }

    /// Acquires, waiting at most `waitMs` (unbounded when absent); `null` when not
    /// acquired in time. `cancelId` (from `newCancel`) lets the caller abort the wait.
    #[napi]
    pub async fn acquire(
        &self,
        wait_ms: Option<f64>,
        lease_ms: Option<f64>,
        cancel_id: Option<u32>,
    ) -> napi::Result<Option<HoldInfo>> {
        let _guard = CancelGuard(cancel_id);
        guarded(async move {
            let wait = millis(wait_ms, "waitMs")?;
            let lease = millis(lease_ms, "leaseMs")?;
            let cancel_rx = match cancel_id {
                // No slot: cancelled before the wait started.
                Some(id) => Some(with_cancels(|m| m.get_mut(&id).and_then(|s| s.rx.take())).ok_or_else(cancelled)?),
                None => None,
            };
            let acquire = self.lock.acquire_hold(AcquireOptions { wait, lease });
            let aborted = async move {
                match cancel_rx {
                    Some(rx) => {
                        let _ = rx.await;
                    }
                    None => std::future::pending().await,
                }
            };
            // Dropping the acquire future leaves nothing held and no subscription.
            let result = tokio::select! {
                r = acquire => r,
                _ = aborted => return Err(cancelled()),
            };
            Ok(result.map_err(to_js)?.map(|hold| HoldInfo {
                count: hold.hold_count(),
                token: hold.token().map(BigInt::from),
                seq: self.track(&hold),
            }))
        })
        .await
    }

    /// Releases one level; resolves with the levels left (0 = unlocked).
    #[napi]
    pub async fn release(&self) -> napi::Result<u32> {
        guarded(async move {
            match self.lock.release().await {
                Ok(Released::StillHeld(n)) => Ok(n),
                Ok(Released::Unlocked) => {
                    self.released();
                    Ok(0)
                }
                Err(e) => {
                    if self.lock.local_hold_count() == 0 {
                        self.released();
                    }
                    Err(to_js(e))
                }
            }
        })
        .await
    }

    /// Releases every level at once.
    #[napi]
    pub async fn release_all(&self) -> napi::Result<()> {
        guarded(async move {
            let result = self.lock.release_all().await;
            if self.lock.local_hold_count() == 0 {
                self.released();
            }
            result.map(|_| ()).map_err(to_js)
        })
        .await
    }

    #[napi]
    pub async fn is_locked(&self) -> napi::Result<bool> {
        guarded(async move { self.lock.is_locked().await.map_err(to_js) }).await
    }

    #[napi]
    pub async fn is_held(&self) -> napi::Result<bool> {
        guarded(async move { self.lock.is_held().await.map_err(to_js) }).await
    }

    #[napi]
    pub async fn hold_count(&self) -> napi::Result<u32> {
        guarded(async move { self.lock.hold_count().await.map_err(to_js) }).await
    }

    /// Ms left on the lease of whoever holds it; `null` when not locked, `Infinity`
    /// for a lock without expiry.
    #[napi]
    pub async fn remaining_lease_ms(&self) -> napi::Result<Option<f64>> {
        guarded(async move {
            Ok(self.lock.remaining_lease().await.map_err(to_js)?.map(|d| {
                if d == Duration::MAX {
                    f64::INFINITY
                } else {
                    d.as_millis() as f64
                }
            }))
        })
        .await
    }

    #[napi]
    pub async fn force_unlock(&self) -> napi::Result<bool> {
        guarded(async move { self.lock.force_unlock().await.map_err(to_js) }).await
    }
}

/// One worker thread for the addon's runtime: every call already hops JS thread ->
/// runtime -> JS thread, and on small machines a second worker mostly adds wake-ups
/// between the two workers (measured: most of the addon's CPU went to parking).
#[napi_derive::module_init]
fn init() {
    if let Ok(rt) = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build() {
        napi::bindgen_prelude::create_custom_tokio_runtime(rt);
    }
}
