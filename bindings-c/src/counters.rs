//! The counting shapes: `ferrolock_semaphore` (Redisson `RSemaphore`),
//! `ferrolock_permits` (`RPermitExpirableSemaphore`) and `ferrolock_latch`
//! (`RCountDownLatch`). Nothing here is owned by a thread or a handle (permits are
//! nobody's, as in Redisson), so a handle is just its client and the core object;
//! the bindings use the core's non-RAII calls (`acquire_permits` / `release`,
//! `Permit::forget` + `release(id)`), since C frees nothing by scope.

use std::ffi::c_char;
use std::sync::Arc;

use ferrolock::{Client, CountDownLatch, Error, ErrorKind, PermitExpirableSemaphore, Semaphore};

use crate::client::{client_arg, ferrolock_client};
use crate::ffi::{self, answer, answer_new, block_on, c_str, invalid, optional_millis, reclaim};
use crate::handle::{Kind, Registry};
use crate::status::ferrolock_status;

/// Bytes a permit id takes in the buffer of `ferrolock_permits_acquire()`: 32 hex
/// digits and the terminating NUL.
pub const FERROLOCK_PERMIT_ID_SIZE: usize = 33;

/// A handle on a semaphore (Redisson `RSemaphore`): permits that anyone may take
/// and give back. Thread-safe. Opaque: a handle value, not a pointer to memory.
pub struct ferrolock_semaphore {
    _opaque: [u8; 0],
}

/// A handle on a permit-expirable semaphore (Redisson `RPermitExpirableSemaphore`):
/// each permit taken has an id (32 hex digits) to release it by, and may have a
/// lease after which it comes back by itself. Thread-safe. Opaque.
pub struct ferrolock_permits {
    _opaque: [u8; 0],
}

/// A handle on a count-down latch (Redisson `RCountDownLatch`). Thread-safe. Opaque.
pub struct ferrolock_latch {
    _opaque: [u8; 0],
}

/// What a counting handle stands for: its client (for `CLIENT_CLOSED` and fork
/// checks) and the core object.
pub(crate) struct Counted<T> {
    client: Client,
    inner: T,
}

pub(crate) type SemaphoreState = Counted<Semaphore>;
pub(crate) type PermitsState = Counted<PermitExpirableSemaphore>;
pub(crate) type LatchState = Counted<CountDownLatch>;

/// The live handles of each kind (handle.rs).
pub(crate) static SEMAPHORES: Registry<SemaphoreState> = Registry::new(Kind::Semaphore);
pub(crate) static PERMITS: Registry<PermitsState> = Registry::new(Kind::Permits);
pub(crate) static LATCHES: Registry<LatchState> = Registry::new(Kind::Latch);

const _: () = ffi::shared_between_threads::<SemaphoreState>();
const _: () = ffi::shared_between_threads::<PermitsState>();
const _: () = ffi::shared_between_threads::<LatchState>();

impl<T> Counted<T> {
    /// The body of a constructor: the client, then the name, then the core object.
    unsafe fn new(
        client: *mut ferrolock_client,
        name: *const c_char,
        what: &str,
        make: impl FnOnce(&Client, &str) -> Result<T, Error>,
    ) -> Result<Self, Error> {
        let client = client_arg(client)?.client.clone();
        client.check_process()?;
        let name = c_str(name, &format!("{what} name"))?;
        let inner = make(&client, name)?;
        Ok(Counted { client, inner })
    }

    /// A blocking call on the server.
    fn call<R: Send>(&self, call: impl std::future::Future<Output = Result<R, Error>> + Send) -> Result<R, Error> {
        block_on(Some(&self.client), call)?
    }
}

/// The live object behind a handle: NULL, freed and foreign handles are refused,
/// and so is every call once the client was freed (`ClientClosed`).
fn arg<C, T>(registry: &Registry<Counted<T>>, handle: *const C, what: &str) -> Result<Arc<Counted<T>>, Error> {
    let state = registry.get(handle.addr(), what)?;
    if state.client.is_closed() {
        // The core's own message for its ClientClosed errors.
        return Err(Error::new(ErrorKind::ClientClosed, "the ferrolock client is closed; create a new client"));
    }
    Ok(state)
}

fn free<C, T>(registry: &Registry<Counted<T>>, handle: *const C, what: &str) -> Result<(), Error> {
    drop(reclaim(handle, registry, what, |s| &s.client)?);
    Ok(())
}

/// `NotAcquired` for a bounded wait that ran out.
fn not_acquired(message: String) -> Error {
    Error::new(ErrorKind::NotAcquired, message)
}

/// Writes `value` to `out` when it is not NULL.
unsafe fn maybe<T>(out: *mut T, value: T) {
    if let Some(out) = out.as_mut() {
        *out = value;
    }
}

// ---------------------------------------------------------------------------------
// ferrolock_semaphore

/// Creates a handle on the semaphore `name` (Redisson `RSemaphore`, the same keys and
/// messages). Sends nothing to Redis; a semaphore that was never given permits has
/// none (`ferrolock_semaphore_try_set_permits()`).
///
/// @param client a live client.
/// @param name NUL-terminated UTF-8, 1 to 4096 bytes. Copied.
/// @param out receives the handle, or NULL on failure. Free it with
///        `ferrolock_semaphore_free()`.
/// @return `FERROLOCK_OK`; `FERROLOCK_ERR_INVALID_ARGUMENT` (NULL argument, empty,
///         too long or non-UTF-8 name); `FERROLOCK_ERR_CLIENT_CLOSED`;
///         `FERROLOCK_ERR_INTERNAL`.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_semaphore_new(
    client: *mut ferrolock_client,
    name: *const c_char,
    out: *mut *mut ferrolock_semaphore,
) -> ferrolock_status {
    ffi!({ answer_new(out, &SEMAPHORES, || Counted::new(client, name, "semaphore", |c, n| c.semaphore(n))) })
}

/// Frees a semaphore handle. NULL is fine. Permits taken through it stay taken
/// (they are nobody's): give them back with `ferrolock_semaphore_release()` on any
/// handle of the name.
///
/// @return `FERROLOCK_OK` (also for NULL); `FERROLOCK_ERR_INVALID_ARGUMENT` for a
///         handle that was already freed (or never was a semaphore handle).
#[no_mangle]
pub unsafe extern "C" fn ferrolock_semaphore_free(sem: *mut ferrolock_semaphore) -> ferrolock_status {
    ffi!({ free(&SEMAPHORES, sem, "sem") })
}

/// Gives the semaphore `permits` free permits if it does not exist yet (Redisson
/// `trySetPermits`); an existing semaphore keeps its count.
///
/// @param permits 0 or more (up to `INT64_MAX`).
/// @param out_set receives true if the permits were set, false if the semaphore
///        existed; may be NULL.
/// @return `FERROLOCK_OK`; `FERROLOCK_ERR_INVALID_ARGUMENT` (NULL or freed handle,
///         `permits` out of range); `FERROLOCK_ERR_WRONG_TYPE` (the key holds
///         something else); `FERROLOCK_ERR_CLIENT_CLOSED`; `FERROLOCK_ERR_CONNECTION`;
///         `FERROLOCK_ERR_PERMISSION`; `FERROLOCK_ERR_INTERNAL`.
///
/// Blocks for one round-trip. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_semaphore_try_set_permits(
    sem: *mut ferrolock_semaphore,
    permits: u64,
    out_set: *mut bool,
) -> ferrolock_status {
    ffi!({
        let sem = arg(&SEMAPHORES, sem, "sem")?;
        let set = sem.call(sem.inner.try_set_permits(permits))?;
        maybe(out_set, set);
        Ok(())
    })
}

/// Takes `permits` free permits, waiting for them at most `wait_ms`. Waiting wakes
/// on the release message, it does not poll.
///
/// @param permits 1 or more (up to `INT64_MAX`); taken all at once or not at all.
/// @param wait_ms -1: wait as long as it takes; 0: try once; otherwise the longest
///        wait in ms (up to 7 days).
/// @return `FERROLOCK_OK` (taken); `FERROLOCK_NOT_ACQUIRED` (too few were free
///         within `wait_ms`; nothing is taken); `FERROLOCK_ERR_INVALID_ARGUMENT` (NULL
///         or freed handle, `permits` or `wait_ms` out of range);
///         `FERROLOCK_ERR_WRONG_TYPE`; `FERROLOCK_ERR_CLIENT_CLOSED` (also when the
///         client is freed while this call waits); `FERROLOCK_ERR_CONNECTION`;
///         `FERROLOCK_ERR_PERMISSION`; `FERROLOCK_ERR_INTERNAL`.
///
/// Blocks the calling thread. Thread-safe. The permits stay taken until someone
/// releases them (freeing the handle or the client does not).
#[no_mangle]
pub unsafe extern "C" fn ferrolock_semaphore_acquire(sem: *mut ferrolock_semaphore, permits: u64, wait_ms: i64) -> ferrolock_status {
    ffi!({
        let sem = arg(&SEMAPHORES, sem, "sem")?;
        let wait = optional_millis(wait_ms, "wait_ms", "wait forever", 0)?;
        if sem.call(sem.inner.acquire_permits(permits, wait))? {
            return Ok(());
        }
        Err(not_acquired(format!(
            "{permits} permit(s) of semaphore \"{}\" were not free within {wait_ms} ms",
            sem.inner.name()
        )))
    })
}

/// Gives `permits` back to the semaphore (anyone may: permits are not owned) and
/// wakes as many waiters.
///
/// @param permits 1 or more (up to `INT64_MAX`).
/// @param out_available receives the free permits right after; may be NULL.
/// @return `FERROLOCK_OK`; `FERROLOCK_ERR_INVALID_ARGUMENT` (NULL or freed handle,
///         `permits` out of range); `FERROLOCK_ERR_WRONG_TYPE`;
///         `FERROLOCK_ERR_CLIENT_CLOSED`; `FERROLOCK_ERR_CONNECTION` (whether the
///         permits went back is unknown); `FERROLOCK_ERR_PERMISSION`; `FERROLOCK_ERR_INTERNAL`.
///
/// Blocks for one round-trip (retried once per call after a lost reply, never
/// applied twice). Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_semaphore_release(
    sem: *mut ferrolock_semaphore,
    permits: u64,
    out_available: *mut u64,
) -> ferrolock_status {
    ffi!({
        let sem = arg(&SEMAPHORES, sem, "sem")?;
        let free = sem.call(sem.inner.release(permits))?;
        maybe(out_available, free);
        Ok(())
    })
}

/// The free permits now (0 for a semaphore that does not exist).
///
/// @param out receives the count.
/// @return `FERROLOCK_OK`; `FERROLOCK_ERR_INVALID_ARGUMENT`; `FERROLOCK_ERR_WRONG_TYPE`;
///         `FERROLOCK_ERR_CLIENT_CLOSED`; `FERROLOCK_ERR_CONNECTION`;
///         `FERROLOCK_ERR_PERMISSION`; `FERROLOCK_ERR_INTERNAL`.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_semaphore_available(sem: *mut ferrolock_semaphore, out: *mut u64) -> ferrolock_status {
    ffi!({
        let sem = arg(&SEMAPHORES, sem, "sem")?;
        answer(out, || sem.call(sem.inner.available()))
    })
}

/// Takes every free permit at once (Redisson `drainPermits`).
///
/// @param out_drained receives how many were taken; may be NULL.
/// @return like `ferrolock_semaphore_available()`.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_semaphore_drain(sem: *mut ferrolock_semaphore, out_drained: *mut u64) -> ferrolock_status {
    ffi!({
        let sem = arg(&SEMAPHORES, sem, "sem")?;
        let drained = sem.call(sem.inner.drain())?;
        maybe(out_drained, drained);
        Ok(())
    })
}

// ---------------------------------------------------------------------------------
// ferrolock_permits

/// Creates a handle on the permit-expirable semaphore `name` (Redisson
/// `RPermitExpirableSemaphore`). Sends nothing to Redis.
///
/// @param client a live client.
/// @param name NUL-terminated UTF-8, 1 to 4096 bytes. Copied.
/// @param out receives the handle, or NULL on failure. Free it with
///        `ferrolock_permits_free()`.
/// @return like `ferrolock_semaphore_new()`.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_permits_new(
    client: *mut ferrolock_client,
    name: *const c_char,
    out: *mut *mut ferrolock_permits,
) -> ferrolock_status {
    ffi!({
        answer_new(out, &PERMITS, || {
            Counted::new(client, name, "permit-expirable semaphore", |c, n| c.permit_expirable_semaphore(n))
        })
    })
}

/// Frees a permit-expirable semaphore handle. NULL is fine. Permits taken through
/// it stay taken until released by id or until their lease ends.
///
/// @return like `ferrolock_semaphore_free()`.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_permits_free(ps: *mut ferrolock_permits) -> ferrolock_status {
    ffi!({ free(&PERMITS, ps, "ps") })
}

/// Like `ferrolock_semaphore_try_set_permits()`, for a permit-expirable semaphore.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_permits_try_set_permits(
    ps: *mut ferrolock_permits,
    permits: u64,
    out_set: *mut bool,
) -> ferrolock_status {
    ffi!({
        let ps = arg(&PERMITS, ps, "ps")?;
        let set = ps.call(ps.inner.try_set_permits(permits))?;
        maybe(out_set, set);
        Ok(())
    })
}

/// Takes one permit, waiting at most `wait_ms`, and writes its id.
///
/// @param wait_ms -1: wait as long as it takes; 0: try once; otherwise up to 7 days.
/// @param lease_ms -1: no lease (the permit is out until released); otherwise 1 ms
///        to 7 days, after which the permit comes back by itself.
/// @param id_buf receives the permit's id: 32 lowercase hex digits and a NUL.
/// @param id_buf_size the size of `id_buf`: at least `FERROLOCK_PERMIT_ID_SIZE`
///        (checked before anything is taken).
/// @return `FERROLOCK_OK`; `FERROLOCK_NOT_ACQUIRED` (none was free within
///         `wait_ms`); `FERROLOCK_ERR_INVALID_ARGUMENT` (NULL or freed handle, NULL
///         or short `id_buf`, `wait_ms` or `lease_ms` out of range);
///         `FERROLOCK_ERR_WRONG_TYPE`; `FERROLOCK_ERR_CLIENT_CLOSED`;
///         `FERROLOCK_ERR_CONNECTION`; `FERROLOCK_ERR_PERMISSION`; `FERROLOCK_ERR_INTERNAL`.
///
/// Blocks the calling thread. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_permits_acquire(
    ps: *mut ferrolock_permits,
    wait_ms: i64,
    lease_ms: i64,
    id_buf: *mut c_char,
    id_buf_size: usize,
) -> ferrolock_status {
    ffi!({
        let ps = arg(&PERMITS, ps, "ps")?;
        if id_buf.is_null() {
            return Err(invalid("id_buf is NULL; pass a buffer of FERROLOCK_PERMIT_ID_SIZE (33) bytes"));
        }
        if id_buf_size < FERROLOCK_PERMIT_ID_SIZE {
            return Err(invalid(format!(
                "id_buf_size = {id_buf_size} is too small for a permit id; give FERROLOCK_PERMIT_ID_SIZE ({FERROLOCK_PERMIT_ID_SIZE}) bytes"
            )));
        }
        let wait = optional_millis(wait_ms, "wait_ms", "wait forever", 0)?;
        let lease = optional_millis(lease_ms, "lease_ms", "no lease", 1)?;
        let Some(permit) = ps.call(ps.inner.acquire_with(wait, lease))? else {
            return Err(not_acquired(format!(
                "no permit of permit-expirable semaphore \"{}\" was free within {wait_ms} ms",
                ps.inner.name()
            )));
        };
        let id = permit.forget();
        let bytes = id.as_bytes();
        if bytes.len() + 1 > FERROLOCK_PERMIT_ID_SIZE {
            return Err(ffi::internal(format!("permit id {id:?} is longer than 32 bytes")));
        }
        // SAFETY: the caller gave id_buf_size >= FERROLOCK_PERMIT_ID_SIZE writable bytes.
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), id_buf.cast::<u8>(), bytes.len());
        *id_buf.add(bytes.len()) = 0;
        Ok(())
    })
}

/// Releases the permit `id` (anyone may: permits are not owned).
///
/// @param id the id `ferrolock_permits_acquire()` wrote (or Redisson gave): 32 hex digits.
/// @param out_released receives true if it was released in time, false if it had
///        expired (it came back by itself) or was released already; may be NULL.
/// @return `FERROLOCK_OK`; `FERROLOCK_ERR_INVALID_ARGUMENT` (NULL or freed handle,
///         NULL id or not 32 hex digits); `FERROLOCK_ERR_WRONG_TYPE`;
///         `FERROLOCK_ERR_CLIENT_CLOSED`; `FERROLOCK_ERR_CONNECTION`;
///         `FERROLOCK_ERR_PERMISSION`; `FERROLOCK_ERR_INTERNAL`.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_permits_release(
    ps: *mut ferrolock_permits,
    id: *const c_char,
    out_released: *mut bool,
) -> ferrolock_status {
    ffi!({
        let ps = arg(&PERMITS, ps, "ps")?;
        let id = c_str(id, "id")?;
        let released = ps.call(ps.inner.release(id))?;
        maybe(out_released, released);
        Ok(())
    })
}

/// The free permits now (expired permits count as free).
///
/// @param out receives the count.
/// @return like `ferrolock_semaphore_available()`.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_permits_available(ps: *mut ferrolock_permits, out: *mut u64) -> ferrolock_status {
    ffi!({
        let ps = arg(&PERMITS, ps, "ps")?;
        answer(out, || ps.call(ps.inner.available()))
    })
}

// ---------------------------------------------------------------------------------
// ferrolock_latch

/// Creates a handle on the count-down latch `name` (Redisson `RCountDownLatch`).
/// Sends nothing to Redis; a latch that does not exist is open.
///
/// @return like `ferrolock_semaphore_new()`; free it with `ferrolock_latch_free()`.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_latch_new(
    client: *mut ferrolock_client,
    name: *const c_char,
    out: *mut *mut ferrolock_latch,
) -> ferrolock_status {
    ffi!({ answer_new(out, &LATCHES, || Counted::new(client, name, "latch", |c, n| c.count_down_latch(n))) })
}

/// Frees a latch handle. NULL is fine.
///
/// @return like `ferrolock_semaphore_free()`.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_latch_free(latch: *mut ferrolock_latch) -> ferrolock_status {
    ffi!({ free(&LATCHES, latch, "latch") })
}

/// Sets the count of a latch that is open (does not exist).
///
/// @param count 1 or more (up to `INT64_MAX`).
/// @param out_set receives true if it was set, false if the latch is still counting
///        down (its count is left alone); may be NULL.
/// @return `FERROLOCK_OK`; `FERROLOCK_ERR_INVALID_ARGUMENT` (NULL or freed handle,
///         `count` out of range); `FERROLOCK_ERR_WRONG_TYPE`;
///         `FERROLOCK_ERR_CLIENT_CLOSED`; `FERROLOCK_ERR_CONNECTION`;
///         `FERROLOCK_ERR_PERMISSION`; `FERROLOCK_ERR_INTERNAL`.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_latch_try_set_count(latch: *mut ferrolock_latch, count: u64, out_set: *mut bool) -> ferrolock_status {
    ffi!({
        let latch = arg(&LATCHES, latch, "latch")?;
        let set = latch.call(latch.inner.try_set_count(count))?;
        maybe(out_set, set);
        Ok(())
    })
}

/// Counts down by one; at 0 the latch opens and every waiter wakes.
///
/// @param out_left receives the count left (0 also for a latch that was open); may be NULL.
/// @return like `ferrolock_latch_try_set_count()`.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_latch_count_down(latch: *mut ferrolock_latch, out_left: *mut u64) -> ferrolock_status {
    ffi!({
        let latch = arg(&LATCHES, latch, "latch")?;
        let left = latch.call(latch.inner.count_down())?;
        maybe(out_left, left);
        Ok(())
    })
}

/// The count now (0: open).
///
/// @param out receives the count.
/// @return like `ferrolock_latch_try_set_count()`.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_latch_count(latch: *mut ferrolock_latch, out: *mut u64) -> ferrolock_status {
    ffi!({
        let latch = arg(&LATCHES, latch, "latch")?;
        answer(out, || latch.call(latch.inner.count()))
    })
}

/// Waits until the latch is open (its count reached 0, or it never was set). Wakes
/// on the message of the last count-down, it does not poll.
///
/// @param wait_ms -1: as long as it takes; 0: look once; otherwise up to 7 days.
/// @return `FERROLOCK_OK` (open); `FERROLOCK_NOT_ACQUIRED` (still counting down
///         after `wait_ms`); `FERROLOCK_ERR_CLIENT_CLOSED` (also when the client is
///         freed while this call waits); otherwise like `ferrolock_latch_try_set_count()`.
///
/// Blocks the calling thread. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_latch_wait(latch: *mut ferrolock_latch, wait_ms: i64) -> ferrolock_status {
    ffi!({
        let latch = arg(&LATCHES, latch, "latch")?;
        let wait = optional_millis(wait_ms, "wait_ms", "wait forever", 0)?;
        if latch.call(latch.inner.wait(wait))? {
            return Ok(());
        }
        Err(not_acquired(format!("latch \"{}\" was still counting down after {wait_ms} ms", latch.inner.name())))
    })
}
