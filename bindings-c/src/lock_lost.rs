//! Lost holds of a lock handle: whether this thread's hold was lost, and the
//! handle's on_lost callback (lost.rs's slot, which each of its per-thread
//! holders forwards to).

use std::ffi::c_void;

use crate::ffi::answer;
use crate::lock::{ferrolock_lock, lock_arg};
use crate::lost::ferrolock_lost_cb;
use crate::status::ferrolock_status;

/// Whether the calling thread's latest hold through this handle was lost (expired,
/// force-unlocked or lost by the server). Stays true until this thread acquires the
/// lock again through this handle.
///
/// @param out receives the answer.
/// @return `FERROLOCK_OK`; `FERROLOCK_ERR_INVALID_ARGUMENT` (NULL argument).
///
/// Does not block (local view). Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn ferrolock_lock_is_lost(lock: *mut ferrolock_lock, out: *mut bool) -> ferrolock_status {
    ffi!({
        let lock = lock_arg(lock)?;
        answer(out, || Ok(lock.thread_lock(false)?.is_some_and(|h| h.is_lost())))
    })
}

/// Sets the callback told when a hold taken through this handle (by any thread) is
/// lost; replaces any earlier one. `cb` NULL removes it. Once this returns, the
/// previous callback is not running and will not be called again.
///
/// The callback runs on a ferrolock library thread, not on the thread that held the
/// lock, once per lost hold, with the lock name (valid during the call) and `user`;
/// when several holds are lost at once it may run on several threads at once.
/// It should be short and must not throw (C++) or longjmp. It may set flags, post
/// semaphores, signal condition variables, write to pipes, and call ferrolock
/// functions on other handles; it must not call `ferrolock_lock_free()` or
/// `ferrolock_client_free()` for this lock's handle or client. Calling
/// `ferrolock_lock_on_lost()` on its own handle from inside it is allowed (it does
/// not wait for itself).
///
/// A multi-lock handle's hold is lost once fewer than its quorum of members are
/// still held; its callback gets the members' names joined by ",". A member hold
/// it took is also a hold of (member handle, thread), so the member handle's own
/// callback is told when such a member hold is lost.
///
/// @return `FERROLOCK_OK`; `FERROLOCK_ERR_INVALID_ARGUMENT` (NULL lock).
#[no_mangle]
pub unsafe extern "C" fn ferrolock_lock_on_lost(lock: *mut ferrolock_lock, cb: ferrolock_lost_cb, user: *mut c_void) -> ferrolock_status {
    ffi!({
        lock_arg(lock)?.on_lost.set(cb.map(|cb| (cb, user as usize)));
        Ok(())
    })
}
