//! The log bridge: the core's `tracing` events reach Python's `logging`, on the
//! logger "ferrolock" and its children by target ("ferrolock::transport::conn" ->
//! "ferrolock.transport.conn"), levels mapped (TRACE -> 5, DEBUG, INFO, WARNING,
//! ERROR).
//!
//! Two rules shape it:
//! * Cheap when disabled: whether an event is wanted is decided from a cached
//!   level (the effective level of logger "ferrolock"), an atomic load; the GIL is
//!   never taken for that. The cache is refreshed when a client connects
//!   (`sync_log_level`) and by the delivery thread once a second.
//! * Never wait for the GIL where the event happens: a runtime thread may emit
//!   while a Python thread holds the GIL and waits for something that runtime
//!   thread holds. Events go through a bounded queue to one delivery thread per
//!   process, which takes the GIL; when the queue is full, events are dropped
//!   (and counted in the next record).

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::Mutex;
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::PyDict;
use tracing::subscriber::Interest;
use tracing::{Event, Level, Metadata, Subscriber};
use ferrolock::log_bridge::EventText;
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

/// The lowest Python level forwarded (the effective level of logger "ferrolock");
/// nothing until the bridge is installed.
static LEVEL: AtomicI32 = AtomicI32::new(i32::MAX);
/// Events dropped because the queue was full, since the last delivered record.
static DROPPED: AtomicU64 = AtomicU64::new(0);
/// Set at interpreter exit: the delivery thread must not enter a finalizing interpreter.
static STOPPED: AtomicBool = AtomicBool::new(false);
/// The queue to this process's delivery thread (a forked child starts its own).
static SINK: Mutex<Option<(u32, SyncSender<Record>)>> = Mutex::new(None);

const QUEUE: usize = 4096;
const REFRESH: Duration = Duration::from_secs(1);

struct Record {
    level: i32,
    logger: String,
    target: &'static str,
    file: Option<&'static str>,
    line: Option<u32>,
    message: String,
}

fn py_level(level: &Level) -> i32 {
    match *level {
        Level::ERROR => 40,
        Level::WARN => 30,
        Level::INFO => 20,
        Level::DEBUG => 10,
        _ => 5,
    }
}

/// The Python logger of a target of ours, or None for other crates' targets.
fn logger_name(target: &str) -> Option<String> {
    let (head, rest) = target.split_once("::").unwrap_or((target, ""));
    let base = match head {
        "ferrolock" => "ferrolock",
        "ferrolock_python" => "ferrolock.python",
        _ => return None,
    };
    Some(if rest.is_empty() { base.to_string() } else { format!("{base}.{}", rest.replace("::", ".")) })
}

struct Bridge;

impl<S: Subscriber> Layer<S> for Bridge {
    fn register_callsite(&self, metadata: &'static Metadata<'static>) -> Interest {
        // `sometimes`: the Python level may change, so `enabled` decides per event.
        if logger_name(metadata.target()).is_some() {
            Interest::sometimes()
        } else {
            Interest::never()
        }
    }

    fn enabled(&self, metadata: &Metadata<'_>, _ctx: Context<'_, S>) -> bool {
        py_level(metadata.level()) >= LEVEL.load(Ordering::Relaxed)
    }

    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let metadata = event.metadata();
        let Some(logger) = logger_name(metadata.target()) else { return };
        let text = EventText::of(event);
        let record = Record {
            level: py_level(metadata.level()),
            logger,
            target: metadata.target(),
            file: metadata.file(),
            line: metadata.line(),
            message: text.into_line(),
        };
        let Some(sink) = sink() else { return };
        if let Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) = sink.try_send(record) {
            DROPPED.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Makes sure this process has its delivery thread (a forked child starts its own),
/// so that the level is refreshed there too.
pub(crate) fn ensure_delivery() {
    sink();
}

/// The queue of this process's delivery thread, started on first use.
fn sink() -> Option<SyncSender<Record>> {
    let pid = std::process::id();
    let mut slot = SINK.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((owner, sender)) = slot.as_ref() {
        if *owner == pid {
            return Some(sender.clone());
        }
    }
    let (sender, receiver) = sync_channel(QUEUE);
    std::thread::Builder::new().name("ferrolock-log".into()).spawn(move || deliver(receiver)).ok()?;
    *slot = Some((pid, sender.clone()));
    Some(sender)
}

/// The delivery thread: hands records to `logging` (with the GIL), and refreshes
/// the cached level while idle.
fn deliver(receiver: Receiver<Record>) {
    let mut pending = Vec::new();
    loop {
        match receiver.recv_timeout(REFRESH) {
            Ok(record) => pending.push(record),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
        pending.extend(receiver.try_iter());
        // Counted before the check, so that `quiesce` at exit (after `stop_log_bridge`)
        // waits for a delivery that saw the flag unset.
        let _busy = crate::runtime::InPython::enter();
        if STOPPED.load(Ordering::SeqCst) {
            return;
        }
        let _ = Python::try_attach(|py| {
            for record in pending.drain(..) {
                if let Err(e) = emit(py, record) {
                    e.write_unraisable(py, None);
                }
            }
            let _ = refresh(py);
        });
        pending.clear();
    }
}

thread_local! {
    static LOGGERS: RefCell<HashMap<String, Py<PyAny>>> = RefCell::new(HashMap::new());
}

fn logger<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    if let Some(found) = LOGGERS.with(|l| l.borrow().get(name).map(|l| l.clone_ref(py))) {
        return Ok(found.into_bound(py));
    }
    let found = py.import("logging")?.call_method1("getLogger", (name,))?;
    LOGGERS.with(|l| l.borrow_mut().insert(name.to_string(), found.clone().unbind()));
    Ok(found)
}

fn emit(py: Python<'_>, record: Record) -> PyResult<()> {
    let target = logger(py, &record.logger)?;
    let dropped = DROPPED.swap(0, Ordering::Relaxed);
    let message = if dropped > 0 {
        format!("{} ({dropped} earlier ferrolock log record(s) dropped: the log queue was full)", record.message)
    } else {
        record.message
    };
    if !target.call_method1("isEnabledFor", (record.level,))?.extract::<bool>()? {
        return Ok(());
    }
    // The record points at the Rust source of the event, not at this thread's
    // (nonexistent) Python caller.
    let extra = PyDict::new(py);
    extra.set_item("ferrolock_target", record.target)?;
    let kwargs = PyDict::new(py);
    kwargs.set_item("extra", extra)?;
    let args = (
        &record.logger,
        record.level,
        record.file.unwrap_or(record.target),
        record.line.unwrap_or(0),
        "%s",
        (message,),
        py.None(),
    );
    let made = target.call_method("makeRecord", args, Some(&kwargs))?;
    target.call_method1("handle", (made,))?;
    Ok(())
}

/// Reads the effective level of logger "ferrolock" into the cache.
fn refresh(py: Python<'_>) -> PyResult<()> {
    let level: i32 = logger(py, "ferrolock")?.call_method0("getEffectiveLevel")?.extract()?;
    LEVEL.store(level, Ordering::Relaxed);
    Ok(())
}

/// Installs the bridge as the process's tracing subscriber (once; the core's
/// `tracing` in this extension is its own, so nobody else installs one) and reads
/// the level of logger "ferrolock". Called when `ferrolock` is imported.
#[pyfunction]
pub(crate) fn install_log_bridge(py: Python<'_>) -> PyResult<()> {
    let _ = tracing::subscriber::set_global_default(tracing_subscriber::registry().with(Bridge));
    sync_log_level(py)
}

/// Stops delivering (registered with `atexit`, to run before `quiesce`): records
/// after this are dropped.
#[pyfunction]
pub(crate) fn stop_log_bridge() {
    STOPPED.store(true, Ordering::SeqCst);
    LEVEL.store(i32::MAX, Ordering::Relaxed);
}

/// Reads the effective level of logger "ferrolock" again now (the delivery thread
/// also does once a second), and makes sure this process has its delivery thread.
#[pyfunction]
pub(crate) fn sync_log_level(py: Python<'_>) -> PyResult<()> {
    refresh(py)?;
    sink();
    Ok(())
}
