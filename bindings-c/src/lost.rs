//! Lost holds: the on_lost callback of a handle (a lock's, an election's), and the
//! core callback that forwards to it. The lock handle's calls are lock_lost.rs's.

use std::cell::Cell;
use std::ffi::{c_char, c_void};
use std::sync::{Arc, Mutex, RwLock};

use ferrolock::LostCallback;

use crate::ffi::lock_ignoring_poison;

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
