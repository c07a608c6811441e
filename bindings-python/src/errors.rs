//! Errors: a core `ErrorKind` -> the exception classes of `ferrolock._errors`
//! (DESIGN §4). Call sites write `core_result.py()?`.

use std::time::Duration;

use ferrolock::{validate, ErrorKind};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

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

/// The Python exception for a core error, where the caller holds the GIL.
pub(crate) fn to_py(py: Python<'_>, err: ferrolock::Error) -> PyErr {
    match error_class(py, err.kind()) {
        Ok(class) => PyErr::from_type(class, err.message().to_string()),
        Err(e) => e,
    }
}

/// `.py()`: a core result as a Python one (the error becomes its exception).
pub(crate) trait PyResultExt<T> {
    fn py(self) -> PyResult<T>;
}

impl<T> PyResultExt<T> for ferrolock::Result<T> {
    fn py(self) -> PyResult<T> {
        self.map_err(|err| Python::attach(|py| to_py(py, err)))
    }
}

/// A duration argument in seconds, checked by the core (InvalidArgumentError
/// naming `what` when it is negative, not finite or absurd).
pub(crate) fn seconds(value: Option<f64>, what: &str) -> PyResult<Option<Duration>> {
    value.map(|v| validate::seconds(v, what)).transpose().py()
}
