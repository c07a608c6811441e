//! A process-wide tokio runtime for bindings that block (the C API, Python's sync
//! API), rebuilt after `fork()`: tokio's threads do not survive a fork, so a child
//! gets a runtime of its own and clients made before the fork refuse to run.

use std::sync::{Arc, Mutex};

static SHARED: Mutex<Option<(u32, Arc<tokio::runtime::Runtime>)>> = Mutex::new(None);

/// The runtime of the current process, created on first use (and again in a forked child).
pub fn shared() -> std::io::Result<Arc<tokio::runtime::Runtime>> {
    let pid = std::process::id();
    let mut slot = SHARED.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((owner, rt)) = slot.as_ref() {
        if *owner == pid {
            return Ok(rt.clone());
        }
    }
    if let Some((_, stale)) = slot.take() {
        // The parent's worker threads do not exist here: dropping would wait for them forever.
        std::mem::forget(stale);
    }
    let rt = Arc::new(
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("ferrolock")
            .enable_all()
            .build()?,
    );
    *slot = Some((pid, rt.clone()));
    Ok(rt)
}
