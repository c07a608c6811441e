//! How failures cross to JS: natively, as JS errors whose `code` is the core's
//! error code (`ERR_NOT_OWNER`, ...) and whose message is the core's message.
//! `lib/errors.js` turns `err.code` into the matching `FerrolockError` subclass.
//!
//! A napi error's status is what napi passes to `napi_create_error` as the code,
//! so [`Coded`] (a `napi::Error` whose status is the code) becomes such an error
//! when a synchronous method throws it. A promise is different: the error of a
//! `#[napi] async fn` is turned into a `napi::Error<Status>` on the runtime's
//! thread, and a `Status` cannot carry our codes. So async methods return the
//! promise of executor.rs's `promise`, which makes the JS error (with `code`) on the JS thread,
//! where the promise settles, and rejects with that very object.

use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::time::Duration;

use ferrolock::ErrorKind;

/// A failure bound for JS: status = the error code (`err.code`), reason = the message.
pub type Coded = napi::Error<&'static str>;

/// What the addon's functions return. (Named `Result`: napi-derive recognizes a
/// fallible return by that name.)
pub type Result<T> = std::result::Result<T, Coded>;

/// `.js()`: a core result as one bound for JS.
pub trait IntoJs<T> {
    fn js(self) -> Result<T>;
}

impl<T> IntoJs<T> for ferrolock::Result<T> {
    fn js(self) -> Result<T> {
        self.map_err(|e| coded(e.kind(), e.message()))
    }
}

/// A failure of napi itself (not expected): `ERR_INTERNAL`.
impl<T> IntoJs<T> for napi::Result<T> {
    fn js(self) -> Result<T> {
        self.map_err(|e| coded(ErrorKind::Internal, format!("ferrolock: napi failed: {}", e.reason)))
    }
}

/// A failure with the code of `kind`.
fn coded(kind: ErrorKind, message: impl ToString) -> Coded {
    napi::Error::new(kind.code(), message)
}

pub fn invalid(message: impl ToString) -> Coded {
    coded(ErrorKind::InvalidArgument, message)
}

/// What core says of every call on a closed client (its constructor is core-private).
pub fn client_closed() -> Coded {
    coded(ErrorKind::ClientClosed, "the ferrolock client is closed; create a new client")
}

pub fn cancelled() -> Coded {
    coded(ErrorKind::Cancelled, "the wait was aborted; nothing was taken")
}

/// A duration in ms from JS (`undefined`/`null` = not given). Fractions round up;
/// ranges are checked by `ferrolock::validate`.
pub fn millis(value: Option<f64>, what: &str) -> Result<Option<Duration>> {
    match value {
        None => Ok(None),
        Some(v) if !v.is_finite() => Err(invalid(format!("{what} = {v} is not a number of milliseconds"))),
        Some(v) => ferrolock::validate::millis(v.ceil() as i64, what).map(Some).js(),
    }
}

/// Runs a synchronous method, turning a panic into an `ERR_INTERNAL` error.
pub fn caught<T>(f: impl FnOnce() -> Result<T>) -> Result<T> {
    std::panic::catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|panic| Err(bug(&panic)))
}

/// A failure of the addon itself (not expected): `ERR_INTERNAL`.
pub fn internal(message: impl ToString) -> Coded {
    coded(ErrorKind::Internal, message)
}

pub fn bug(panic: &Box<dyn Any + Send>) -> Coded {
    let message = if let Some(s) = panic.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic".to_string()
    };
    coded(ErrorKind::Internal, format!("ferrolock bug: {message}"))
}
