//! Errors: a core `ErrorKind` -> the exception classes of `ferrolock._errors`
//! (DESIGN §4). Call sites write `core_result.py()?`.

use std::time::Duration;

use ferrolock::{validate, ErrorKind};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

static ERRORS_MODULE: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

fn class_named<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyType>> {
    let module = ERRORS_MODULE.get_or_try_init(py, || py.import("ferrolock._errors").map(Bound::unbind))?;
    Ok(module.bind(py).getattr(name)?.cast_into::<PyType>()?)
}

fn error_class<'py>(py: Python<'py>, kind: ErrorKind) -> PyResult<Bound<'py, PyType>> {
    let name = match kind {
        ErrorKind::NotAcquired => "LockTimeoutError",
        ErrorKind::NotOwner => "NotOwnedError",
        ErrorKind::LockLost => "LockLostError",
        ErrorKind::Connection => "ConnectionError",
        ErrorKind::WrongType => "WrongTypeError",
        ErrorKind::InvalidArgument => "InvalidArgumentError",
        ErrorKind::PermissionDenied => "PermissionDeniedError",
        ErrorKind::NotReplicated => "NotReplicatedError",
        // Cancelled, Internal, and anything a later core adds: the base class,
        // with the core's message and code.
        ErrorKind::ClientClosed => "ClientClosedError",
        _ => "LockError",
    };
    class_named(py, name)
}

/// The message of ClientClosedError (the core's, for calls the binding refuses itself).
const CLOSED: &str = "the ferrolock client is closed; create a new client";

/// ClientClosedError, for a call on a client that was closed.
pub(crate) fn client_closed() -> PyErr {
    Python::attach(|py| match class_named(py, "ClientClosedError").and_then(|class| class.call1((CLOSED,))) {
        Ok(exception) => PyErr::from_value(exception),
        Err(e) => e,
    })
}

/// The Python exception for a core error, where the caller holds the GIL. Its
/// `code` is the core kind's (`ERR_NOT_OWNER`, ...): the class's own, or, for the
/// kinds raised as the base class (cancelled, internal), the kind's.
pub(crate) fn to_py(py: Python<'_>, err: ferrolock::Error) -> PyErr {
    let exception = error_class(py, err.kind()).and_then(|class| {
        let exception = class.call1((err.message(),))?;
        exception.setattr("code", err.kind().code())?;
        Ok(exception)
    });
    match exception {
        Ok(exception) => PyErr::from_value(exception),
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
