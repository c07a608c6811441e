//! Where core futures run: on the process-wide runtime (`ferrolock::runtime::shared`,
//! rebuilt in a forked child), either blocking the calling thread ([`block`]) or
//! as an asyncio future ([`awaitable`]). Also the fork guard [`Local`] and
//! [`quiesce`], which lets background threads leave the interpreter at exit.

use std::future::Future;
use std::mem::ManuallyDrop;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use ferrolock::ErrorKind;
use pyo3::prelude::*;
use pyo3::IntoPyObjectExt;
use pyo3_async_runtimes::generic::{self, ContextExt};
use pyo3_async_runtimes::TaskLocals;

use crate::errors::{to_py, PyResultExt};

/// How long a blocking call of Python's main thread waits before it looks for
/// pending signals (Ctrl-C).
const SIGNAL_SLICE: Duration = Duration::from_millis(20);

/// The same for any other thread, where Python runs no signal handler: each look
/// costs a wake-up, a round of the GIL and a poll of the call, which 50 times a
/// second per waiting thread took CPU from the holders on a small machine. Still
/// bounded, in case the main thread is told wrong (an embedding's own threads).
const OTHER_THREAD_SLICE: Duration = Duration::from_secs(1);

thread_local! {
    /// (process id, is Python's main thread) as last found on this thread: found
    /// again in a forked child, whose main thread is the one that forked.
    static MAIN_THREAD: std::cell::Cell<Option<(u32, bool)>> = const { std::cell::Cell::new(None) };
}

/// How long the calling thread's blocking calls wait between looks for signals.
fn signal_slice(py: Python<'_>) -> Duration {
    let pid = std::process::id();
    let main = match MAIN_THREAD.with(|m| m.get()) {
        Some((owner, main)) if owner == pid => main,
        _ => {
            let main = is_main_thread(py).unwrap_or(true);
            MAIN_THREAD.with(|m| m.set(Some((pid, main))));
            main
        }
    };
    if main {
        SIGNAL_SLICE
    } else {
        OTHER_THREAD_SLICE
    }
}

/// By ident: `threading.current_thread()` would register a dummy thread object,
/// never freed, for a thread that threading did not start.
fn is_main_thread(py: Python<'_>) -> PyResult<bool> {
    let threading = py.import("threading")?;
    let main = threading.call_method0("main_thread")?.getattr("ident")?;
    threading.call_method0("get_ident")?.eq(main)
}

// ---------------------------------------------------------------------------
// Fork safety.

/// A value that belongs to the process that made it. In a forked child its
/// destructor is skipped: the parent's runtime threads do not exist there, and
/// the locks they may have held at fork time would never be released.
pub(crate) struct Local<T> {
    pid: u32,
    value: ManuallyDrop<T>,
}

impl<T> Local<T> {
    pub(crate) fn new(value: T) -> Self {
        Local { pid: std::process::id(), value: ManuallyDrop::new(value) }
    }

    pub(crate) fn is_foreign(&self) -> bool {
        self.pid != std::process::id()
    }
}

impl<T> std::ops::Deref for Local<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

impl<T> std::ops::DerefMut for Local<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.value
    }
}

impl<T> Drop for Local<T> {
    fn drop(&mut self) {
        if !self.is_foreign() {
            // SAFETY: dropped exactly once, here.
            unsafe { ManuallyDrop::drop(&mut self.value) }
        }
    }
}

// ---------------------------------------------------------------------------
// Blocking calls.

pub(crate) fn runtime() -> PyResult<Arc<tokio::runtime::Runtime>> {
    ferrolock::runtime::shared()
        .map_err(|e| ferrolock::Error::new(ErrorKind::Internal, format!("cannot start the ferrolock runtime: {e}")))
        .py()
}

/// Runs `fut` to completion with the GIL released, looking for signals every
/// [`SIGNAL_SLICE`] (other threads: [`OTHER_THREAD_SLICE`]): on Unix polled on this thread, which also does the I/O of its
/// own connection (core's `blocking`), elsewhere on the shared runtime. On KeyboardInterrupt
/// (or any exception a signal handler raises) the future is dropped, which core
/// guarantees leaves nothing held and no subscription behind.
pub(crate) fn block<F, T>(py: Python<'_>, fut: F) -> PyResult<T>
where
    F: Future<Output = ferrolock::Result<T>> + Send,
    T: Send,
{
    let rt = runtime()?;
    let slice = signal_slice(py);
    let mut fut = Box::pin(fut);
    #[cfg(unix)]
    let mut drive = ferrolock::blocking::Drive::new();
    loop {
        let step = py.detach(|| {
            let _context = rt.enter();
            #[cfg(unix)]
            match drive.slice(fut.as_mut(), slice) {
                ferrolock::blocking::Slice::Done(result) => {
                    ferrolock::blocking::settle();
                    return Some(result);
                }
                ferrolock::blocking::Slice::Pending => return None,
                ferrolock::blocking::Slice::Unavailable => {}
            }
            rt.block_on(async { tokio::time::timeout(slice, fut.as_mut()).await }).ok()
        });
        match step {
            Some(result) => return result.py(),
            None => {
                if let Err(interrupt) = py.check_signals() {
                    let _context = rt.enter();
                    drop(fut);
                    #[cfg(unix)]
                    ferrolock::blocking::interrupted();
                    return Err(interrupt);
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------
// The asyncio bridge.

tokio::task_local! {
    static TASK_LOCALS: std::cell::OnceCell<TaskLocals>;
}

/// pyo3-async-runtimes' generic bridge on ferrolock's shared runtime (rebuilt after fork).
struct SharedRuntime;

struct JoinFailed(tokio::task::JoinError);

impl generic::JoinError for JoinFailed {
    fn is_panic(&self) -> bool {
        self.0.is_panic()
    }
    fn into_panic(self) -> Box<dyn std::any::Any + Send + 'static> {
        self.0.into_panic()
    }
}

struct Joined(tokio::task::JoinHandle<()>);

impl Future for Joined {
    type Output = Result<(), JoinFailed>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.0).poll(cx).map(|r| r.map_err(JoinFailed))
    }
}

fn shared_or_abort() -> Arc<tokio::runtime::Runtime> {
    ferrolock::runtime::shared().expect("cannot start the ferrolock runtime")
}

impl generic::Runtime for SharedRuntime {
    type JoinError = JoinFailed;
    type JoinHandle = Joined;

    fn spawn<F>(fut: F) -> Joined
    where
        F: Future<Output = ()> + Send + 'static,
    {
        Joined(shared_or_abort().spawn(fut))
    }

    fn spawn_blocking<F>(f: F) -> Joined
    where
        F: FnOnce() + Send + 'static,
    {
        // pyo3-async-runtimes delivers results to asyncio from here, holding the GIL.
        let busy = InPython::enter();
        Joined(shared_or_abort().spawn_blocking(move || {
            let _busy = busy;
            f()
        }))
    }
}

impl ContextExt for SharedRuntime {
    fn scope<F, R>(locals: TaskLocals, fut: F) -> Pin<Box<dyn Future<Output = R> + Send>>
    where
        F: Future<Output = R> + Send + 'static,
    {
        let cell = std::cell::OnceCell::new();
        let _ = cell.set(locals);
        Box::pin(TASK_LOCALS.scope(cell, fut))
    }

    fn get_task_locals() -> Option<TaskLocals> {
        TASK_LOCALS.try_with(|c| c.get().cloned()).unwrap_or_default()
    }
}

/// Wraps a core future into an asyncio future on the running loop. Cancelling the
/// asyncio future drops the Rust future.
pub(crate) fn awaitable<'py, F, T>(py: Python<'py>, fut: F) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = ferrolock::Result<T>> + Send + 'static,
    T: for<'a> IntoPyObject<'a> + Send + 'static,
{
    // Make sure this process has its runtime before the bridge spawns on it.
    runtime()?;
    generic::future_into_py::<SharedRuntime, _, Reply<T>>(py, async move { Ok(Reply(fut.await)) })
}

/// A core result on its way to asyncio: turned into a value or an exception where
/// the bridge holds the GIL anyway, never on a runtime worker.
struct Reply<T>(ferrolock::Result<T>);

impl<'py, T> IntoPyObject<'py> for Reply<T>
where
    T: IntoPyObject<'py>,
{
    type Target = PyAny;
    type Output = Bound<'py, PyAny>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match self.0 {
            Ok(value) => value.into_bound_py_any(py),
            Err(err) => Err(to_py(py, err)),
        }
    }
}

// ---------------------------------------------------------------------------
// Leaving the interpreter at exit.

/// Background threads that are about to enter, or are inside, the interpreter
/// (asyncio result delivery, on_lost callbacks). `quiesce` waits for them at exit:
/// a thread leaving the interpreter while it finalizes crashes the process.
static IN_PYTHON: AtomicUsize = AtomicUsize::new(0);

/// Counts a background thread in [`IN_PYTHON`] while it lives.
pub(crate) struct InPython;

impl InPython {
    pub(crate) fn enter() -> InPython {
        IN_PYTHON.fetch_add(1, Ordering::SeqCst);
        InPython
    }
}

impl Drop for InPython {
    fn drop(&mut self) {
        IN_PYTHON.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Waits (GIL released) up to `timeout` seconds until no background thread is
/// delivering a result or a callback into Python. Registered with `atexit`.
#[pyfunction]
pub(crate) fn quiesce(py: Python<'_>, timeout: f64) -> bool {
    let deadline = std::time::Instant::now() + Duration::from_secs_f64(timeout.clamp(0.0, 60.0));
    py.detach(|| loop {
        if IN_PYTHON.load(Ordering::SeqCst) == 0 {
            return true;
        }
        if std::time::Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    })
}
