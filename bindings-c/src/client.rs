//! Clients: connect (with default or given options), free, id.

use std::ffi::{c_char, CString};
use std::sync::Arc;

use ferrolock::{Client, Error};

use crate::ffi::{self, answer_new, block_on, c_str, internal, reclaim};
use crate::handle::{Kind, Registry};
use crate::options::ferrolock_options;
use crate::status::ferrolock_status;

/// A connection to one Redis deployment (a server, a master behind Sentinel, or a
/// Cluster), shared by all its lock handles.
/// Thread-safe: create one per process and share it between threads.
/// Opaque: a handle value, not a pointer to memory (see "Ownership" at the top).
pub struct ferrolock_client {
    _opaque: [u8; 0],
}

/// What a `ferrolock_client` handle stands for.
pub(crate) struct ClientHandle {
    pub(crate) client: Client,
    id: CString,
}

/// The live client handles (handle.rs).
pub(crate) static CLIENTS: Registry<ClientHandle> = Registry::new(Kind::Client);

const _: () = ffi::shared_between_threads::<ClientHandle>();

/// The live client behind a handle; NULL, freed and foreign handles are refused.
pub(crate) fn client_arg(client: *const ferrolock_client) -> Result<Arc<ClientHandle>, Error> {
    CLIENTS.get(client.addr(), "client")
}

impl ClientHandle {
    /// The one connect: `ferrolock_client_connect()` and `ferrolock_client_connect_opts()`.
    unsafe fn connect(url: *const c_char, options: &ferrolock_options) -> Result<Self, Error> {
        crate::log::init_from_env();
        let builder = options.builder(c_str(url, "url")?)?;
        let client = block_on(None, builder.connect())??;
        let id = CString::new(client.id()).map_err(|_| internal("client id contains a NUL byte"))?;
        Ok(ClientHandle { client, id })
    }
}

/// Connects to Redis with default settings and checks that it answers.
///
/// The same as `ferrolock_client_connect_opts()` with the defaults of
/// `ferrolock_options_init()` and, when `watchdog_timeout_ms > 0`, that watchdog lease.
///
/// @param url the deployment, in one of the forms of `ferrolock_client_connect_opts()`
///        (one server, Sentinel or Cluster). Passwords never appear in error messages.
/// @param watchdog_timeout_ms lease of locks acquired without an explicit lease
///        (renewed every third of it while held); `<= 0` means the default 30000.
///        Otherwise 30 ms to 7 days.
/// @param out receives the new client, or NULL on failure. Free it with
///        `ferrolock_client_free()`.
/// @return like `ferrolock_client_connect_opts()`.
///
/// Thread-safe. Blocks for at most about 4 s (connect + response timeout).
#[no_mangle]
pub unsafe extern "C" fn ferrolock_client_connect(
    url: *const c_char,
    watchdog_timeout_ms: i64,
    out: *mut *mut ferrolock_client,
) -> ferrolock_status {
    ffi!({
        let mut options = ferrolock_options::defaults();
        if watchdog_timeout_ms > 0 {
            options.watchdog_timeout_ms = watchdog_timeout_ms;
        }
        answer_new(out, &CLIENTS, || ClientHandle::connect(url, &options))
    })
}

/// Connects to Redis with the given settings and checks that it answers.
///
/// @param url one of
///        - `redis://[user:password@]host[:port][/db]`, or `rediss://` for TLS
///          (append `#insecure` to skip certificate verification, for tests only):
///          one server. A cluster node given this way is used as the cluster's seed.
///        - `redis+sentinel://[user:password@]host:port[,host:port...]/<master name>[/<db>]`
///          (`rediss+sentinel://` for TLS): the master the sentinels name, followed
///          across failovers. The credentials are the data nodes'; the sentinels' own
///          are `sentinel_username` / `sentinel_password` of the options. The sentinel
///          port defaults to 26379.
///        - `redis+cluster://[user:password@]host:port[,host:port...]`
///          (`rediss+cluster://`): a Redis Cluster, from these seed nodes (port
///          6379 by default; database 0 only).
///        Passwords never appear in error messages.
/// @param options the settings, filled by `ferrolock_options_init()` and then changed
///        as needed; only its first `options->size` bytes are read (fields past them
///        take their defaults). Copied (strings too): it may be freed or reused
///        after the call. NULL means all defaults.
/// @param out receives the new client, or NULL on failure. Free it with
///        `ferrolock_client_free()`.
/// @return `FERROLOCK_OK`;
///         `FERROLOCK_ERR_INVALID_ARGUMENT` (NULL `url`/`out`, malformed URL, an option
///         out of range or unknown, a `size` that is not one of a `ferrolock_options`:
///         the message names the field);
///         `FERROLOCK_ERR_CONNECTION` (unreachable, refused, timeout, wrong password,
///         no sentinel answers or names the master);
///         `FERROLOCK_ERR_PERMISSION` (the ACL user may not run PING);
///         `FERROLOCK_ERR_INTERNAL`.
///
/// Thread-safe. Blocks for at most about `connect_timeout_ms + response_timeout_ms`
/// (4 s with the defaults).
#[no_mangle]
pub unsafe extern "C" fn ferrolock_client_connect_opts(
    url: *const c_char,
    options: *const ferrolock_options,
    out: *mut *mut ferrolock_client,
) -> ferrolock_status {
    ffi!({
        // Checks `out` (and clears `*out`) before anything else.
        answer_new(out, &CLIENTS, || ClientHandle::connect(url, &ferrolock_options::read(options)?))
    })
}

/// Releases every lock this client still holds, through any handle and thread
/// (best effort: when Redis does not answer it gives up after about 4 s, and those
/// locks expire at the end of their lease), stops its background work and frees
/// it. NULL is fine.
///
/// Lock handles made from this client must still be freed with
/// `ferrolock_lock_free()` (before or after this call); other calls on them return
/// `FERROLOCK_ERR_CLIENT_CLOSED` afterwards, and waiting acquires on other threads
/// return it at once. After fork(), a child may free a client inherited from its
/// parent: nothing is sent to Redis then, the parent's locks stay with the parent.
///
/// @return `FERROLOCK_OK` (also for NULL); `FERROLOCK_ERR_INVALID_ARGUMENT` for a
///         handle that was already freed (or never was a client): nothing happens
///         then, and the program does not crash. Programs may ignore the result.
///
/// Must not be called from an on_lost callback of one of its locks.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_client_free(client: *mut ferrolock_client) -> ferrolock_status {
    ffi!({
        if let Some(client) = reclaim(client, &CLIENTS, "client", |c| &c.client)? {
            let _ = block_on(Some(&client.client), client.client.shutdown());
        }
        Ok(())
    })
}

/// This client's id: a random UUID, the first part of every owner field it writes
/// (`<client-id>:<holder-id>`). Valid until the client is freed. Returns "" (and
/// sets the last error) for a NULL or freed client.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_client_id(client: *const ferrolock_client) -> *const c_char {
    // The registry keeps the client, and so the string, alive until it is freed.
    ffi!(or c"".as_ptr(), { Ok(client_arg(client)?.id.as_ptr()) })
}
