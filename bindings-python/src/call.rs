//! One body for a blocking call and its asyncio twin.
//!
//! Most native methods exist twice for Python: `x` blocks (GIL released, Ctrl-C
//! interrupts it) and `x_async` returns an asyncio future. Both run the same core
//! work, so a method's body is written once and gives a [`Call`]; [`twin_methods!`]
//! emits the two Python methods around it.

use std::future::Future;

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
