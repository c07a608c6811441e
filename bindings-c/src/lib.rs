//! C ABI of ferrolock: `libferrolock.so` / `libferrolock.a` and `include/ferrolock.h`
//! (generated from this file and cbindgen.toml by build.rs with the `generate-header`
//! feature: `make -C bindings-c header`).
//!
//! This crate only translates (DESIGN §1): C strings and durations into core types,
//! core errors into `ferrolock_status` plus a thread-local message, the core's async
//! calls into blocking calls on `ferrolock::runtime::shared()`, and C's holder
//! identity — (lock handle, OS thread), like a recursive pthread mutex — into one
//! core `Lock` per (handle, thread), each with its own holder id.
//!
//! Every exported function catches panics: a Rust panic never unwinds into C, it
//! becomes `FERROLOCK_ERR_INTERNAL`.

#![allow(non_camel_case_types)]
// The exported functions check their pointers themselves (NULL is an error, not UB);
// the remaining contract (valid, live handles) is documented on each one.
#![allow(clippy::missing_safety_doc)]

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::ffi::{c_char, c_void, CStr, CString};
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::thread::ThreadId;
use std::time::Duration;

use ferrolock::{validate, AcquireOptions, Client, Error, ErrorKind, Lock, LockOptions, LostCallback};

/// Result of every ferrolock call that can fail. `FERROLOCK_OK` is 0; every other
/// value comes with a message from `ferrolock_last_error()` on the same thread.
/// The numeric values are part of the ABI: new statuses are only ever appended.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ferrolock_status {
    /// Success.
    FERROLOCK_OK = 0,
    /// A try-once or bounded acquire ran out of time: someone else holds the lock.
    FERROLOCK_NOT_ACQUIRED,
    /// Release (or a per-holder query) by a thread that does not hold the lock through this handle.
    FERROLOCK_ERR_NOT_OWNER,
    /// This thread's hold was lost (lease expired, force-unlocked, or the server lost it);
    /// the critical section was not protected since then.
    FERROLOCK_ERR_LOCK_LOST,
    /// Redis unreachable, connection refused or broken, timeout, or failed authentication.
    FERROLOCK_ERR_CONNECTION,
    /// The key at the lock name holds something that is not a lock.
    FERROLOCK_ERR_WRONG_TYPE,
    /// Bad input: NULL pointer, invalid UTF-8 or out-of-range name, bad URL,
    /// out-of-range duration, or a client that was freed or belongs to the parent
    /// process of a fork().
    FERROLOCK_ERR_INVALID_ARGUMENT,
    /// A bug in ferrolock or a reply it does not understand (a caught panic lands here).
    FERROLOCK_ERR_INTERNAL,
    /// A Redis ACL refused a command, key or channel (NOPERM); the message names what
    /// was refused and the ACL rule that would allow it (e.g. "+hincrby").
    FERROLOCK_ERR_PERMISSION,
}

use ferrolock_status::*;

impl ferrolock_status {
    /// Every status, in numeric order. New statuses are appended to the enum and here
    /// (the assertion below checks the order; `name` does not compile without them).
    const ALL: [ferrolock_status; 9] = [
        FERROLOCK_OK,
        FERROLOCK_NOT_ACQUIRED,
        FERROLOCK_ERR_NOT_OWNER,
        FERROLOCK_ERR_LOCK_LOST,
        FERROLOCK_ERR_CONNECTION,
        FERROLOCK_ERR_WRONG_TYPE,
        FERROLOCK_ERR_INVALID_ARGUMENT,
        FERROLOCK_ERR_INTERNAL,
        FERROLOCK_ERR_PERMISSION,
    ];

    /// The status with this numeric value, if there is one.
    fn from_int(value: i32) -> Option<ferrolock_status> {
        usize::try_from(value).ok().and_then(|i| Self::ALL.get(i)).copied()
    }

    /// The C name of the status.
    const fn name(self) -> &'static CStr {
        match self {
            FERROLOCK_OK => c"FERROLOCK_OK",
            FERROLOCK_NOT_ACQUIRED => c"FERROLOCK_NOT_ACQUIRED",
            FERROLOCK_ERR_NOT_OWNER => c"FERROLOCK_ERR_NOT_OWNER",
            FERROLOCK_ERR_LOCK_LOST => c"FERROLOCK_ERR_LOCK_LOST",
            FERROLOCK_ERR_CONNECTION => c"FERROLOCK_ERR_CONNECTION",
            FERROLOCK_ERR_WRONG_TYPE => c"FERROLOCK_ERR_WRONG_TYPE",
            FERROLOCK_ERR_INVALID_ARGUMENT => c"FERROLOCK_ERR_INVALID_ARGUMENT",
            FERROLOCK_ERR_INTERNAL => c"FERROLOCK_ERR_INTERNAL",
            FERROLOCK_ERR_PERMISSION => c"FERROLOCK_ERR_PERMISSION",
        }
    }
}

// `ALL[i]` is the status numbered i, so `from_int` is a plain index.
const _: () = {
    let mut i = 0;
    while i < ferrolock_status::ALL.len() {
        assert!(ferrolock_status::ALL[i] as usize == i, "ferrolock_status::ALL is out of order");
        i += 1;
    }
};

/// A status as passed in from C: any int, since C may hand over a value outside the
/// enum (which would be undefined behaviour as a Rust enum). Shown as
/// `ferrolock_status` in the header (see cbindgen.toml).
pub type FerrolockStatusArg = i32;

/// Called when a hold taken through a lock handle is lost. `name` is the lock name
/// (valid during the call only), `user` the pointer given to `ferrolock_lock_on_lost()`.
pub type ferrolock_lost_cb = Option<unsafe extern "C" fn(name: *const c_char, user: *mut c_void)>;

/// A connection to one Redis server, shared by all its lock handles.
/// Thread-safe: create one per process and share it between threads.
pub struct ferrolock_client {
    client: Client,
    id: CString,
}

/// A handle on one lock name. The holder is (this handle, the calling OS thread):
/// like a recursive pthread mutex, each thread holds, re-enters and releases on its own.
pub struct ferrolock_lock {
    client: Client,
    name: String,
    name_c: CString,
    fenced: bool,
    /// A holder that never acquires: answers the holder-independent queries.
    base: Lock,
    /// This handle's holder for each thread that holds (or lost) the lock through it.
    threads: Mutex<HashMap<ThreadId, Lock>>,
    on_lost: Arc<LostSlot>,
}

/// The C callback of one handle. `gate` is held for reading while the callback runs,
/// so replacing or freeing waits for a running callback to return.
struct LostSlot {
    callback: Mutex<Option<(unsafe extern "C" fn(*const c_char, *mut c_void), usize)>>,
    gate: RwLock<()>,
}

// Handles are shared between C threads: make sure the types allow it.
const _: () = {
    const fn shared_between_threads<T: Send + Sync>() {}
    shared_between_threads::<ferrolock_client>();
    shared_between_threads::<ferrolock_lock>();
};

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
    /// The slot whose callback this thread is running (0: none).
    static IN_CALLBACK: Cell<usize> = const { Cell::new(0) };
}

fn lock_ignoring_poison<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn set_last_error(message: &str) {
    let message = CString::new(message.replace('\0', "\\0")).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = message);
}

fn status_of(kind: ErrorKind) -> ferrolock_status {
    match kind {
        ErrorKind::NotAcquired => FERROLOCK_NOT_ACQUIRED,
        ErrorKind::NotOwner => FERROLOCK_ERR_NOT_OWNER,
        ErrorKind::LockLost => FERROLOCK_ERR_LOCK_LOST,
        ErrorKind::Connection => FERROLOCK_ERR_CONNECTION,
        ErrorKind::WrongType => FERROLOCK_ERR_WRONG_TYPE,
        ErrorKind::InvalidArgument => FERROLOCK_ERR_INVALID_ARGUMENT,
        ErrorKind::PermissionDenied => FERROLOCK_ERR_PERMISSION,
        // C has no cancellation: the only cancel is a client freed under a waiting call.
        ErrorKind::Cancelled => FERROLOCK_ERR_INVALID_ARGUMENT,
        _ => FERROLOCK_ERR_INTERNAL,
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_string());
    format!("internal error in ferrolock (a bug, please report it): {what}")
}

/// Runs the body of an exported function: catches panics, sets this thread's last
/// error (cleared on success) and turns the outcome into a status.
fn run(body: impl FnOnce() -> Result<(), Error>) -> ferrolock_status {
    let (status, message) = match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => (FERROLOCK_OK, String::new()),
        Ok(Err(e)) => (status_of(e.kind()), e.message().to_string()),
        Err(payload) => (FERROLOCK_ERR_INTERNAL, panic_message(&*payload)),
    };
    set_last_error(&message);
    status
}

/// Like [`run`] for functions that return no status.
fn run_void(body: impl FnOnce() -> Result<(), Error>) {
    let _ = run(body);
}

fn invalid(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidArgument, message)
}

fn internal(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::Internal, message)
}

unsafe fn arg<'a, T>(ptr: *const T, what: &str) -> Result<&'a T, Error> {
    ptr.as_ref().ok_or_else(|| invalid(format!("{what} is NULL")))
}

unsafe fn out<'a, T>(ptr: *mut T, what: &str) -> Result<&'a mut T, Error> {
    ptr.as_mut().ok_or_else(|| invalid(format!("{what} is NULL; pass a pointer to store the result")))
}

unsafe fn c_str<'a>(ptr: *const c_char, what: &str) -> Result<&'a str, Error> {
    if ptr.is_null() {
        return Err(invalid(format!("{what} is NULL")));
    }
    CStr::from_ptr(ptr)
        .to_str()
        .map_err(|_| invalid(format!("{what} is not valid UTF-8")))
}

/// Blocks the calling thread on `future` in the process-wide runtime. Refuses a
/// client created before fork() (its threads and sockets stayed in the parent).
fn block_on<F>(client: Option<&Client>, future: F) -> Result<F::Output, Error>
where
    F: Future + Send,
    F::Output: Send,
{
    if let Some(client) = client {
        client.check_process()?;
    }
    let rt = ferrolock::runtime::shared()
        .map_err(|e| internal(format!("cannot start the ferrolock runtime threads: {e}")))?;
    if tokio::runtime::Handle::try_current().is_ok() {
        // Called from a library thread (an on_lost callback): a runtime cannot be
        // blocked on from inside itself, so wait on a helper thread instead.
        std::thread::scope(|s| s.spawn(|| rt.block_on(future)).join())
            .map_err(|p| internal(panic_message(&*p)))
    } else {
        Ok(rt.block_on(future))
    }
}

/// A duration argument in ms where -1 means "none" (wait forever / watchdog lease).
fn optional_millis(value: i64, what: &str, minus_one: &str, min: i64) -> Result<Option<Duration>, Error> {
    if value == -1 {
        return Ok(None);
    }
    if value < min {
        return Err(invalid(format!(
            "{what} = {value} is out of range; give -1 ({minus_one}) or {min} ms to 7 days"
        )));
    }
    validate::millis(value, what).map(Some)
}

impl ferrolock_lock {
    /// This thread's holder on this handle; created on first use when `create`.
    fn thread_lock(&self, create: bool) -> Result<Option<Lock>, Error> {
        let id = std::thread::current().id();
        let mut threads = lock_ignoring_poison(&self.threads);
        if let Some(lock) = threads.get(&id) {
            return Ok(Some(lock.clone()));
        }
        if !create {
            return Ok(None);
        }
        let options = LockOptions {
            fenced: self.fenced,
            holder_id: Some(self.client.new_holder_id()),
            owner: None,
        };
        let lock = self.client.lock_with(self.name.as_bytes(), options)?;
        lock.set_on_lost(Some(self.lost_forwarder()));
        threads.insert(id, lock.clone());
        Ok(Some(lock))
    }

    /// Forgets this thread's holder once it neither holds nor has a loss to report.
    fn prune(&self, lock: &Lock) {
        if lock.local_hold_count() == 0 && !lock.is_lost() {
            let mut threads = lock_ignoring_poison(&self.threads);
            let id = std::thread::current().id();
            if threads.get(&id).is_some_and(|l| l.owner() == lock.owner()) {
                threads.remove(&id);
            }
        }
    }

    /// The core callback of every per-thread holder: forwards to this handle's C callback.
    fn lost_forwarder(&self) -> LostCallback {
        let slot = self.on_lost.clone();
        let name = self.name_c.clone();
        Arc::new(move |_event| {
            let _running = slot.gate.read().unwrap_or_else(|p| p.into_inner());
            let callback = *lock_ignoring_poison(&slot.callback);
            if let Some((cb, user)) = callback {
                let previous = IN_CALLBACK.with(|c| c.replace(Arc::as_ptr(&slot) as usize));
                // SAFETY: the caller of ferrolock_lock_on_lost() promised a valid function.
                unsafe { cb(name.as_ptr(), user as *mut c_void) };
                IN_CALLBACK.with(|c| c.set(previous));
            }
        })
    }

    /// Sets the C callback; unless called from that callback, waits for a running call to end.
    fn set_callback(&self, callback: Option<(unsafe extern "C" fn(*const c_char, *mut c_void), usize)>) {
        *lock_ignoring_poison(&self.on_lost.callback) = callback;
        let own = IN_CALLBACK.with(|c| c.get()) == Arc::as_ptr(&self.on_lost) as usize;
        if !own {
            drop(self.on_lost.gate.write().unwrap_or_else(|p| p.into_inner()));
        }
    }

    fn not_fenced(&self) -> Error {
        invalid(format!(
            "lock \"{}\" is not a fenced lock; create it with ferrolock_fenced_lock_new() to get tokens",
            self.name
        ))
    }
}

// ---------------------------------------------------------------------------
// Client
// ---------------------------------------------------------------------------

/// Connects to Redis and checks that it answers.
///
/// @param url `redis://[user:password@]host[:port][/db]`, or `rediss://` for TLS.
///        Passwords never appear in error messages.
/// @param watchdog_timeout_ms lease of locks acquired without an explicit lease
///        (renewed every third of it while held); `<= 0` means the default 30000.
///        Otherwise 30 ms to 7 days.
/// @param out receives the new client, or NULL on failure. Free it with
///        `ferrolock_client_free()`.
/// @return `FERROLOCK_OK`;
///         `FERROLOCK_ERR_INVALID_ARGUMENT` (NULL `url`/`out`, malformed URL,
///         `watchdog_timeout_ms` out of range);
///         `FERROLOCK_ERR_CONNECTION` (unreachable, refused, timeout, wrong password);
///         `FERROLOCK_ERR_PERMISSION` (the ACL user may not run PING);
///         `FERROLOCK_ERR_INTERNAL`.
///
/// Thread-safe. Blocks for at most about 4 s (connect + response timeout).
#[no_mangle]
pub unsafe extern "C" fn ferrolock_client_connect(
    url: *const c_char,
    watchdog_timeout_ms: i64,
    out: *mut *mut ferrolock_client,
) -> ferrolock_status {
    run(|| {
        let out = out_ptr(out)?;
        let url = c_str(url, "url")?;
        let mut builder = Client::builder(url);
        if watchdog_timeout_ms > 0 {
            builder = builder.watchdog_timeout(Duration::from_millis(watchdog_timeout_ms as u64));
        }
        let client = block_on(None, builder.connect())??;
        let id = CString::new(client.id()).map_err(|_| internal("client id contains a NUL byte"))?;
        *out = Box::into_raw(Box::new(ferrolock_client { client, id }));
        Ok(())
    })
}

/// `*out = NULL` first, so a failed constructor never leaves garbage behind.
unsafe fn out_ptr<'a, T>(out: *mut *mut T) -> Result<&'a mut *mut T, Error> {
    let out = self::out(out, "out")?;
    *out = std::ptr::null_mut();
    Ok(out)
}

/// Releases every lock this client still holds, through any handle and thread
/// (best effort: when Redis does not answer it gives up after about 4 s, and those
/// locks expire at the end of their lease), stops its background work and frees
/// it. NULL is fine.
///
/// Lock handles made from this client stay valid memory and must still be freed
/// with `ferrolock_lock_free()` (before or after this call); other calls on them
/// return `FERROLOCK_ERR_INVALID_ARGUMENT` afterwards, and waiting acquires on
/// other threads return it at once. After fork(), a child may free a client
/// inherited from its parent: nothing is sent to Redis then, the parent's locks
/// stay with the parent.
///
/// Must not be called from an on_lost callback of one of its locks.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_client_free(client: *mut ferrolock_client) {
    run_void(|| {
        if client.is_null() {
            return Ok(());
        }
        let client = Box::from_raw(client);
        if client.client.check_process().is_err() {
            // Forked child: the parent's runtime threads do not exist here.
            std::mem::forget(client);
            return Ok(());
        }
        let _ = block_on(Some(&client.client), client.client.shutdown());
        Ok(())
    })
}

/// This client's id: a random UUID, the first part of every owner field it writes
/// (`<client-id>:<holder-id>`). Valid until the client is freed. Returns "" (and
/// sets the last error) for a NULL client.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_client_id(client: *const ferrolock_client) -> *const c_char {
    let mut id: *const c_char = c"".as_ptr();
    run_void(|| {
        id = arg(client, "client")?.id.as_ptr();
        Ok(())
    });
    id
}

// ---------------------------------------------------------------------------
// Lock handles
// ---------------------------------------------------------------------------

unsafe fn new_lock(
    client: *mut ferrolock_client,
    name: *const c_char,
    out: *mut *mut ferrolock_lock,
    fenced: bool,
) -> ferrolock_status {
    run(|| {
        let out = out_ptr(out)?;
        let client = &arg(client, "client")?.client;
        let name = c_str(name, "lock name")?;
        let base = client.lock_with(name.as_bytes(), LockOptions { fenced, ..LockOptions::default() })?;
        let lock = ferrolock_lock {
            client: client.clone(),
            name: name.to_string(),
            name_c: CString::new(name).map_err(|_| invalid("lock name contains a NUL byte"))?,
            fenced,
            base,
            threads: Mutex::new(HashMap::new()),
            on_lost: Arc::new(LostSlot { callback: Mutex::new(None), gate: RwLock::new(()) }),
        };
        *out = Box::into_raw(Box::new(lock));
        Ok(())
    })
}

/// Creates a handle on the reentrant lock `name` (Redisson `RLock`). Sends nothing
/// to Redis.
///
/// @param client a live client.
/// @param name NUL-terminated UTF-8, 1 to 4096 bytes. Copied.
/// @param out receives the handle, or NULL on failure. Free it with `ferrolock_lock_free()`.
/// @return `FERROLOCK_OK`; `FERROLOCK_ERR_INVALID_ARGUMENT` (NULL argument, empty,
///         too long or non-UTF-8 name); `FERROLOCK_ERR_INTERNAL`.
///
/// A handle may be shared by any number of threads: each thread is its own holder.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_lock_new(
    client: *mut ferrolock_client,
    name: *const c_char,
    out: *mut *mut ferrolock_lock,
) -> ferrolock_status {
    new_lock(client, name, out, false)
}

/// Like `ferrolock_lock_new()` for a fenced lock (Redisson `RFencedLock`): every
/// acquisition gets a fencing token greater than any before it on this name; read
/// it with `ferrolock_lock_token()` and pass it to the resource you protect.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_fenced_lock_new(
    client: *mut ferrolock_client,
    name: *const c_char,
    out: *mut *mut ferrolock_lock,
) -> ferrolock_status {
    new_lock(client, name, out, true)
}

/// Frees a lock handle. NULL is fine. Every hold still taken through it, by any
/// thread (also threads that have exited), is released first. Best effort: when
/// Redis does not answer it gives up after about 5 s, and such a hold stays (renewed)
/// until `ferrolock_client_free()`, or until its explicit lease runs out. After it
/// returns, its on_lost callback is not running and will not be called again.
///
/// No other thread may use the handle during or after this call. Must not be called
/// from the handle's own on_lost callback.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_lock_free(lock: *mut ferrolock_lock) {
    run_void(|| {
        if lock.is_null() {
            return Ok(());
        }
        let lock = Box::from_raw(lock);
        if lock.client.check_process().is_err() {
            // Forked child: the parent's runtime threads do not exist here.
            std::mem::forget(lock);
            return Ok(());
        }
        lock.set_callback(None);
        let threads: Vec<Lock> = lock_ignoring_poison(&lock.threads).drain().map(|(_, l)| l).collect();
        let held: Vec<Lock> = threads.iter().filter(|l| l.local_hold_count() > 0).cloned().collect();
        if !held.is_empty() {
            let _ = block_on(Some(&lock.client), async move {
                for l in held {
                    let _ = l.release_all().await;
                }
            });
        }
        Ok(())
    })
}

unsafe fn lock_arg<'a>(lock: *mut ferrolock_lock) -> Result<&'a ferrolock_lock, Error> {
    arg(lock, "lock")
}

/// Acquires the lock for the calling thread. Re-entrant: a thread that already
/// holds it through this handle gets it again and must release it as often.
///
/// @param wait_ms -1: wait as long as it takes; 0: try once; otherwise the longest
///        wait in ms (up to 7 days). Waiting wakes on the release message and on the
///        holder's lease expiry, it does not poll.
/// @param lease_ms -1: watchdog lease (the client's watchdog timeout, renewed while
///        held); otherwise 1 ms to 7 days, after which the lock expires by itself
///        (no renewal) and the hold counts as lost.
/// @return `FERROLOCK_OK` (acquired); `FERROLOCK_NOT_ACQUIRED` (someone else still
///         holds it after `wait_ms`); `FERROLOCK_ERR_INVALID_ARGUMENT` (NULL lock,
///         duration out of range, freed or pre-fork client);
///         `FERROLOCK_ERR_CONNECTION`; `FERROLOCK_ERR_PERMISSION` (a Redis ACL refused a
///         command, key or channel the lock needs; the message names the rule to add;
///         nothing is held); `FERROLOCK_ERR_WRONG_TYPE` (the key is not a lock);
///         `FERROLOCK_ERR_INTERNAL`.
///
/// Blocks the calling thread. Thread-safe.
///
/// A hold belongs to (handle, thread), not to the call, and lasts (unless it is
/// lost) until it is released, until `ferrolock_lock_free()` of its handle or
/// `ferrolock_client_free()` of its client releases it, or until an explicit lease
/// runs out: a thread that exits while holding keeps the hold (renewed, with the
/// watchdog lease), like a recursive pthread mutex left locked by an exited thread.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_lock_acquire(lock: *mut ferrolock_lock, wait_ms: i64, lease_ms: i64) -> ferrolock_status {
    run(|| {
        let lock = lock_arg(lock)?;
        let wait = optional_millis(wait_ms, "wait_ms", "wait forever", 0)?;
        let lease = optional_millis(lease_ms, "lease_ms", "watchdog lease", 1)?;
        let holder = lock.thread_lock(true)?.expect("created on demand");
        let result = block_on(Some(&lock.client), holder.acquire_hold(AcquireOptions { wait, lease }));
        lock.prune(&holder);
        match result?? {
            Some(_) => Ok(()),
            None => Err(Error::new(
                ErrorKind::NotAcquired,
                format!("lock \"{}\" was not acquired within {wait_ms} ms: someone else holds it", lock.name),
            )),
        }
    })
}

/// Releases one level of the calling thread's hold; the lock is free once every
/// acquisition of this thread has been released.
///
/// @return `FERROLOCK_OK` (one level released, whether or not levels remain);
///         `FERROLOCK_ERR_NOT_OWNER` (this thread does not hold it through this
///         handle; nothing changes); `FERROLOCK_ERR_LOCK_LOST` (the hold was lost
///         before this release: the critical section was not protected, once per
///         level that was held); `FERROLOCK_ERR_INVALID_ARGUMENT`;
///         `FERROLOCK_ERR_CONNECTION`; `FERROLOCK_ERR_PERMISSION` (a Redis ACL refused
///         the release; the message names the rule to add); `FERROLOCK_ERR_INTERNAL`.
///         After `FERROLOCK_ERR_CONNECTION` or `FERROLOCK_ERR_PERMISSION` this thread
///         still holds the level (see `ferrolock_lock_acquire()` on how holds end):
///         release again once Redis answers.
///
/// Blocks the calling thread. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_lock_release(lock: *mut ferrolock_lock) -> ferrolock_status {
    run(|| {
        let lock = lock_arg(lock)?;
        let Some(holder) = lock.thread_lock(false)? else {
            return Err(Error::new(
                ErrorKind::NotOwner,
                format!(
                    "lock \"{}\" is not held by this thread through this handle; acquire it before releasing it",
                    lock.name
                ),
            ));
        };
        let result = block_on(Some(&lock.client), holder.release());
        lock.prune(&holder);
        result??;
        Ok(())
    })
}

/// Whether anyone holds the lock (any client, any thread).
///
/// @param out receives the answer.
/// @return `FERROLOCK_OK`; `FERROLOCK_ERR_WRONG_TYPE`; `FERROLOCK_ERR_CONNECTION`;
///         `FERROLOCK_ERR_PERMISSION` (a Redis ACL refused the read; the message
///         names the rule to add); `FERROLOCK_ERR_INVALID_ARGUMENT`; `FERROLOCK_ERR_INTERNAL`.
///
/// Blocks for one round-trip. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_lock_is_locked(lock: *mut ferrolock_lock, out: *mut bool) -> ferrolock_status {
    run(|| {
        let lock = lock_arg(lock)?;
        let out = self::out(out, "out")?;
        *out = block_on(Some(&lock.client), lock.base.is_locked())??;
        Ok(())
    })
}

/// Whether the calling thread holds the lock through this handle, as the server
/// sees it.
///
/// @param out receives the answer.
/// @return like `ferrolock_lock_is_locked()`.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_lock_is_held(lock: *mut ferrolock_lock, out: *mut bool) -> ferrolock_status {
    run(|| {
        let lock = lock_arg(lock)?;
        let out = self::out(out, "out")?;
        let holder = lock.thread_lock(true)?.expect("created on demand");
        let result = block_on(Some(&lock.client), holder.is_held());
        lock.prune(&holder);
        *out = result??;
        Ok(())
    })
}

/// How many times the calling thread holds the lock through this handle (0 when not
/// held), as the server sees it.
///
/// @param out receives the count.
/// @return like `ferrolock_lock_is_locked()`.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_lock_hold_count(lock: *mut ferrolock_lock, out: *mut u32) -> ferrolock_status {
    run(|| {
        let lock = lock_arg(lock)?;
        let out = self::out(out, "out")?;
        let holder = lock.thread_lock(true)?.expect("created on demand");
        let result = block_on(Some(&lock.client), holder.hold_count());
        lock.prune(&holder);
        *out = result??;
        Ok(())
    })
}

/// Time left on the lock's lease, whoever holds it.
///
/// @param out receives the ms left; -1 when the lock is not locked; `INT64_MAX`
///        when the key has no expiry.
/// @return like `ferrolock_lock_is_locked()`.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_lock_remaining_lease_ms(lock: *mut ferrolock_lock, out: *mut i64) -> ferrolock_status {
    run(|| {
        let lock = lock_arg(lock)?;
        let out = self::out(out, "out")?;
        *out = match block_on(Some(&lock.client), lock.base.remaining_lease())?? {
            None => -1,
            Some(left) => i64::try_from(left.as_millis()).unwrap_or(i64::MAX),
        };
        Ok(())
    })
}

/// Deletes the lock whoever holds it and wakes one waiter. The holder finds its hold
/// lost at its next renewal or release (and its on_lost callback runs).
///
/// @param out_was_locked receives whether it was locked; may be NULL.
/// @return `FERROLOCK_OK`; `FERROLOCK_ERR_CONNECTION`; `FERROLOCK_ERR_PERMISSION` (a
///         Redis ACL refused it; the message names the rule to add);
///         `FERROLOCK_ERR_INVALID_ARGUMENT`; `FERROLOCK_ERR_INTERNAL`.
///
/// Blocks for one round-trip. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_lock_force_unlock(lock: *mut ferrolock_lock, out_was_locked: *mut bool) -> ferrolock_status {
    run(|| {
        let lock = lock_arg(lock)?;
        let was_locked = block_on(Some(&lock.client), lock.base.force_unlock())??;
        if let Some(out) = out_was_locked.as_mut() {
            *out = was_locked;
        }
        Ok(())
    })
}

/// The fencing token of the calling thread's current hold (fenced locks).
///
/// @param out receives the token.
/// @return `FERROLOCK_OK`; `FERROLOCK_ERR_NOT_OWNER` (this thread does not hold it
///         through this handle); `FERROLOCK_ERR_LOCK_LOST` (its hold was lost);
///         `FERROLOCK_ERR_INVALID_ARGUMENT` (NULL argument, or not a fenced lock).
///
/// Does not block (local view). Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_lock_token(lock: *mut ferrolock_lock, out: *mut u64) -> ferrolock_status {
    run(|| {
        let lock = lock_arg(lock)?;
        let out = self::out(out, "out")?;
        if !lock.fenced {
            return Err(lock.not_fenced());
        }
        let holder = lock.thread_lock(false)?;
        if let Some(token) = holder.as_ref().and_then(Lock::token) {
            *out = token;
            return Ok(());
        }
        match holder.and_then(|h| h.lost_error()) {
            Some(lost) => Err(lost),
            None => Err(Error::new(
                ErrorKind::NotOwner,
                format!("lock \"{}\" is not held by this thread through this handle, so it has no token", lock.name),
            )),
        }
    })
}

/// Whether the calling thread's latest hold through this handle was lost (expired,
/// force-unlocked or lost by the server). Stays true until this thread acquires the
/// lock again through this handle.
///
/// @param out receives the answer.
/// @return `FERROLOCK_OK`; `FERROLOCK_ERR_INVALID_ARGUMENT` (NULL argument).
///
/// Does not block (local view). Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_lock_is_lost(lock: *mut ferrolock_lock, out: *mut bool) -> ferrolock_status {
    run(|| {
        let lock = lock_arg(lock)?;
        let out = self::out(out, "out")?;
        *out = lock.thread_lock(false)?.is_some_and(|h| h.is_lost());
        Ok(())
    })
}

/// Sets the callback told when a hold taken through this handle (by any thread) is
/// lost; replaces any earlier one. `cb` NULL removes it. Once this returns, the
/// previous callback is not running and will not be called again.
///
/// The callback runs on a ferrolock library thread, not on the thread that held the
/// lock, once per lost hold, with the lock name (valid during the call) and `user`;
/// when several holds are lost at once it may run on several threads at once.
/// It should be short and must not throw (C++) or longjmp. It may set flags, post
/// semaphores, signal condition variables, write to pipes, and call ferrolock
/// functions on other handles; it must not call `ferrolock_lock_free()` or
/// `ferrolock_client_free()` for this lock's handle or client. Calling
/// `ferrolock_lock_on_lost()` on its own handle from inside it is allowed (it does
/// not wait for itself).
///
/// @return `FERROLOCK_OK`; `FERROLOCK_ERR_INVALID_ARGUMENT` (NULL lock).
#[no_mangle]
pub unsafe extern "C" fn ferrolock_lock_on_lost(lock: *mut ferrolock_lock, cb: ferrolock_lost_cb, user: *mut c_void) -> ferrolock_status {
    run(|| {
        let lock = lock_arg(lock)?;
        lock.set_callback(cb.map(|cb| (cb, user as usize)));
        Ok(())
    })
}

// ---------------------------------------------------------------------------
// Errors and version
// ---------------------------------------------------------------------------

/// The message of the calling thread's last ferrolock call: "" if it succeeded.
/// Valid until the next ferrolock call on this thread; never NULL. Messages name the
/// lock and say what to do; they never contain passwords.
#[no_mangle]
pub extern "C" fn ferrolock_last_error() -> *const c_char {
    catch_unwind(|| LAST_ERROR.with(|e| e.borrow().as_ptr())).unwrap_or(c"".as_ptr())
}

/// A static name for a status, e.g. "FERROLOCK_ERR_NOT_OWNER";
/// "FERROLOCK_UNKNOWN_STATUS" for a value that is not a status. Never NULL.
#[no_mangle]
pub extern "C" fn ferrolock_status_str(status: FerrolockStatusArg) -> *const c_char {
    ferrolock_status::from_int(status)
        .map_or(c"FERROLOCK_UNKNOWN_STATUS", ferrolock_status::name)
        .as_ptr()
}

/// The library version, e.g. "0.1.0". Static; never NULL.
#[no_mangle]
pub extern "C" fn ferrolock_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn last_error() -> String {
        unsafe { CStr::from_ptr(ferrolock_last_error()) }.to_str().unwrap().to_string()
    }

    #[test]
    fn a_panic_becomes_internal_with_a_message() {
        let status = run(|| panic!("boom"));
        assert_eq!(status, FERROLOCK_ERR_INTERNAL);
        assert!(last_error().contains("boom"), "{}", last_error());
        assert_eq!(run(|| Ok(())), FERROLOCK_OK);
        assert_eq!(last_error(), "");
    }

    #[test]
    fn status_names_match_the_enum() {
        for (i, status) in ferrolock_status::ALL.iter().enumerate() {
            assert_eq!(*status as usize, i);
            let got = unsafe { CStr::from_ptr(ferrolock_status_str(i as i32)) };
            // The C name is the variant's own name.
            assert_eq!(got.to_str().unwrap(), format!("{status:?}"));
        }
        assert_eq!(ferrolock_status::from_int(8), Some(FERROLOCK_ERR_PERMISSION));
        for value in [-1, ferrolock_status::ALL.len() as i32, 42, i32::MIN, i32::MAX] {
            let got = unsafe { CStr::from_ptr(ferrolock_status_str(value)) };
            assert_eq!(got.to_str().unwrap(), "FERROLOCK_UNKNOWN_STATUS", "{value}");
        }
    }

    #[test]
    fn numeric_values_never_change() {
        // The ABI: C programs compiled against an older header keep working.
        let values = [
            (FERROLOCK_OK, 0),
            (FERROLOCK_NOT_ACQUIRED, 1),
            (FERROLOCK_ERR_NOT_OWNER, 2),
            (FERROLOCK_ERR_LOCK_LOST, 3),
            (FERROLOCK_ERR_CONNECTION, 4),
            (FERROLOCK_ERR_WRONG_TYPE, 5),
            (FERROLOCK_ERR_INVALID_ARGUMENT, 6),
            (FERROLOCK_ERR_INTERNAL, 7),
            (FERROLOCK_ERR_PERMISSION, 8),
        ];
        for (status, value) in values {
            assert_eq!(status as i32, value, "{status:?}");
        }
        assert_eq!(values.len(), ferrolock_status::ALL.len());
    }

    #[test]
    fn permission_denied_has_its_own_status() {
        assert_eq!(status_of(ErrorKind::PermissionDenied), FERROLOCK_ERR_PERMISSION);
        let status = run(|| Err(Error::new(ErrorKind::PermissionDenied, "the ACL user needs +hincrby")));
        assert_eq!(status, FERROLOCK_ERR_PERMISSION);
        assert!(last_error().contains("+hincrby"), "{}", last_error());
    }
}
