//! What a client and its lock handles share: the client itself, until it is closed,
//! and the JS function lost holds are told to. Below both, so that a lock handle
//! reaches it without reaching into the client module.

use std::sync::{Arc, Mutex};

use napi::bindgen_prelude::FnArgs;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::Status;

/// `(lock id, hold sequence number, message, reason)`: a hold of a lock handle was lost.
/// Weak (unref'd): it never keeps the event loop alive.
pub(crate) type LostArgs = FnArgs<(u32, u32, String, String)>;
pub(crate) type LostFn = ThreadsafeFunction<LostArgs, (), LostArgs, Status, false, true>;

/// What the client and the lost callbacks of its locks share.
pub(crate) struct Shared {
    /// `None` once closed (or once the JS environment that made it went away).
    client: Mutex<Option<ferrolock::Client>>,
    on_lost: Mutex<Option<Arc<LostFn>>>,
}

impl Shared {
    pub(crate) fn new(client: ferrolock::Client) -> Self {
        Shared { client: Mutex::new(Some(client)), on_lost: Mutex::new(None) }
    }

    /// Where lost holds are told from now on (`onLost`).
    pub(crate) fn set_on_lost(&self, f: LostFn) {
        *self.on_lost.lock().unwrap() = Some(Arc::new(f));
    }

    /// True once the client was taken out (closed, or its JS environment ended).
    pub(crate) fn is_closed(&self) -> bool {
        self.client.lock().unwrap().is_none()
    }

    /// Tells the JS layer that hold `seq` of lock `id` was lost. False when this
    /// client can no longer tell (closed, or no handler yet).
    pub(crate) fn tell_lost(&self, id: u32, seq: u32, event: &ferrolock::LostEvent) -> bool {
        let on_lost = self.on_lost.lock().unwrap().clone();
        match on_lost {
            Some(f) => {
                let args = (id, seq, event.error.message().to_string(), event.reason.clone());
                f.call(args.into(), ThreadsafeFunctionCallMode::NonBlocking);
                true
            }
            None => false,
        }
    }

    /// Takes the client out (once) and drops the lost callback, which releases the
    /// threadsafe function.
    pub(crate) fn take(&self) -> Option<ferrolock::Client> {
        self.on_lost.lock().unwrap().take();
        self.client.lock().unwrap().take()
    }
}
