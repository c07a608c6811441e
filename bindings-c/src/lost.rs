//! Lost holds: the on_lost callback of a handle, the core callback of each of its
//! per-thread holders that forwards to it, and whether this thread's hold was lost.

use std::cell::Cell;
use std::ffi::{c_char, c_void};
use std::sync::{Arc, Mutex, RwLock};

use ferrolock::LostCallback;

use crate::ffi::answer;
use crate::lock::{ferrolock_lock, lock_arg, lock_ignoring_poison, LockState};
use crate::status::ferrolock_status;

/// Called when a hold taken through a lock handle is lost. `name` is the lock name
/// (valid during the call only), `user` the pointer given to `ferrolock_lock_on_lost()`.
pub type ferrolock_lost_cb = Option<unsafe extern "C" fn(name: *const c_char, user: *mut c_void)>;

/// The C callback of one handle. `gate` is held for reading while the callback runs,
/// so replacing or freeing waits for a running callback to return.
#[derive(Default)]
pub(crate) struct LostSlot {
    callback: Mutex<Option<(unsafe extern "C" fn(*const c_char, *mut c_void), usize)>>,
    gate: RwLock<()>,
}

thread_local! {
    /// The slot whose callback this thread is running (0: none).
    static IN_CALLBACK: Cell<usize> = const { Cell::new(0) };
}

impl LockState {
    /// The core callback of every per-thread holder: forwards to this handle's C callback.
    pub(crate) fn lost_forwarder(&self) -> LostCallback {
        self.on_lost.forwarder(self.name_c.clone())
    }

    /// Sets the C callback; unless called from that callback, waits for a running call to end.
    pub(crate) fn set_callback(&self, callback: Option<(unsafe extern "C" fn(*const c_char, *mut c_void), usize)>) {
        self.on_lost.set(callback);
    }
}

impl LostSlot {
    /// A core lost callback that forwards to this slot's C callback with `name`
    /// (a lock handle's holders, an election handle's candidate: election.rs).
    pub(crate) fn forwarder(self: &Arc<Self>, name: std::ffi::CString) -> LostCallback {
        let slot = self.clone();
        Arc::new(move |_event| {
            let _running = slot.gate.read().unwrap_or_else(|p| p.into_inner());
            let callback = *lock_ignoring_poison(&slot.callback);
            if let Some((cb, user)) = callback {
                let previous = IN_CALLBACK.with(|c| c.replace(Arc::as_ptr(&slot) as usize));
                // SAFETY: the caller of ferrolock_lock_on_lost() promised a valid function.
                unsafe { cb(name.as_ptr(), user as *mut c_void) };
                IN_CALLBACK.with(|c| c.set(previous));
            }
        })
    }

    /// Sets the C callback; unless called from that callback, waits for a running call to end.
    pub(crate) fn set(self: &Arc<Self>, callback: Option<(unsafe extern "C" fn(*const c_char, *mut c_void), usize)>) {
        *lock_ignoring_poison(&self.callback) = callback;
        let own = IN_CALLBACK.with(|c| c.get()) == Arc::as_ptr(self) as usize;
        if !own {
            drop(self.gate.write().unwrap_or_else(|p| p.into_inner()));
        }
    }
}

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
        lock_arg(lock)?.set_callback(cb.map(|cb| (cb, user as usize)));
        Ok(())
    })
}
