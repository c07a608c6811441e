//! Holders seen through a lock handle: the label its holders' notes carry, and who
//! held the lock when this thread's latest acquire timed out (holder.rs's struct).

use std::ffi::c_char;

use crate::ffi::{c_str, invalid, lock_ignoring_poison};
use crate::holder::{ferrolock_holder, HolderText};
use crate::lock::{ferrolock_lock, lock_arg};
use crate::status::ferrolock_status;

/// Longest label taken, in bytes (core's limit for a note's thread, with room for the
/// ", tid N" this binding adds).
const MAX_LABEL: usize = 560;

/// Names this handle's holders in their notes: a holder's note then says
/// "(thread LABEL, tid N)", N being its OS thread id (Linux: gettid()); without a
/// label, "(thread tid N)". Notes are what `ferrolock status`, `ferrolock top`,
/// `ferrolock_inspect()` and a waiter's log line and timeout show (see `holder_notes`
/// in `ferrolock_options`). Sends nothing to Redis.
///
/// @param label NUL-terminated UTF-8, at most 560 bytes; NULL or "" removes it.
///        Copied.
/// @return `FERROLOCK_OK`; `FERROLOCK_ERR_INVALID_ARGUMENT` (freed handle, invalid
///         UTF-8, too long); `FERROLOCK_ERR_CLIENT_CLOSED`.
///
/// Takes effect for holds taken from then on by any thread through this handle (a
/// re-entry of a hold already taken keeps the note it has). Does not block.
/// Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_lock_set_label(lock: *mut ferrolock_lock, label: *const c_char) -> ferrolock_status {
    ffi!({
        let lock = lock_arg(lock)?;
        let label = if label.is_null() { "" } else { c_str(label, "label")? };
        if label.len() > MAX_LABEL {
            return Err(invalid(format!("label is {} bytes long; the limit is {MAX_LABEL} bytes", label.len())));
        }
        *lock_ignoring_poison(&lock.label) = (!label.is_empty()).then(|| label.into());
        Ok(())
    })
}

/// Who held the lock when the calling thread's latest acquire through this handle
/// with a wait (`wait_ms` -1 or > 0) returned `FERROLOCK_NOT_ACQUIRED`, read at that
/// moment: its owner, note (app, host, pid, thread, ...), how long it had held the
/// lock and a description for people (`ferrolock_last_error()` of that acquire names
/// it too). A try (`wait_ms` 0) reads nothing and changes nothing here.
///
/// Call it through `ferrolock_lock_holder_info(lock, &holder)` (inline in the
/// header), which passes `sizeof holder` as the program was compiled.
///
/// @param out receives the holder; `out->owner` is NULL (and every field empty)
///        when no such acquire timed out, or the lock was free by the time it was
///        read. Its strings are owned by the handle: valid until this thread's next
///        acquire through it that times out, or until the handle is freed.
/// @return `FERROLOCK_OK`; `FERROLOCK_ERR_INVALID_ARGUMENT` (NULL or freed handle,
///         NULL `out`, a `size` under 4 or over 4096 bytes: nothing is written);
///         `FERROLOCK_ERR_CLIENT_CLOSED`.
///
/// Does not block. Thread-safe (each thread reads its own).
#[no_mangle]
pub unsafe extern "C" fn ferrolock_lock_holder_info_sized(
    lock: *mut ferrolock_lock,
    out: *mut ferrolock_holder,
    size: u32,
) -> ferrolock_status {
    ffi!({
        let lock = lock_arg(lock)?;
        let seen = lock_ignoring_poison(&lock.last_holders).get(&std::thread::current().id()).cloned();
        // The strings stay in the handle's map (only this thread replaces its entry).
        HolderText::write(seen.as_deref(), out, size, "ferrolock_lock_holder_info_sized")
    })
}
