//! The plumbing under every exported function: the [`ffi!`] body (panics caught, the
//! thread's last error set, the outcome turned into what C gets back), arguments
//! (pointers, C strings, durations), handles made and taken back for freeing, and blocking
//! calls on the shared runtime.

use std::ffi::{c_char, CStr};
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use ferrolock::{validate, Client, Error};

use crate::handle::Registry;
// Re-exported: the binding's own errors, which every exported function may make.
pub(crate) use crate::status::{internal, invalid};
use crate::status::{ferrolock_status, set_last_error, status_of};

/// The body of an exported function. The function itself, its docs,
/// `#[no_mangle] pub unsafe extern "C" fn` and signature, is written out at the call
/// site, where cbindgen sees it (cbindgen does not expand macros, so a macro that
/// made the whole function would drop it from the header). `ffi!` wraps the body, a
/// block returning `Result<_, Error>`, so `?` works on every argument check and
/// core call:
///
/// - `ffi!({ ...; Ok(()) })` returns a `ferrolock_status` (`FERROLOCK_OK` for `Ok`);
/// - `ffi!(or FALLBACK, { ...; Ok(value) })` returns the value, or FALLBACK on failure;
/// - `ffi!(void, { ...; Ok(()) })` returns nothing.
///
/// Every form catches panics (a Rust panic never unwinds into C: it becomes
/// `FERROLOCK_ERR_INTERNAL`) and sets the calling thread's last error ("" on success).
macro_rules! ffi {
    (void, $body:block) => {
        $crate::ffi::run_or((), || -> ::std::result::Result<(), ::ferrolock::Error> { $body })
    };
    (or $fallback:expr, $body:block) => {
        $crate::ffi::run_or($fallback, || -> ::std::result::Result<_, ::ferrolock::Error> { $body })
    };
    ($body:block) => {
        $crate::ffi::run(|| -> ::std::result::Result<(), ::ferrolock::Error> { $body })
    };
}

pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_string());
    format!("internal error in ferrolock (a bug, please report it): {what}")
}

/// Runs a body with panics caught and sets this thread's last error (cleared on
/// success): the body's value, or the status of its failure.
fn outcome<T>(body: impl FnOnce() -> Result<T, Error>) -> Result<T, ferrolock_status> {
    let (result, message) = match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(value)) => (Ok(value), String::new()),
        Ok(Err(e)) => (Err(status_of(e.kind())), e.message().to_string()),
        Err(payload) => (Err(ferrolock_status::FERROLOCK_ERR_INTERNAL), panic_message(&*payload)),
    };
    set_last_error(&message);
    result
}

/// `ffi!({ .. })`: the body's outcome as a status.
pub(crate) fn run(body: impl FnOnce() -> Result<(), Error>) -> ferrolock_status {
    outcome(body).err().unwrap_or(ferrolock_status::FERROLOCK_OK)
}

/// `ffi!(or fallback, { .. })` and `ffi!(void, { .. })`: the body's value, or `fallback`.
pub(crate) fn run_or<T>(fallback: T, body: impl FnOnce() -> Result<T, Error>) -> T {
    outcome(body).unwrap_or(fallback)
}

/// A mutex's data even if a thread panicked while holding it: every use here leaves
/// the data consistent between statements, and a panic must not make a handle unusable.
pub(crate) fn lock_ignoring_poison<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

pub(crate) unsafe fn out<'a, T>(ptr: *mut T, what: &str) -> Result<&'a mut T, Error> {
    ptr.as_mut().ok_or_else(|| invalid(format!("{what} is NULL; pass a pointer to store the result")))
}

/// The body of a function that answers through `out`: checks `out`, then stores the
/// value (`out` is written only on success).
pub(crate) unsafe fn answer<T>(out: *mut T, value: impl FnOnce() -> Result<T, Error>) -> Result<(), Error> {
    let out = self::out(out, "out")?;
    *out = value()?;
    Ok(())
}

/// The body of a constructor: checks `out` and sets `*out = NULL` first, so a failed
/// constructor never leaves garbage behind, then registers the new object (handle.rs)
/// and stores its handle.
pub(crate) unsafe fn answer_new<C, T>(
    out: *mut *mut C,
    registry: &Registry<T>,
    make: impl FnOnce() -> Result<T, Error>,
) -> Result<(), Error> {
    let out = self::out(out, "out")?;
    *out = std::ptr::null_mut();
    *out = std::ptr::without_provenance_mut(registry.insert(make()?)?);
    Ok(())
}

pub(crate) unsafe fn c_str<'a>(ptr: *const c_char, what: &str) -> Result<&'a str, Error> {
    if ptr.is_null() {
        return Err(invalid(format!("{what} is NULL")));
    }
    CStr::from_ptr(ptr)
        .to_str()
        .map_err(|_| invalid(format!("{what} is not valid UTF-8")))
}

/// A duration argument in ms where -1 means "none" (wait forever / watchdog lease).
pub(crate) fn optional_millis(value: i64, what: &str, minus_one: &str, min: i64) -> Result<Option<Duration>, Error> {
    if value == -1 {
        return Ok(None);
    }
    if value < min {
        return Err(invalid(format!(
            "{what} = {value} is out of range; give -1 ({minus_one}) or {min} ms to 7 days"
        )));
    }
    validate::millis(value, what).map(Some)
}

/// Takes back a handle to free it: `None` for NULL, and for a handle inherited over
/// fork(), which is leaked (the parent's runtime threads do not exist in the child).
/// A freed (or foreign) handle is `InvalidArgument`.
pub(crate) fn reclaim<C, T>(ptr: *const C, registry: &Registry<T>, arg: &str, client: fn(&T) -> &Client) -> Result<Option<Arc<T>>, Error> {
    let Some(handle) = registry.remove(ptr.addr(), arg)? else { return Ok(None) };
    if client(&handle).check_process().is_err() {
        std::mem::forget(handle);
        return Ok(None);
    }
    Ok(Some(handle))
}

/// Blocks the calling thread on `future`: the thread polls it and does its I/O on a
/// connection of its own (core's `blocking`). Refuses a client created before fork()
/// (its threads and sockets stayed in the parent).
pub(crate) fn block_on<F>(client: Option<&Client>, future: F) -> Result<F::Output, Error>
where
    F: Future + Send,
    F::Output: Send,
{
    if let Some(client) = client {
        client.check_process()?;
    }
    let started = |e: std::io::Error| internal(format!("cannot start the ferrolock runtime threads: {e}"));
    if tokio::runtime::Handle::try_current().is_ok() {
        // Called from a library thread (an on_lost callback): a runtime cannot be
        // blocked on from inside itself, so wait on a helper thread instead (on the
        // runtime: a connection of its own would die with the thread).
        let rt = ferrolock::runtime::shared().map_err(started)?;
        std::thread::scope(|s| s.spawn(|| rt.block_on(future)).join()).map_err(|p| internal(panic_message(&*p)))
    } else {
        ferrolock::blocking::block_on(future).map_err(started)
    }
}

/// Handles are shared between C threads: `shared_between_threads::<T>()` in a const
/// makes sure a handle type allows it.
pub(crate) const fn shared_between_threads<T: Send + Sync>() {}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrolock::ErrorKind;
    use crate::status::ferrolock_last_error;
    use crate::status::ferrolock_status::*;

    fn last_error_text() -> String {
        unsafe { CStr::from_ptr(ferrolock_last_error()) }.to_str().unwrap().to_string()
    }

    #[test]
    fn a_panic_becomes_internal_with_a_message() {
        let status = run(|| panic!("boom"));
        assert_eq!(status, FERROLOCK_ERR_INTERNAL);
        assert!(last_error_text().contains("boom"), "{}", last_error_text());
        assert_eq!(run(|| Ok(())), FERROLOCK_OK);
        assert_eq!(last_error_text(), "");
    }

    #[test]
    fn every_form_of_the_macro_catches_panics() {
        let status: ferrolock_status = ffi!({ panic!("in a status body") });
        assert_eq!(status, FERROLOCK_ERR_INTERNAL);
        let value: i32 = ffi!(or -1, { panic!("in a value body") });
        assert_eq!(value, -1);
        assert!(last_error_text().contains("in a value body"), "{}", last_error_text());
        ffi!(void, { panic!("in a void body") });
        assert!(last_error_text().contains("in a void body"), "{}", last_error_text());
        let value: i32 = ffi!(or -1, { Ok(7) });
        assert_eq!((value, last_error_text()), (7, String::new()));
    }

    #[test]
    fn permission_denied_has_its_own_status() {
        assert_eq!(status_of(ErrorKind::PermissionDenied), FERROLOCK_ERR_PERMISSION);
        let status = run(|| Err(Error::new(ErrorKind::PermissionDenied, "the ACL user needs +hincrby")));
        assert_eq!(status, FERROLOCK_ERR_PERMISSION);
        assert!(last_error_text().contains("+hincrby"), "{}", last_error_text());
    }

    #[test]
    fn not_replicated_has_its_own_status() {
        assert_eq!(status_of(ErrorKind::NotReplicated), FERROLOCK_ERR_NOT_REPLICATED);
        let status = run(|| Err(Error::new(ErrorKind::NotReplicated, "no replica acknowledged the lock")));
        assert_eq!(status, FERROLOCK_ERR_NOT_REPLICATED);
        assert!(last_error_text().contains("replica"), "{}", last_error_text());
    }
}
