//! `ferrolock._native`: the Python binding of ferrolock.
//!
//! Thin by design (DESIGN §1): this crate translates types, errors, blocking vs.
//! asyncio style and identity. All lock logic lives in the core crate. The public
//! Python API (`ferrolock.Client`, `ferrolock.Lock`, `ferrolock.aio`) is a small
//! Python layer (python/ferrolock/) over the two main classes here (and the
//! counters of family.rs):
//!
//! * `Client` (client.rs): one core client (connection, pub/sub, watchdog), made
//!   again with the same settings on first use in a forked child.
//! * `Holder` (lock.rs): one core lock handle of any kind (reentrant, fenced,
//!   fair, the read or write side of a read-write lock) = one holder (one owner field), or
//!   a core multi-lock over member holders (`Holder.multi`: Redlock, MultiLock).
//!   The Python layer maps (lock object, thread) and (lock object, asyncio task)
//!   to holders; a multi-lock's holder for a thread or task is made from its
//!   members' holders for that same thread or task. In a forked child a holder
//!   makes itself again on the child's client (holding nothing). Dropping a
//!   `Holder` that holds does not release: the core client
//!   keeps the hold until it is released, its explicit lease ends, or the client
//!   shuts down (`close`, or the last `Client`/`Holder` of it dropped).
//!
//! The other files, in the order they build on each other:
//!
//! * errors.rs: core `ErrorKind` -> the exception classes of `ferrolock._errors`
//!   (`.py()?` at call sites).
//! * runtime.rs: the process-wide runtime (`ferrolock::runtime::shared`, rebuilt
//!   after fork), blocking calls (GIL released, short slices with
//!   `check_signals` in between, so Ctrl-C interrupts a wait quickly; dropping the
//!   interrupted future leaves nothing held, a core guarantee), the asyncio bridge
//!   (pyo3-async-runtimes' generic one, on the same runtime), the `Local<T>` fork
//!   guard and `quiesce` (at exit).
//! * call.rs: most methods exist as a blocking call `x` and its asyncio twin
//!   `x_async`; `twin_methods!` writes both from one body, a `Call`.
//! * shared.rs: what a `Client` and the objects it makes share (the settings, the
//!   core client of this process, connected again in a forked child): below them,
//!   so that a holder, counter or election never reaches into client.rs.
//! * family.rs: `Semaphore`, `PermitSemaphore`, `Latch`: the counters (nobody's
//!   permits and counts, so no holder identity), asyncio acquires guarded as locks' are.
//! * logs.rs: the core's `tracing` events to Python's `logging` (logger
//!   "ferrolock" and its children), filtered without the GIL and delivered by a
//!   thread of their own.
//! * election.rs: `Election` (one candidate: campaign, resign, leader, on-lost) and
//!   `Observer` (leadership changes), for `ferrolock.Election` and its asyncio twin.
//! * who.rs: a core `HolderEntry` (owner, count, note, held for, description) as
//!   the tuple `ferrolock.HolderEntry` is made from.

mod call;
mod client;
mod election;
mod errors;
mod family;
mod lock;
mod logs;
mod runtime;
mod shared;
mod who;

use pyo3::prelude::*;

/// The native part of the `ferrolock` package.
#[pymodule]
#[pyo3(name = "_native")]
fn native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<client::Client>()?;
    m.add_class::<lock::Holder>()?;
    m.add_class::<election::Election>()?;
    m.add_class::<election::Observer>()?;
    m.add_class::<call::UndoOnCancel>()?;
    m.add_class::<family::Semaphore>()?;
    m.add_class::<family::PermitSemaphore>()?;
    m.add_class::<family::Latch>()?;
    m.add_function(wrap_pyfunction!(runtime::quiesce, m)?)?;
    m.add_function(wrap_pyfunction!(logs::install_log_bridge, m)?)?;
    m.add_function(wrap_pyfunction!(logs::sync_log_level, m)?)?;
    m.add_function(wrap_pyfunction!(logs::stop_log_bridge, m)?)?;
    // The workspace version (Cargo.toml), the one every artifact carries.
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
