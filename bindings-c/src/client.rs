//! Clients: connect, free, id.

use std::ffi::{c_char, CString};
use std::time::Duration;

use ferrolock::{Client, Error};

use crate::ffi::{self, answer_new, arg, block_on, c_str, internal, reclaim};
use crate::status::ferrolock_status;

/// A connection to one Redis server, shared by all its lock handles.
/// Thread-safe: create one per process and share it between threads.
pub struct ferrolock_client {
    pub(crate) client: Client,
    id: CString,
}

const _: () = ffi::shared_between_threads::<ferrolock_client>();

impl ferrolock_client {
    fn connect(url: &str, watchdog_timeout_ms: i64) -> Result<Self, Error> {
        let mut builder = Client::builder(url);
        if watchdog_timeout_ms > 0 {
            builder = builder.watchdog_timeout(Duration::from_millis(watchdog_timeout_ms as u64));
        }
        let client = block_on(None, builder.connect())??;
        let id = CString::new(client.id()).map_err(|_| internal("client id contains a NUL byte"))?;
        Ok(ferrolock_client { client, id })
    }
}

/// Connects to Redis and checks that it answers.
///
/// @param url `redis://[user:password@]host[:port][/db]`, or `rediss://` for TLS.
///        Passwords never appear in error messages.
/// @param watchdog_timeout_ms lease of locks acquired without an explicit lease
///        (renewed every third of it while held); `<= 0` means the default 30000.
///        Otherwise 30 ms to 7 days.
/// @param out receives the new client, or NULL on failure. Free it with
///        `ferrolock_client_free()`.
/// @return `FERROLOCK_OK`;
///         `FERROLOCK_ERR_INVALID_ARGUMENT` (NULL `url`/`out`, malformed URL,
///         `watchdog_timeout_ms` out of range);
///         `FERROLOCK_ERR_CONNECTION` (unreachable, refused, timeout, wrong password);
///         `FERROLOCK_ERR_PERMISSION` (the ACL user may not run PING);
///         `FERROLOCK_ERR_INTERNAL`.
///
/// Thread-safe. Blocks for at most about 4 s (connect + response timeout).
#[no_mangle]
pub unsafe extern "C" fn ferrolock_client_connect(
    url: *const c_char,
    watchdog_timeout_ms: i64,
    out: *mut *mut ferrolock_client,
) -> ferrolock_status {
    ffi!({ answer_new(out, || ferrolock_client::connect(c_str(url, "url")?, watchdog_timeout_ms)) })
}

/// Releases every lock this client still holds, through any handle and thread
/// (best effort: when Redis does not answer it gives up after about 4 s, and those
/// locks expire at the end of their lease), stops its background work and frees
/// it. NULL is fine.
///
/// Lock handles made from this client stay valid memory and must still be freed
/// with `ferrolock_lock_free()` (before or after this call); other calls on them
/// return `FERROLOCK_ERR_INVALID_ARGUMENT` afterwards, and waiting acquires on
/// other threads return it at once. After fork(), a child may free a client
/// inherited from its parent: nothing is sent to Redis then, the parent's locks
/// stay with the parent.
///
/// Must not be called from an on_lost callback of one of its locks.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_client_free(client: *mut ferrolock_client) {
    ffi!(void, {
        if let Some(client) = reclaim(client, |c| &c.client) {
            let _ = block_on(Some(&client.client), client.client.shutdown());
        }
        Ok(())
    })
}

/// This client's id: a random UUID, the first part of every owner field it writes
/// (`<client-id>:<holder-id>`). Valid until the client is freed. Returns "" (and
/// sets the last error) for a NULL client.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_client_id(client: *const ferrolock_client) -> *const c_char {
    ffi!(or c"".as_ptr(), { Ok(arg(client, "client")?.id.as_ptr()) })
}
