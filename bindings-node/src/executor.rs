//! Runs the addon's calls on the JS thread, where ioredis and node-redlock do their
//! I/O too. A call is polled at once inside the napi function that starts it (its
//! request leaves on the client's host connection, host.rs), and again whenever it
//! is woken: by a reply the JS thread reads (host.rs feeds it in), or from core's
//! threads (timers, pub/sub wake-ups, the op lock) through ONE thread-safe function
//! per JS thread, however many tasks wake at once. Promises settle right there, on
//! the JS thread. Before this, every call went JS thread -> runtime thread -> a new
//! thread-safe function -> JS thread: two thread wake-ups per call on top of the
//! network's, which on small VMs cost as much as the round-trip itself.
//!
//! Core's background work (renewals, resolvers of lost replies, the subscriber)
//! stays on the tokio runtime; futures polled here enter it, so their timers and
//! spawns go there, and a renewal never waits for a busy JS thread.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::ptr;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::ThreadId;

use napi::bindgen_prelude::{PromiseRaw, ToNapiValue};
use napi::{sys, Env, JsValue};

use crate::errors::{bug, Result};

static RUNTIME: OnceLock<tokio::runtime::Handle> = OnceLock::new();

/// The runtime that core's background work runs on (set once, at module init).
pub fn set_runtime(handle: tokio::runtime::Handle) {
    let _ = RUNTIME.set(handle);
}

/// Work to do on the JS thread after a round of polls (a host connection's output).
pub type AfterRun = Arc<dyn Fn(&Env) + Send + Sync>;

/// A call in flight, as the executor's queues see it.
trait Run: Send + Sync {
    /// Polls the call once on its JS thread; true when it finished (its promise settled).
    fn run(self: Arc<Self>, env: sys::napi_env) -> bool;
}

/// One call: its future, stored inline with everything else it needs, so that a
/// call costs one allocation (it was three: the task, the boxed future and a boxed
/// closure that settled the promise).
struct Task<T, F> {
    /// `None` once finished. The task lives in an `Arc`, so the future never moves.
    future: Mutex<Option<F>>,
    deferred: Deferred,
    /// In a run queue already: a second wake adds nothing.
    queued: AtomicBool,
    home: Arc<Remote>,
    result: std::marker::PhantomData<fn() -> T>,
}

/// What other threads reach of a JS thread's executor.
struct Remote {
    thread: ThreadId,
    queue: Mutex<Vec<Arc<dyn Run>>>,
    after: Mutex<Vec<AfterRun>>,
    /// A call of the thread-safe function is on its way: wakes until then ride on it.
    signalled: AtomicBool,
    tsfn: Tsfn,
}

struct Tsfn(sys::napi_threadsafe_function);
// Node's thread-safe functions are made to be called from any thread.
unsafe impl Send for Tsfn {}
unsafe impl Sync for Tsfn {}

/// A JS thread's executor.
struct Local {
    remote: Arc<Remote>,
    ready: RefCell<VecDeque<Arc<dyn Run>>>,
    /// The after-run list's spare buffer (swapped with the one other threads fill).
    spare: RefCell<Vec<AfterRun>>,
    running: Cell<bool>,
    /// Calls not settled yet: while there are any, the thread-safe function keeps
    /// the event loop alive (a pending `await lock.acquire()` must not let Node exit).
    live: Cell<usize>,
    referenced: Cell<bool>,
}

thread_local! {
    static LOCAL: RefCell<Option<Rc<Local>>> = const { RefCell::new(None) };
    /// This thread's id, read on every wake (`std::thread::current` clones a handle).
    static THREAD: ThreadId = std::thread::current().id();
}

impl Remote {
    fn on_this_thread(&self) -> bool {
        THREAD.with(|id| *id) == self.thread
    }

    /// True when the JS thread is inside a run right now (so it will look at its queues).
    fn running_here(&self) -> bool {
        self.on_this_thread() && LOCAL.with(|l| l.borrow().as_ref().is_some_and(|l| l.running.get()))
    }

    fn signal(&self) {
        if !self.signalled.swap(true, Ordering::AcqRel) {
            // napi_closing once the environment is gone: nothing is left to run then.
            unsafe { sys::napi_call_threadsafe_function(self.tsfn.0, ptr::null_mut(), sys::ThreadsafeFunctionCallMode::nonblocking) };
        }
    }

    /// Runs `f` on the JS thread after the current (or next) round of polls.
    fn after_run(&self, f: AfterRun) {
        self.after.lock().unwrap().push(f);
        if !self.running_here() {
            self.signal();
        }
    }
}

impl<T, F> Wake for Task<T, F>
where
    T: ToNapiValue + Send + 'static,
    F: Future<Output = Result<T>> + Send + 'static,
{
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if self.queued.swap(true, Ordering::AcqRel) {
            return;
        }
        let home = &self.home;
        if home.running_here() {
            LOCAL.with(|l| {
                if let Some(local) = l.borrow().as_ref() {
                    local.ready.borrow_mut().push_back(self.clone());
                }
            });
        } else {
            home.queue.lock().unwrap().push(self.clone());
            home.signal();
        }
    }
}

impl<T, F> Run for Task<T, F>
where
    T: ToNapiValue + Send + 'static,
    F: Future<Output = Result<T>> + Send + 'static,
{
    fn run(self: Arc<Self>, env: sys::napi_env) -> bool {
        self.queued.store(false, Ordering::Release);
        let waker = Waker::from(self.clone());
        let mut slot = self.future.lock().unwrap();
        let Some(future) = slot.as_mut() else { return false };
        // Pinned in place: the task is in an Arc and the future is dropped there, never moved.
        let future = unsafe { Pin::new_unchecked(future) };
        // Only calls polled here send on the host connection (not, say, the blocking
        // shutdown of an exiting environment).
        let polled = ferrolock::HostLink::polling(|| {
            std::panic::catch_unwind(AssertUnwindSafe(|| future.poll(&mut Context::from_waker(&waker))))
        });
        let result = match polled {
            Ok(Poll::Pending) => return false,
            Ok(Poll::Ready(result)) => result,
            Err(panic) => Err(bug(&panic)),
        };
        *slot = None;
        drop(slot);
        settle(env, &self.deferred, result);
        true
    }
}

impl Local {
    fn get(env: &Env) -> napi::Result<Rc<Local>> {
        if let Some(local) = LOCAL.with(|l| l.borrow().clone()) {
            return Ok(local);
        }
        let env = env.raw();
        let mut name = ptr::null_mut();
        let label = "ferrolock";
        napi::check_status!(unsafe { sys::napi_create_string_utf8(env, label.as_ptr().cast(), label.len() as isize, &mut name) })?;
        let mut tsfn = ptr::null_mut();
        napi::check_status!(unsafe {
            sys::napi_create_threadsafe_function(
                env,
                ptr::null_mut(),
                ptr::null_mut(),
                name,
                0,
                1,
                ptr::null_mut(),
                None,
                ptr::null_mut(),
                Some(woken),
                &mut tsfn,
            )
        })?;
        napi::check_status!(unsafe { sys::napi_unref_threadsafe_function(env, tsfn) })?;
        let remote = Arc::new(Remote {
            thread: THREAD.with(|id| *id),
            queue: Mutex::new(Vec::new()),
            after: Mutex::new(Vec::new()),
            signalled: AtomicBool::new(false),
            tsfn: Tsfn(tsfn),
        });
        let local = Rc::new(Local {
            remote,
            ready: RefCell::new(VecDeque::new()),
            spare: RefCell::new(Vec::new()),
            running: Cell::new(false),
            live: Cell::new(0),
            referenced: Cell::new(false),
        });
        LOCAL.with(|l| *l.borrow_mut() = Some(local.clone()));
        Ok(local)
    }

    /// Polls every task that is ready, until none is, then does the after-run work.
    fn run(&self, env: sys::napi_env) {
        if self.running.replace(true) {
            return; // re-entered (JS called back into the addon from an after-run hook): the outer run goes on
        }
        let _runtime = RUNTIME.get().map(|rt| rt.enter());
        loop {
            loop {
                let next = self.ready.borrow_mut().pop_front();
                let Some(task) = next else { break };
                if task.run(env) {
                    self.live.set(self.live.get() - 1);
                }
            }
            self.ready.borrow_mut().extend(self.remote.queue.lock().unwrap().drain(..));
            // Swapped with a spare, not taken: the list keeps its capacity (it fills on
            // every call that writes on a host connection).
            let mut after = self.spare.take();
            std::mem::swap(&mut after, &mut *self.remote.after.lock().unwrap());
            if after.is_empty() && self.ready.borrow().is_empty() {
                self.spare.replace(after);
                break;
            }
            let env = Env::from_raw(env);
            for f in after.drain(..) {
                // A hook's panic must not unwind into Node.
                let _ = std::panic::catch_unwind(AssertUnwindSafe(|| f(&env)));
            }
            self.spare.replace(after);
        }
        self.running.set(false);
        self.keep_alive(env);
    }

    fn keep_alive(&self, env: sys::napi_env) {
        let wanted = self.live.get() > 0;
        if wanted != self.referenced.get() {
            self.referenced.set(wanted);
            let tsfn = self.remote.tsfn.0;
            unsafe {
                if wanted {
                    sys::napi_ref_threadsafe_function(env, tsfn);
                } else {
                    sys::napi_unref_threadsafe_function(env, tsfn);
                }
            }
        }
    }
}

/// The thread-safe function's callback: some task was woken from another thread.
unsafe extern "C" fn woken(env: sys::napi_env, _js: sys::napi_value, _context: *mut std::ffi::c_void, _data: *mut std::ffi::c_void) {
    if env.is_null() {
        return; // the environment is going away
    }
    if let Some(local) = LOCAL.with(|l| l.borrow().clone()) {
        local.remote.signalled.store(false, Ordering::Release);
        let _ = std::panic::catch_unwind(AssertUnwindSafe(|| local.run(env)));
    }
}

/// Runs `f` (which may wake tasks, e.g. by feeding replies in) as part of a round
/// of polls, so that its wake-ups are polled right after it, not one event-loop turn later.
pub fn drive(env: &Env, f: impl FnOnce()) {
    let Ok(local) = Local::get(env) else { return f() };
    let outer = local.running.replace(true);
    let fed = std::panic::catch_unwind(AssertUnwindSafe(f));
    local.running.set(outer);
    if !outer {
        let _ = std::panic::catch_unwind(AssertUnwindSafe(|| local.run(env.raw())));
    }
    if let Err(panic) = fed {
        tracing::error!("{}", bug(&panic).reason);
    }
}

/// A handle that reaches the executor of the calling JS thread from anywhere.
#[derive(Clone)]
pub struct Executor(Arc<Remote>);

impl Executor {
    pub fn here(env: &Env) -> napi::Result<Executor> {
        Ok(Executor(Local::get(env)?.remote.clone()))
    }

    /// Runs `f` on its JS thread after the current (or next) round of polls.
    pub fn after_run(&self, f: AfterRun) {
        self.0.after_run(f);
    }
}

struct Deferred(sys::napi_deferred);
// Used on the JS thread only (the task settles it there); it travels inside the
// task, which other threads wake.
unsafe impl Send for Deferred {}
unsafe impl Sync for Deferred {}

/// Runs `fut` as a call of this JS thread; the promise resolves with its value or
/// rejects with its failure as a coded JS error (a panic: `ERR_INTERNAL`).
/// `fut` owns what it uses: nothing keeps the JS receiver alive meanwhile.
pub fn promise<'env, T, F>(env: &'env Env, fut: F) -> napi::Result<PromiseRaw<'env, T>>
where
    T: ToNapiValue + Send + 'static,
    F: Future<Output = Result<T>> + Send + 'static,
{
    let promise = raw_promise(env.raw(), fut)?;
    Ok(PromiseRaw::new(env.raw(), promise))
}

/// [`promise`] for the raw callbacks (fast.rs): the promise as a plain value.
pub fn raw_promise<T, F>(env: sys::napi_env, fut: F) -> napi::Result<sys::napi_value>
where
    T: ToNapiValue + Send + 'static,
    F: Future<Output = Result<T>> + Send + 'static,
{
    let local = Local::get(&Env::from_raw(env))?;
    let (mut deferred, mut promise) = (ptr::null_mut(), ptr::null_mut());
    napi::check_status!(unsafe { sys::napi_create_promise(env, &mut deferred, &mut promise) })?;
    let task = Arc::new(Task {
        future: Mutex::new(Some(fut)),
        deferred: Deferred(deferred),
        queued: AtomicBool::new(true),
        home: local.remote.clone(),
        result: std::marker::PhantomData,
    });
    local.live.set(local.live.get() + 1);
    local.ready.borrow_mut().push_back(task);
    local.run(env);
    Ok(promise)
}

fn settle<T: ToNapiValue>(env: sys::napi_env, deferred: &Deferred, result: Result<T>) {
    let resolved = match result {
        Ok(value) => unsafe { T::to_napi_value(env, value) }.map_err(|e| crate::errors::internal(e.reason)),
        Err(e) => Err(e),
    };
    unsafe {
        match resolved {
            Ok(value) => {
                sys::napi_resolve_deferred(env, deferred.0, value);
            }
            Err(e) => {
                // napi makes the error (with `code`) here, on the JS thread.
                let error = napi::JsError::from(e).into_unknown(Env::from_raw(env));
                sys::napi_reject_deferred(env, deferred.0, error.raw());
            }
        }
    }
}
