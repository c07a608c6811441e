//! How a binding that blocks (the C API, Python's sync API) runs a core call. On Unix
//! the calling thread polls the call's future and meanwhile does the I/O of a
//! connection of its own (driver.rs), as redis-py does: a request costs the network's
//! wake-ups and no hop to a runtime thread and back, which on small machines cost as
//! much as the round-trip itself. Elsewhere, and where a thread cannot drive (a call
//! made while another call drives it, say from a callback), the call blocks on the
//! process-wide runtime (`runtime`) as before.
//!
//! [`block_on`] runs a whole call. A host that must look at something between slices
//! of a call (Python checks for Ctrl-C) drives it with [`Drive::slice`], then calls
//! [`settle`] after a call that finished, or [`interrupted`] after one it dropped.

use std::future::Future;

#[cfg(unix)]
mod driver;
#[cfg(unix)]
mod socket;

#[cfg(unix)]
pub use driver::{interrupted, settle, Drive, Slice};

/// Runs `fut` to completion on the calling thread, which must not be inside a tokio
/// runtime (a callback of ours runs inside one: call from another thread there).
/// Fails only if the runtime's threads cannot be started.
pub fn block_on<F: Future>(fut: F) -> std::io::Result<F::Output> {
    let rt = crate::runtime::shared()?;
    let _context = rt.enter();
    let mut fut = std::pin::pin!(fut);
    #[cfg(unix)]
    {
        let mut drive = Drive::new();
        loop {
            match drive.slice(fut.as_mut(), std::time::Duration::from_secs(60)) {
                Slice::Done(output) => {
                    settle();
                    return Ok(output);
                }
                Slice::Pending => {}
                Slice::Unavailable => break,
            }
        }
    }
    Ok(rt.block_on(fut))
}
