//! Cancel handles for pending acquires: `lib/abort.js` takes one per acquire that
//! has an `AbortSignal` and cancels it when the signal aborts.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

use napi_derive::napi;
use tokio::sync::oneshot;

use crate::errors::{cancelled, Result};

struct CancelSlot {
    /// Dropping it (with the slot) completes `rx`.
    _tx: oneshot::Sender<()>,
    /// Taken by the acquire that uses the handle.
    rx: Option<oneshot::Receiver<()>>,
}

static CANCELS: Mutex<Option<HashMap<u32, CancelSlot>>> = Mutex::new(None);
static NEXT_CANCEL: AtomicU32 = AtomicU32::new(1);

fn with_cancels<R>(f: impl FnOnce(&mut HashMap<u32, CancelSlot>) -> R) -> R {
    let mut slot = CANCELS.lock().unwrap_or_else(|p| p.into_inner());
    f(slot.get_or_insert_with(HashMap::new))
}

/// A cancel handle for one acquire call. Pass it to `acquire`; `cancel(id)` stops that wait.
#[napi]
pub fn new_cancel() -> u32 {
    let id = NEXT_CANCEL.fetch_add(1, Ordering::Relaxed);
    let (tx, rx) = oneshot::channel();
    with_cancels(|m| m.insert(id, CancelSlot { _tx: tx, rx: Some(rx) }));
    id
}

/// Cancels the acquire that took this handle (or will take it): the acquire
/// future is dropped, which leaves nothing held and no subscription behind.
#[napi]
pub fn cancel(id: u32) {
    with_cancels(|m| m.remove(&id));
}

/// One acquire's view of its cancel handle (none: never aborted). Removes the
/// handle when the acquire ends, whichever way.
pub struct Abort {
    id: Option<u32>,
    rx: Option<oneshot::Receiver<()>>,
}

impl Abort {
    pub fn take(id: Option<u32>) -> Abort {
        let rx = id.and_then(|id| with_cancels(|m| m.get_mut(&id).and_then(|s| s.rx.take())));
        Abort { id, rx }
    }

    /// True if the handle was cancelled before the acquire took it.
    pub fn already(&self) -> bool {
        self.id.is_some() && self.rx.is_none()
    }

    /// Completes when the handle is cancelled; never without a handle.
    pub async fn cancelled(&mut self) {
        match self.rx.as_mut() {
            Some(rx) => {
                let _ = rx.await;
            }
            None => std::future::pending().await,
        }
    }
}

/// Runs a wait unless `abort` fires first. A cancelled wait is dropped, which in core
/// takes nothing and leaves no subscription (every wait future promises that).
pub async fn unless_aborted<T>(mut abort: Abort, wait: impl std::future::Future<Output = Result<T>>) -> Result<T> {
    if abort.already() {
        return Err(cancelled());
    }
    if abort.id.is_none() {
        return wait.await; // nothing can abort it (most acquires): no select per poll
    }
    tokio::select! {
        r = wait => r,
        _ = abort.cancelled() => Err(cancelled()),
    }
}

impl Drop for Abort {
    fn drop(&mut self) {
        if let Some(id) = self.id {
            with_cancels(|m| m.remove(&id));
        }
    }
}
