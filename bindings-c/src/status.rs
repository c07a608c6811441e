//! Statuses: `ferrolock_status`, what each core error becomes, the thread's last
//! error message, status names and the library version; and the errors the binding
//! makes itself (`invalid`, `internal`), which every file below ffi.rs may need.

use std::cell::RefCell;
use std::ffi::{c_char, CStr, CString};
use std::panic::catch_unwind;

use ferrolock::{Error, ErrorKind};

/// Result of every ferrolock call that can fail. `FERROLOCK_OK` is 0; every other
/// value comes with a message from `ferrolock_last_error()` on the same thread.
/// The numeric values are part of the ABI: new statuses are only ever appended.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ferrolock_status {
    /// Success.
    FERROLOCK_OK = 0,
    /// A try-once or bounded acquire ran out of time: someone else holds the lock.
    FERROLOCK_NOT_ACQUIRED,
    /// Release (or a per-holder query) by a thread that does not hold the lock through this handle.
    FERROLOCK_ERR_NOT_OWNER,
    /// This thread's hold was lost (lease expired, force-unlocked, or the server lost it);
    /// the critical section was not protected since then.
    FERROLOCK_ERR_LOCK_LOST,
    /// Redis unreachable, connection refused or broken, timeout, or failed authentication.
    FERROLOCK_ERR_CONNECTION,
    /// The key at the lock name holds something that is not a lock.
    FERROLOCK_ERR_WRONG_TYPE,
    /// Bad input: NULL pointer, invalid UTF-8 or out-of-range name, bad URL,
    /// out-of-range duration, a handle that was freed (also a second free), is of
    /// the other type or never came from ferrolock, or a client that belongs to the
    /// parent process of a fork().
    FERROLOCK_ERR_INVALID_ARGUMENT,
    /// A bug in ferrolock or a reply it does not understand (a caught panic lands here).
    FERROLOCK_ERR_INTERNAL,
    /// A Redis ACL refused a command, key or channel (NOPERM); the message names what
    /// was refused and the ACL rule that would allow it (e.g. "+hincrby").
    FERROLOCK_ERR_PERMISSION,
    /// Behind Sentinel or on a Cluster: fewer replicas acknowledged an acquire within
    /// `replica_ack_timeout_ms` than the `replica_ack` policy needs (the message names
    /// how many of how many), or the master has none, so the acquire was undone (a
    /// failover could have lost it) and nothing is held. Retrying is safe.
    FERROLOCK_ERR_NOT_REPLICATED,
    /// The lock's client was freed (`ferrolock_client_free()`): every call on a lock
    /// handle made from it, including acquires that were waiting when it was freed.
    /// Free the handle, and create a new client and handles to go on.
    FERROLOCK_ERR_CLIENT_CLOSED,
}

use ferrolock_status::*;

impl ferrolock_status {
    /// Every status, in numeric order. New statuses are appended to the enum and here
    /// (the assertion below checks the order; `name` does not compile without them).
    const ALL: [ferrolock_status; 11] = [
        FERROLOCK_OK,
        FERROLOCK_NOT_ACQUIRED,
        FERROLOCK_ERR_NOT_OWNER,
        FERROLOCK_ERR_LOCK_LOST,
        FERROLOCK_ERR_CONNECTION,
        FERROLOCK_ERR_WRONG_TYPE,
        FERROLOCK_ERR_INVALID_ARGUMENT,
        FERROLOCK_ERR_INTERNAL,
        FERROLOCK_ERR_PERMISSION,
        FERROLOCK_ERR_NOT_REPLICATED,
        FERROLOCK_ERR_CLIENT_CLOSED,
    ];

    /// The status with this numeric value, if there is one.
    fn from_int(value: i32) -> Option<ferrolock_status> {
        usize::try_from(value).ok().and_then(|i| Self::ALL.get(i)).copied()
    }

    /// The C name of the status.
    const fn name(self) -> &'static CStr {
        match self {
            FERROLOCK_OK => c"FERROLOCK_OK",
            FERROLOCK_NOT_ACQUIRED => c"FERROLOCK_NOT_ACQUIRED",
            FERROLOCK_ERR_NOT_OWNER => c"FERROLOCK_ERR_NOT_OWNER",
            FERROLOCK_ERR_LOCK_LOST => c"FERROLOCK_ERR_LOCK_LOST",
            FERROLOCK_ERR_CONNECTION => c"FERROLOCK_ERR_CONNECTION",
            FERROLOCK_ERR_WRONG_TYPE => c"FERROLOCK_ERR_WRONG_TYPE",
            FERROLOCK_ERR_INVALID_ARGUMENT => c"FERROLOCK_ERR_INVALID_ARGUMENT",
            FERROLOCK_ERR_INTERNAL => c"FERROLOCK_ERR_INTERNAL",
            FERROLOCK_ERR_PERMISSION => c"FERROLOCK_ERR_PERMISSION",
            FERROLOCK_ERR_NOT_REPLICATED => c"FERROLOCK_ERR_NOT_REPLICATED",
            FERROLOCK_ERR_CLIENT_CLOSED => c"FERROLOCK_ERR_CLIENT_CLOSED",
        }
    }
}

// `ALL[i]` is the status numbered i, so `from_int` is a plain index.
const _: () = {
    let mut i = 0;
    while i < ferrolock_status::ALL.len() {
        assert!(ferrolock_status::ALL[i] as usize == i, "ferrolock_status::ALL is out of order");
        i += 1;
    }
};

/// A status as passed in from C: any int, since C may hand over a value outside the
/// enum (which would be undefined behaviour as a Rust enum). Shown as
/// `ferrolock_status` in the header (see cbindgen.toml).
pub type FerrolockStatusArg = i32;

/// The status a core error becomes.
pub(crate) fn status_of(kind: ErrorKind) -> ferrolock_status {
    match kind {
        ErrorKind::NotAcquired => FERROLOCK_NOT_ACQUIRED,
        ErrorKind::NotOwner => FERROLOCK_ERR_NOT_OWNER,
        ErrorKind::LockLost => FERROLOCK_ERR_LOCK_LOST,
        ErrorKind::Connection => FERROLOCK_ERR_CONNECTION,
        ErrorKind::WrongType => FERROLOCK_ERR_WRONG_TYPE,
        ErrorKind::InvalidArgument => FERROLOCK_ERR_INVALID_ARGUMENT,
        ErrorKind::PermissionDenied => FERROLOCK_ERR_PERMISSION,
        ErrorKind::NotReplicated => FERROLOCK_ERR_NOT_REPLICATED,
        ErrorKind::ClientClosed => FERROLOCK_ERR_CLIENT_CLOSED,
        // C has no way to cancel a call, so the core has no reason to report one.
        ErrorKind::Cancelled => FERROLOCK_ERR_INVALID_ARGUMENT,
        _ => FERROLOCK_ERR_INTERNAL,
    }
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// The calling thread's last error message (see `ferrolock_last_error()`).
fn last_error() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ptr())
}

/// Sets the calling thread's last error message ("": the call succeeded).
pub(crate) fn set_last_error(message: &str) {
    let message = CString::new(message.replace('\0', "\\0")).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = message);
}

pub(crate) fn invalid(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidArgument, message)
}

pub(crate) fn internal(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::Internal, message)
}

/// The message of the calling thread's last ferrolock call: "" if it succeeded.
/// Valid until the next ferrolock call on this thread; never NULL. Messages name the
/// lock and say what to do; they never contain passwords.
#[no_mangle]
pub extern "C" fn ferrolock_last_error() -> *const c_char {
    // Not `ffi!`: reading the last error must not reset it.
    catch_unwind(last_error).unwrap_or(c"".as_ptr())
}

/// A static name for a status, e.g. "FERROLOCK_ERR_NOT_OWNER";
/// "FERROLOCK_UNKNOWN_STATUS" for a value that is not a status. Never NULL.
#[no_mangle]
pub extern "C" fn ferrolock_status_str(status: FerrolockStatusArg) -> *const c_char {
    ferrolock_status::from_int(status)
        .map_or(c"FERROLOCK_UNKNOWN_STATUS", ferrolock_status::name)
        .as_ptr()
}

/// The library version, e.g. "0.1.0". Static; never NULL.
#[no_mangle]
pub extern "C" fn ferrolock_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_names_match_the_enum() {
        for (i, status) in ferrolock_status::ALL.iter().enumerate() {
            assert_eq!(*status as usize, i);
            let got = unsafe { CStr::from_ptr(ferrolock_status_str(i as i32)) };
            // The C name is the variant's own name.
            assert_eq!(got.to_str().unwrap(), format!("{status:?}"));
        }
        assert_eq!(ferrolock_status::from_int(8), Some(FERROLOCK_ERR_PERMISSION));
        assert_eq!(ferrolock_status::from_int(9), Some(FERROLOCK_ERR_NOT_REPLICATED));
        assert_eq!(ferrolock_status::from_int(10), Some(FERROLOCK_ERR_CLIENT_CLOSED));
        for value in [-1, ferrolock_status::ALL.len() as i32, 42, i32::MIN, i32::MAX] {
            let got = unsafe { CStr::from_ptr(ferrolock_status_str(value)) };
            assert_eq!(got.to_str().unwrap(), "FERROLOCK_UNKNOWN_STATUS", "{value}");
        }
    }

    #[test]
    fn numeric_values_never_change() {
        // The ABI: C programs compiled against an older header keep working.
        let values = [
            (FERROLOCK_OK, 0),
            (FERROLOCK_NOT_ACQUIRED, 1),
            (FERROLOCK_ERR_NOT_OWNER, 2),
            (FERROLOCK_ERR_LOCK_LOST, 3),
            (FERROLOCK_ERR_CONNECTION, 4),
            (FERROLOCK_ERR_WRONG_TYPE, 5),
            (FERROLOCK_ERR_INVALID_ARGUMENT, 6),
            (FERROLOCK_ERR_INTERNAL, 7),
            (FERROLOCK_ERR_PERMISSION, 8),
            (FERROLOCK_ERR_NOT_REPLICATED, 9),
            (FERROLOCK_ERR_CLIENT_CLOSED, 10),
        ];
        for (status, value) in values {
            assert_eq!(status as i32, value, "{status:?}");
        }
        assert_eq!(values.len(), ferrolock_status::ALL.len());
    }
}
