//! One body for a blocking call and its asyncio twin.
//!
//! Most native methods exist twice for Python: `x` blocks (GIL released, Ctrl-C
//! interrupts it) and `x_async` returns an asyncio future. Both run the same core
//! work, so a method's body is written once and gives a [`Call`]; [`twin_methods!`]
//! emits the two Python methods around it.

use std::future::Future;
use std::sync::{Arc, Mutex};

use pyo3::prelude::*;

use crate::runtime;

/// The work of one native call, run either way. Any core future is one; a call
/// with more to do as an asyncio future (an acquire) implements it itself.
pub(crate) trait Call: Send + 'static {
    type Output;

    /// Runs it to the end on the shared runtime, blocking with the GIL released
    /// (see [`runtime::block`]).
    fn wait(self, py: Python<'_>) -> PyResult<Self::Output>;

    /// Starts it as an asyncio future of the running loop (see [`runtime::awaitable`]).
    fn future(self, py: Python<'_>) -> PyResult<Bound<'_, PyAny>>;
}

impl<F, T> Call for F
where
    F: Future<Output = ferrolock::Result<T>> + Send + 'static,
    T: for<'py> IntoPyObject<'py> + Send + 'static,
{
    type Output = T;

    fn wait(self, py: Python<'_>) -> PyResult<T> {
        runtime::block(py, self)
    }

    fn future(self, py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
        runtime::awaitable(py, self)
    }
}

/// Emits the `#[pymethods]` block of a native class. In its `twins { .. }` part,
///
/// ```ignore
/// /// Docs of both.
/// #[pyo3(signature = (wait=None))]      // attributes (and #[staticmethod]) go to both
/// fn acquire | acquire_async (&self, wait: Option<f64>) -> bool { /* gives a Call */ }
/// ```
///
/// becomes `acquire(&self, wait, py) -> PyResult<bool>`, which waits for the call,
/// and `acquire_async(&self, wait, py)`, which returns it as an asyncio future
/// (parameters without a trailing comma: `py` is appended). The body checks the
/// arguments (`?` raises) and gives the call, which owns what it uses: as an
/// asyncio future it outlives the method. Everything after `twins { .. }` is
/// passed through as written. (pyo3 does not see methods that a macro emits
/// inside a `#[pymethods]` block, hence a macro around the whole block.)
macro_rules! twin_methods {
    (
        impl $class:ident {
            twins {
                $(
                    $(#[$attr:meta])*
                    fn $name:ident | $name_async:ident ($($param:tt)*) -> $ret:ty $body:block
                )*
            }
            $($plain:tt)*
        }
    ) => {
        #[pyo3::pymethods]
        impl $class {
            $(
                $(#[$attr])*
                #[doc = ""]
                #[doc = "Blocks with the GIL released; Ctrl-C interrupts it (dropping the core future)."]
                fn $name($($param)*, py: pyo3::Python<'_>) -> pyo3::PyResult<$ret> {
                    $crate::call::Call::wait($body, py)
                }

                $(#[$attr])*
                #[doc = ""]
                #[doc = concat!(
                    "The asyncio twin of `", stringify!($name), "`: returns an asyncio future of the ",
                    "running loop; cancelling it drops the core future."
                )]
                fn $name_async<'py>(
                    $($param)*,
                    py: pyo3::Python<'py>,
                ) -> pyo3::PyResult<pyo3::Bound<'py, pyo3::PyAny>> {
                    $crate::call::Call::future($body, py)
                }
            )*

            $($plain)*
        }
    };
}

pub(crate) use twin_methods;

// ---------------------------------------------------------------------------
// Acquisitions: as an asyncio future, an acquire must not leave behind an
// acquisition that nobody sees.

/// Where an asyncio acquisition stands, to give back one nobody will see.
enum Ticket {
    Pending,
    /// Acquired and on its way to Python; the closure gives it back (in the background).
    Acquired(Box<dyn FnOnce() + Send>),
    /// The asyncio future was cancelled before the acquisition completed.
    Abandoned,
    Done,
}

/// An acquisition as a [`Call`]: `take` acquires (`Some(what was taken)`) or
/// times out (`None`), `undo` gives back what was taken, `present` turns the
/// outcome into what Python gets. The asyncio future may be cancelled after the
/// core acquired but before the result reached it: the caller got CancelledError,
/// so the acquisition is given back. (Interrupting or cancelling the core future
/// itself takes nothing: a core guarantee.)
pub(crate) struct Guarded<F, U, P> {
    pub take: F,
    pub undo: U,
    pub present: P,
}

impl<F, T, U, UF, P, O> Call for Guarded<F, U, P>
where
    F: Future<Output = ferrolock::Result<Option<T>>> + Send + 'static,
    T: Clone + Send + 'static,
    U: FnOnce(T) -> UF + Send + 'static,
    UF: Future<Output = ()> + Send + 'static,
    P: FnOnce(Option<T>) -> O + Send + 'static,
    O: for<'py> IntoPyObject<'py> + Send + 'static,
{
    type Output = O;

    fn wait(self, py: Python<'_>) -> PyResult<O> {
        let Guarded { take, present, .. } = self;
        runtime::block(py, take).map(present)
    }

    fn future(self, py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
        let Guarded { take, undo, present } = self;
        let ticket = Arc::new(Mutex::new(Ticket::Pending));
        let ticket2 = ticket.clone();
        let future = async move {
            let Some(taken) = take.await? else {
                return Ok(present(None));
            };
            let (runtime, kept) = (tokio::runtime::Handle::current(), taken.clone());
            let mut undo = Some(undo);
            {
                let mut t = ticket2.lock().unwrap_or_else(|p| p.into_inner());
                if !matches!(*t, Ticket::Abandoned) {
                    let undo = undo.take();
                    let runtime = runtime.clone();
                    *t = Ticket::Acquired(Box::new(move || {
                        if let Some(undo) = undo {
                            runtime.spawn(undo(kept));
                        }
                    }));
                } else {
                    *t = Ticket::Done;
                }
            }
            if let Some(undo) = undo {
                // Cancelled while it completed: nobody awaits this acquisition any more.
                // Given back in a task of its own: the cancellation drops this future at
                // its next await, and a release dropped while it waits for its holder
                // (held by a same-client hand-off still settling) is never sent, which
                // left the lock held by nobody, renewed until the client closed.
                runtime.spawn(undo(taken));
                return Ok(present(None));
            }
            Ok(present(Some(taken)))
        }
        .future(py)?;
        future.call_method1("add_done_callback", (UndoOnCancel { ticket },))?;
        Ok(future)
    }
}

/// Done-callback of an asyncio acquisition: if the asyncio future was cancelled
/// after the core acquired, give the acquisition back (the caller got CancelledError).
#[pyclass(module = "ferrolock._native", frozen)]
pub(crate) struct UndoOnCancel {
    ticket: Arc<Mutex<Ticket>>,
}

#[pymethods]
impl UndoOnCancel {
    fn __call__(&self, future: &Bound<'_, PyAny>) -> PyResult<()> {
        if !future.call_method0("cancelled")?.extract::<bool>()? {
            return Ok(());
        }
        let mut ticket = self.ticket.lock().unwrap_or_else(|p| p.into_inner());
        match std::mem::replace(&mut *ticket, Ticket::Done) {
            Ticket::Pending => *ticket = Ticket::Abandoned,
            Ticket::Acquired(give_back) => give_back(),
            Ticket::Abandoned | Ticket::Done => {}
        }
        Ok(())
    }
}
