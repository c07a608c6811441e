//! Core's `tracing` events for C: to stderr when `FERROLOCK_LOG` is set (a level or
//! `target=level` list, e.g. `info` or `ferrolock=debug`; read at the first connect),
//! and to a callback given to `ferrolock_set_logger()`. The subscriber, the filters
//! and the logger of the moment are core's log_bridge; this file translates an event
//! into a call of the callback.
//!
//! The callback runs on a thread of its own ("ferrolock-log"), fed by a bounded queue:
//! never on a thread of the program's (so it may call ferrolock, and a slow callback
//! holds up no lock call), never on the runtime's (which it would stall).

use std::ffi::{c_char, c_void, CString};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Mutex, OnceLock};

use ferrolock::log_bridge::{Bridge, EventText, Logger, SetError};
use ferrolock::Error;

use crate::ffi::{c_str, internal, invalid, lock_ignoring_poison};
use crate::status::ferrolock_status;

/// The level of a log event. The numeric values are part of the ABI.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ferrolock_log_level {
    /// Something failed that the program may not see otherwise.
    FERROLOCK_LOG_ERROR = 1,
    /// Something went wrong and was worked around (a renewal retried, a reconnect).
    FERROLOCK_LOG_WARN = 2,
    /// Worth telling an operator: e.g. an acquire waiting longer than `slow_wait_log_ms`.
    FERROLOCK_LOG_INFO = 3,
    /// What the library does, step by step.
    FERROLOCK_LOG_DEBUG = 4,
    /// Every detail.
    FERROLOCK_LOG_TRACE = 5,
}

/// A log callback for `ferrolock_set_logger()`. Called on the library's log thread,
/// one event at a time, in order; every string is valid only during the call.
///
/// - `level`: the event's level;
/// - `target`: where in the library it comes from, e.g. "ferrolock::lock::slow_wait";
/// - `message`: the event's text, e.g. `waiting 10 s for lock "jobs": held by ...`;
/// - `fields`: its other fields as `key=value` pairs separated by spaces (the lock
///   name, an error...), "" when none;
/// - `userdata`: as given to `ferrolock_set_logger()`.
pub type ferrolock_log_fn = Option<
    unsafe extern "C" fn(
        level: ferrolock_log_level,
        target: *const c_char,
        message: *const c_char,
        fields: *const c_char,
        userdata: *mut c_void,
    ),
>;

/// The C logger: its function and userdata, which only the log thread passes back.
struct CLogger {
    callback: unsafe extern "C" fn(ferrolock_log_level, *const c_char, *const c_char, *const c_char, *mut c_void),
    userdata: *mut c_void,
}

// The program hands userdata over to the log thread (documented on ferrolock_set_logger);
// other threads only read the pointer, never use it.
unsafe impl Send for CLogger {}
unsafe impl Sync for CLogger {}

/// One event on its way to the log thread.
struct Record {
    level: ferrolock_log_level,
    target: CString,
    message: CString,
    fields: CString,
}

/// The logger the log thread calls; replaced by `ferrolock_set_logger()`.
static BRIDGE: Bridge<CLogger> = Bridge::new("FERROLOCK_LOG");
/// Held by the log thread while it runs the callback: `ferrolock_set_logger()` takes it
/// after replacing the logger, so once it returns the old callback is not running and
/// never runs again.
static CALLING: Mutex<()> = Mutex::new(());

thread_local! {
    static ON_LOG_THREAD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Events waiting for the log thread; beyond this many, new ones are dropped (a
/// callback that cannot keep up must not make core's threads wait or grow memory).
const QUEUE: usize = 4096;

/// The log thread's queue, started with the first `ferrolock_set_logger()` with a callback.
static QUEUE_TX: OnceLock<Result<SyncSender<Record>, String>> = OnceLock::new();

/// At the first connect: installs the subscriber only when `FERROLOCK_LOG` asks for logs.
pub(crate) fn init_from_env() {
    BRIDGE.init_from_env();
}

fn queue() -> Result<&'static SyncSender<Record>, String> {
    let tx = QUEUE_TX.get_or_init(|| {
        let (tx, rx) = sync_channel::<Record>(QUEUE);
        std::thread::Builder::new()
            .name("ferrolock-log".into())
            .spawn(move || deliver(rx))
            .map(|_| tx)
            .map_err(|e| format!("cannot start the ferrolock log thread: {e}"))
    });
    tx.as_ref().map_err(Clone::clone)
}

/// The log thread: hands each event to the logger of the moment.
fn deliver(rx: Receiver<Record>) {
    ON_LOG_THREAD.with(|t| t.set(true));
    for record in rx {
        let _calling = lock_ignoring_poison(&CALLING);
        let Some(logger) = BRIDGE.logger() else { continue };
        // SAFETY: the program gave this function and userdata for this call; the
        // strings live until it returns.
        unsafe {
            (logger.callback)(
                record.level,
                record.target.as_ptr(),
                record.message.as_ptr(),
                record.fields.as_ptr(),
                logger.userdata,
            )
        };
    }
}

/// Sends the library's log events at `filter` or above to `callback`, on a thread
/// of the library's (one event at a time, in order), or stops that (`callback` NULL).
/// One logger per process: a call replaces the previous one. The slow-wait line
/// (an acquire waiting longer than `slow_wait_log_ms`, naming the lock's holder) is
/// an INFO event of target "ferrolock::lock::slow_wait".
///
/// Independently of this, `FERROLOCK_LOG=<filter>` in the environment (read at the
/// first connect) writes the events it lets through to stderr.
///
/// @param callback called for each event (see `ferrolock_log_fn`), or NULL to stop.
///        It must not block for long: events beyond a queue of 4096 are dropped
///        while it catches up. It may call ferrolock functions, including this one.
/// @param filter which events: a level ("error", "warn", "info", "debug", "trace")
///        or `target=level` directives such as "ferrolock=debug,ferrolock::renewal=trace".
///        NULL or "": "info". Copied.
/// @param userdata passed back to every call; the program keeps it valid (and safe
///        to use from the log thread) until the logger is replaced.
/// @return `FERROLOCK_OK`; `FERROLOCK_ERR_INVALID_ARGUMENT` (a filter that does not
///         parse, invalid UTF-8, or another Rust `tracing` subscriber already
///         installed in this process: nothing changes); `FERROLOCK_ERR_INTERNAL`.
///
/// Thread-safe. When it returns, the previous callback is not running and is never
/// called again (unless it is called from inside that callback: then the callback
/// finishes the call it is in). Never calls the callback itself.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_set_logger(
    callback: ferrolock_log_fn,
    filter: *const c_char,
    userdata: *mut c_void,
) -> ferrolock_status {
    ffi!({
        set_logger(callback, filter, userdata)?;
        if !ON_LOG_THREAD.with(|t| t.get()) {
            // Waits out a call of the previous callback that is under way (the bridge's
            // own lock is not held here: that callback may be calling this function).
            drop(lock_ignoring_poison(&CALLING));
        }
        Ok(())
    })
}

unsafe fn set_logger(callback: ferrolock_log_fn, filter: *const c_char, userdata: *mut c_void) -> Result<(), Error> {
    let spec = if filter.is_null() { "" } else { c_str(filter, "filter")? };
    let spec = (!spec.trim().is_empty()).then_some(spec);
    let logger = callback.map(|callback| CLogger { callback, userdata });
    BRIDGE.set(logger, spec).map_err(|e| match e {
        SetError::Internal(_) => internal(format!("ferrolock_set_logger: {e}")),
        _ => invalid(format!("ferrolock_set_logger: {e}")),
    })
}

impl Logger for CLogger {
    /// Queues the event for the log thread.
    fn log(&self, event: &tracing::Event<'_>) {
        let Some(Ok(tx)) = QUEUE_TX.get() else { return };
        let meta = event.metadata();
        let text = EventText::of(event);
        let level = match *meta.level() {
            tracing::Level::ERROR => ferrolock_log_level::FERROLOCK_LOG_ERROR,
            tracing::Level::WARN => ferrolock_log_level::FERROLOCK_LOG_WARN,
            tracing::Level::INFO => ferrolock_log_level::FERROLOCK_LOG_INFO,
            tracing::Level::DEBUG => ferrolock_log_level::FERROLOCK_LOG_DEBUG,
            tracing::Level::TRACE => ferrolock_log_level::FERROLOCK_LOG_TRACE,
        };
        let record = Record {
            level,
            target: c_text(meta.target()),
            message: c_text(&text.message),
            fields: c_text(&text.fields_line()),
        };
        // Never waits for the log thread: a full queue drops the event.
        let _ = tx.try_send(record);
    }

    /// The log thread, started with the first callback.
    fn start(&self) -> Result<(), String> {
        queue().map(drop)
    }
}

fn c_text(s: &str) -> CString {
    CString::new(s.replace('\0', "\\0")).unwrap_or_default()
}
