//! `ferrolock._native`: the Python binding of ferrolock.
//!
//! Thin by design (DESIGN §1): this module translates types, errors, blocking vs.
//! asyncio style and identity. All lock logic lives in the core crate. The public
//! Python API (`ferrolock.Client`, `ferrolock.Lock`, `ferrolock.aio`) is a small
//! Python layer over the two classes here:
//!
//! * [`Client`]: one core client (connection, pub/sub, watchdog).
//! * [`Holder`]: one core lock handle = one holder (one owner field). The Python
//!   layer maps (lock object, thread) and (lock object, asyncio task) to holders.
//!   Dropping a `Holder` that holds does not release: the core client keeps the
//!   hold until it is released, its explicit lease ends, or the client shuts down
//!   (`close`, or the last `Client`/`Holder` of it dropped).
//!
//! Blocking calls run on the process-wide runtime (`ferrolock::runtime::shared`)
//! with the GIL released, in short slices with `check_signals` in between, so
//! Ctrl-C interrupts a wait quickly; dropping the interrupted future leaves nothing
//! held (a core guarantee). Async calls run on the same runtime through
//! pyo3-async-runtimes' generic bridge, so a forked child gets a fresh runtime.

use std::future::Future;
use std::mem::ManuallyDrop;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use ferrolock::{validate, AcquireOptions, ClientBuilder, ErrorKind, LockOptions};
use pyo3::prelude::*;
use pyo3::IntoPyObjectExt;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;
use pyo3_async_runtimes::generic::{self, ContextExt};
use pyo3_async_runtimes::TaskLocals;

/// How long a blocking call waits before it looks for pending signals (Ctrl-C).
const SIGNAL_SLICE: Duration = Duration::from_millis(20);

// ---------------------------------------------------------------------------
// Errors: core ErrorKind -> the exception classes of ferrolock._errors.

static ERRORS_MODULE: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

fn error_class<'py>(py: Python<'py>, kind: ErrorKind) -> PyResult<Bound<'py, PyType>> {
    let module = ERRORS_MODULE.get_or_try_init(py, || py.import("ferrolock._errors").map(Bound::unbind))?;
    let name = match kind {
        ErrorKind::NotAcquired => "LockTimeoutError",
        ErrorKind::NotOwner => "NotOwnedError",
        ErrorKind::LockLost => "LockLostError",
        ErrorKind::Connection => "ConnectionError",
        ErrorKind::WrongType => "WrongTypeError",
        ErrorKind::InvalidArgument => "InvalidArgumentError",
        ErrorKind::PermissionDenied => "PermissionDeniedError",
        // Cancelled (the client was closed under a waiting call), Internal, and
        // anything a later core adds: the base class, with the core's message.
        _ => "LockError",
    };
    Ok(module.bind(py).getattr(name)?.cast_into::<PyType>()?)
}

/// The Python exception for a core error (needs the GIL, which every caller holds).
fn to_py_err(py: Python<'_>, err: ferrolock::Error) -> PyErr {
    match error_class(py, err.kind()) {
        Ok(class) => PyErr::from_type(class, err.message().to_string()),
        Err(e) => e,
    }
}

fn to_py(err: ferrolock::Error) -> PyErr {
    Python::attach(|py| to_py_err(py, err))
}

fn seconds(value: Option<f64>, what: &str) -> PyResult<Option<Duration>> {
    value.map(|v| validate::seconds(v, what)).transpose().map_err(to_py)
}

// ---------------------------------------------------------------------------
// Fork safety.

/// A value that belongs to the process that made it. In a forked child its
/// destructor is skipped: the parent's runtime threads do not exist there, and
/// the locks they may have held at fork time would never be released.
struct Local<T> {
    pid: u32,
    value: ManuallyDrop<T>,
}

impl<T> Local<T> {
    fn new(value: T) -> Self {
        Local { pid: std::process::id(), value: ManuallyDrop::new(value) }
    }

    fn is_foreign(&self) -> bool {
        self.pid != std::process::id()
    }
}

impl<T> std::ops::Deref for Local<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
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
// Runtime: blocking calls and the asyncio bridge.

fn runtime() -> PyResult<Arc<tokio::runtime::Runtime>> {
    ferrolock::runtime::shared().map_err(|e| {
        to_py(ferrolock::Error::new(ErrorKind::Internal, format!("cannot start the ferrolock runtime: {e}")))
    })
}

/// Runs `fut` to completion on the shared runtime with the GIL released, looking
/// for signals every [`SIGNAL_SLICE`]. On KeyboardInterrupt (or any exception a
/// signal handler raises) the future is dropped, which core guarantees leaves
/// nothing held and no subscription behind.
fn block<F, T>(py: Python<'_>, fut: F) -> PyResult<T>
where
    F: Future<Output = ferrolock::Result<T>> + Send,
    T: Send,
{
    let rt = runtime()?;
    let mut fut = Box::pin(fut);
    loop {
        let step = py.detach(|| rt.block_on(async { tokio::time::timeout(SIGNAL_SLICE, fut.as_mut()).await }));
        match step {
            Ok(result) => return result.map_err(to_py),
            Err(_elapsed) => {
                if let Err(interrupt) = py.check_signals() {
                    let _context = rt.enter();
                    drop(fut);
                    return Err(interrupt);
                }
            }
        }
    }
}

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

/// Background threads that are about to enter, or are inside, the interpreter
/// (asyncio result delivery, on_lost callbacks). `quiesce` waits for them at exit:
/// a thread leaving the interpreter while it finalizes crashes the process.
static IN_PYTHON: AtomicUsize = AtomicUsize::new(0);

struct InPython;

impl InPython {
    fn enter() -> InPython {
        IN_PYTHON.fetch_add(1, Ordering::SeqCst);
        InPython
    }
}

impl Drop for InPython {
    fn drop(&mut self) {
        IN_PYTHON.fetch_sub(1, Ordering::SeqCst);
    }
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
fn awaitable<'py, F, T>(py: Python<'py>, fut: F) -> PyResult<Bound<'py, PyAny>>
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
            Err(err) => Err(to_py_err(py, err)),
        }
    }
}

// ---------------------------------------------------------------------------
// Client.

fn builder(
    url: &str,
    watchdog_timeout: Option<f64>,
    response_timeout: Option<f64>,
    connect_timeout: Option<f64>,
    retry_window: Option<f64>,
    drift_factor: Option<f64>,
) -> PyResult<ClientBuilder> {
    let mut b = ClientBuilder::new(url);
    if let Some(d) = seconds(watchdog_timeout, "watchdog_timeout")? {
        b = b.watchdog_timeout(d);
    }
    if let Some(d) = seconds(response_timeout, "response_timeout")? {
        b = b.response_timeout(d);
    }
    if let Some(d) = seconds(connect_timeout, "connect_timeout")? {
        b = b.connect_timeout(d);
    }
    if let Some(d) = seconds(retry_window, "retry_window")? {
        b = b.retry_window(d);
    }
    if let Some(f) = drift_factor {
        // Range-checked (0 to 0.5) by the core when connecting: InvalidArgumentError.
        b = b.drift_factor(f);
    }
    Ok(b)
}

/// A connection to one Redis deployment (native part of `ferrolock.Client` and
/// `ferrolock.aio.Client`). Create it with `Client.connect` or `Client.connect_async`.
#[pyclass(module = "ferrolock._native", frozen)]
struct Client {
    inner: Local<ferrolock::Client>,
}

impl Client {
    fn wrap(client: ferrolock::Client) -> Client {
        Client { inner: Local::new(client) }
    }

    /// Usable only in the process that created it (fork: raises InvalidArgumentError).
    fn live(&self) -> PyResult<&ferrolock::Client> {
        self.inner.check_process().map_err(to_py)?;
        Ok(&self.inner)
    }
}

#[pymethods]
impl Client {
    /// Connects (blocking, interruptible with Ctrl-C) and checks that the server answers.
    #[staticmethod]
    #[pyo3(signature = (url, watchdog_timeout=None, response_timeout=None, connect_timeout=None, retry_window=None, drift_factor=None))]
    fn connect(
        py: Python<'_>,
        url: &str,
        watchdog_timeout: Option<f64>,
        response_timeout: Option<f64>,
        connect_timeout: Option<f64>,
        retry_window: Option<f64>,
        drift_factor: Option<f64>,
    ) -> PyResult<Client> {
        let b = builder(url, watchdog_timeout, response_timeout, connect_timeout, retry_window, drift_factor)?;
        block(py, b.connect()).map(Client::wrap)
    }

    /// Like `connect`, as an awaitable for asyncio.
    #[staticmethod]
    #[pyo3(signature = (url, watchdog_timeout=None, response_timeout=None, connect_timeout=None, retry_window=None, drift_factor=None))]
    fn connect_async<'py>(
        py: Python<'py>,
        url: &str,
        watchdog_timeout: Option<f64>,
        response_timeout: Option<f64>,
        connect_timeout: Option<f64>,
        retry_window: Option<f64>,
        drift_factor: Option<f64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let b = builder(url, watchdog_timeout, response_timeout, connect_timeout, retry_window, drift_factor)?;
        awaitable(py, async move { b.connect().await.map(Client::wrap) })
    }

    /// This client's id (a UUID v4): the first half of every owner field it writes.
    #[getter]
    fn id(&self) -> &str {
        self.inner.id()
    }

    /// The lease of watchdog-renewed locks, in seconds.
    #[getter]
    fn watchdog_timeout(&self) -> f64 {
        self.inner.config().watchdog_timeout.as_secs_f64()
    }

    /// A new holder of lock `name`: its own owner field `<client id>:<holder id>`.
    /// With `holder_id`, the owner field uses that id (holders with the same id on
    /// one client share their hold: hand-over between threads or tasks).
    #[pyo3(signature = (name, fenced=false, holder_id=None))]
    fn holder(&self, name: &str, fenced: bool, holder_id: Option<u64>) -> PyResult<Holder> {
        let client = self.live()?;
        let holder_id = Some(holder_id.unwrap_or_else(|| client.new_holder_id()));
        let lock = client.lock_with(name, LockOptions { fenced, holder_id, owner: None }).map_err(to_py)?;
        Ok(Holder { lock: Local::new(lock), client: Local::new(client.clone()) })
    }

    /// Releases every lock this client holds, stops the watchdog and closes the
    /// connections (blocking). Later calls fail. A no-op in a forked child.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        if self.inner.is_foreign() {
            return Ok(());
        }
        let client = self.inner.clone();
        block(py, async move { client.shutdown().await })
    }

    /// Like `close`, as an awaitable for asyncio.
    fn close_async<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let client = (!self.inner.is_foreign()).then(|| self.inner.clone());
        awaitable(py, async move {
            match client {
                Some(c) => c.shutdown().await,
                None => Ok(()),
            }
        })
    }

    /// Number of lock channels this client's pub/sub connection is subscribed to.
    fn subscribed_channels(&self) -> PyResult<usize> {
        Ok(self.live()?.subscribed_channels())
    }

    /// Number of locks this client currently holds.
    fn held_count(&self) -> PyResult<usize> {
        Ok(self.live()?.held_count())
    }

    fn __repr__(&self) -> String {
        format!("<ferrolock._native.Client id={}>", self.inner.id())
    }
}

// ---------------------------------------------------------------------------
// Holder.

/// One holder of one lock (native part of `ferrolock.Lock` / `ferrolock.aio.Lock`).
/// Re-entrant: the holder may acquire again and must release as often.
#[pyclass(module = "ferrolock._native", frozen)]
struct Holder {
    lock: Local<ferrolock::Lock>,
    client: Local<ferrolock::Client>,
}

/// Where an asyncio acquire stands, to undo an acquisition nobody will see.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ticket {
    Pending,
    Acquired,
    /// The asyncio future was cancelled before the acquisition completed.
    Abandoned,
    Undone,
}

/// Done-callback of an asyncio acquire: if the asyncio future was cancelled after
/// the core acquired, release that level (the caller got CancelledError).
#[pyclass(module = "ferrolock._native", frozen)]
struct UndoOnCancel {
    ticket: Arc<Mutex<Ticket>>,
    lock: ferrolock::Lock,
}

#[pymethods]
impl UndoOnCancel {
    fn __call__(&self, future: &Bound<'_, PyAny>) -> PyResult<()> {
        if !future.call_method0("cancelled")?.extract::<bool>()? {
            return Ok(());
        }
        let mut ticket = self.ticket.lock().unwrap();
        match *ticket {
            Ticket::Pending => *ticket = Ticket::Abandoned,
            Ticket::Acquired => {
                *ticket = Ticket::Undone;
                let lock = self.lock.clone();
                runtime()?.spawn(async move {
                    let _ = lock.release().await;
                });
            }
            Ticket::Abandoned | Ticket::Undone => {}
        }
        Ok(())
    }
}

impl Holder {
    fn live(&self) -> PyResult<&ferrolock::Lock> {
        self.client.check_process().map_err(to_py)?;
        Ok(&self.lock)
    }
}

fn options(wait: Option<f64>, lease: Option<f64>) -> PyResult<AcquireOptions> {
    Ok(AcquireOptions { wait: seconds(wait, "timeout")?, lease: seconds(lease, "lease")? })
}

fn lease_seconds(d: Option<Duration>) -> Option<f64> {
    d.map(|d| if d == Duration::MAX { f64::INFINITY } else { d.as_secs_f64() })
}

#[pymethods]
impl Holder {
    /// Acquires (blocking, GIL released, interruptible with Ctrl-C). `wait`: longest
    /// wait in seconds (0 = try once, None = forever). `lease`: seconds until the
    /// lock expires with no renewal (None = watchdog). True when acquired.
    #[pyo3(signature = (wait=None, lease=None))]
    fn acquire(&self, py: Python<'_>, wait: Option<f64>, lease: Option<f64>) -> PyResult<bool> {
        let opts = options(wait, lease)?;
        let lock = self.live()?;
        block(py, async move { lock.acquire_hold(opts).await.map(|h| h.is_some()) })
    }

    /// Like `acquire`, as an asyncio future. Cancelling it leaves nothing held.
    #[pyo3(signature = (wait=None, lease=None))]
    fn acquire_async<'py>(&self, py: Python<'py>, wait: Option<f64>, lease: Option<f64>) -> PyResult<Bound<'py, PyAny>> {
        let opts = options(wait, lease)?;
        let lock = self.live()?.clone();
        let ticket = Arc::new(Mutex::new(Ticket::Pending));
        let (ticket2, lock2) = (ticket.clone(), lock.clone());
        let future = awaitable(py, async move {
            let acquired = lock2.acquire_hold(opts).await?.is_some();
            if !acquired {
                return Ok(false);
            }
            let abandoned = {
                let mut t = ticket2.lock().unwrap();
                let abandoned = *t == Ticket::Abandoned;
                *t = if abandoned { Ticket::Undone } else { Ticket::Acquired };
                abandoned
            };
            if abandoned {
                // Nobody awaits this acquisition any more: give it back.
                let _ = lock2.release().await;
                return Ok(false);
            }
            Ok(true)
        })?;
        future.call_method1("add_done_callback", (UndoOnCancel { ticket, lock },))?;
        Ok(future)
    }

    /// Releases one level. True when the lock is free now, False when this holder
    /// still holds it (re-entered). NotOwnedError / LockLostError otherwise.
    fn release(&self, py: Python<'_>) -> PyResult<bool> {
        let lock = self.live()?;
        block(py, async move { lock.release().await.map(|r| r == ferrolock::Released::Unlocked) })
    }

    /// Like `release`, as an asyncio future.
    fn release_async<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let lock = self.live()?.clone();
        awaitable(py, async move { lock.release().await.map(|r| r == ferrolock::Released::Unlocked) })
    }

    /// True if anyone holds the lock (asks Redis).
    fn is_locked(&self, py: Python<'_>) -> PyResult<bool> {
        let lock = self.live()?;
        block(py, lock.is_locked())
    }

    /// Like `is_locked`, as an asyncio future.
    fn is_locked_async<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let lock = self.live()?.clone();
        awaitable(py, async move { lock.is_locked().await })
    }

    /// True if this holder holds the lock, as Redis sees it.
    fn is_held(&self, py: Python<'_>) -> PyResult<bool> {
        let lock = self.live()?;
        block(py, lock.is_held())
    }

    /// Like `is_held`, as an asyncio future.
    fn is_held_async<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let lock = self.live()?.clone();
        awaitable(py, async move { lock.is_held().await })
    }

    /// This holder's hold count as Redis sees it (0: not held by this holder).
    fn hold_count(&self, py: Python<'_>) -> PyResult<u32> {
        let lock = self.live()?;
        block(py, lock.hold_count())
    }

    /// Like `hold_count`, as an asyncio future.
    fn hold_count_async<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let lock = self.live()?.clone();
        awaitable(py, async move { lock.hold_count().await })
    }

    /// Seconds left on the lock's lease (whoever holds it); None when not locked,
    /// inf for a key without expiry.
    fn remaining_lease(&self, py: Python<'_>) -> PyResult<Option<f64>> {
        let lock = self.live()?;
        block(py, async move { lock.remaining_lease().await.map(lease_seconds) })
    }

    /// Like `remaining_lease`, as an asyncio future.
    fn remaining_lease_async<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let lock = self.live()?.clone();
        awaitable(py, async move { lock.remaining_lease().await.map(lease_seconds) })
    }

    /// Deletes the lock whoever holds it and wakes a waiter. True if it was locked.
    fn force_unlock(&self, py: Python<'_>) -> PyResult<bool> {
        let lock = self.live()?;
        block(py, lock.force_unlock())
    }

    /// Like `force_unlock`, as an asyncio future.
    fn force_unlock_async<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let lock = self.live()?.clone();
        awaitable(py, async move { lock.force_unlock().await })
    }

    /// This holder's hold count as known locally (no round-trip).
    fn local_hold_count(&self) -> u32 {
        self.lock.local_hold_count()
    }

    /// True if this holder's latest hold was lost (until it acquires again).
    #[getter]
    fn lost(&self) -> bool {
        self.lock.is_lost()
    }

    /// Why this holder's latest hold was lost, or None.
    #[getter]
    fn lost_reason(&self) -> Option<String> {
        self.lock.lost_error().map(|e| e.message().to_string())
    }

    /// Fencing token of this holder's current hold (fenced locks), or None.
    #[getter]
    fn token(&self) -> Option<u64> {
        self.lock.token()
    }

    /// The lock name.
    #[getter]
    fn name(&self) -> &str {
        self.lock.name()
    }

    /// The owner field this holder writes: `<client id>:<holder id>`.
    #[getter]
    fn owner(&self) -> &str {
        self.lock.owner()
    }

    /// True for fenced locks.
    #[getter]
    fn fenced(&self) -> bool {
        self.lock.is_fenced()
    }

    /// Calls `callback(message)` from a background thread whenever a hold of this
    /// holder is lost; None removes it. Exceptions it raises are reported as unraisable.
    #[pyo3(signature = (callback))]
    fn set_on_lost(&self, callback: Option<Py<PyAny>>) -> PyResult<()> {
        let lock = self.live()?;
        let callback = callback.map(|cb| -> ferrolock::LostCallback {
            let cb = Arc::new(cb);
            Arc::new(move |event: &ferrolock::LostEvent| {
                let _busy = InPython::enter();
                let message = event.error.message().to_string();
                // Not while the interpreter is shutting down.
                let _ = Python::try_attach(|py| {
                    if let Err(e) = cb.call1(py, (message,)) {
                        e.write_unraisable(py, None);
                    }
                });
            })
        });
        lock.set_on_lost(callback);
        Ok(())
    }

    fn __repr__(&self) -> String {
        format!("<ferrolock._native.Holder name={:?} owner={}>", self.lock.name(), self.lock.owner())
    }
}

/// Waits (GIL released) up to `timeout` seconds until no background thread is
/// delivering a result or a callback into Python. Registered with `atexit`.
#[pyfunction]
fn quiesce(py: Python<'_>, timeout: f64) -> bool {
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

/// The native part of the `ferrolock` package.
#[pymodule]
#[pyo3(name = "_native")]
fn native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Client>()?;
    m.add_class::<Holder>()?;
    m.add_class::<UndoOnCancel>()?;
    m.add_function(wrap_pyfunction!(quiesce, m)?)?;
    Ok(())
}
