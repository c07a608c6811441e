//! C ABI of ferrolock: `libferrolock.so` / `libferrolock.a` and `include/ferrolock.h`
//! (generated from this crate and cbindgen.toml by build.rs with the `generate-header`
//! feature: `make -C bindings-c header`).
//!
//! This crate only translates (DESIGN §1): C strings and durations into core types,
//! core errors into `ferrolock_status` plus a thread-local message, the core's async
//! calls into blocking calls on `ferrolock::runtime::shared()`, and C's holder
//! identity — (lock handle, OS thread), like a recursive pthread mutex — into one
//! core `Lock` per (handle, thread), each with its own holder id.
//!
//! Every exported function catches panics: a Rust panic never unwinds into C, it
//! becomes `FERROLOCK_ERR_INTERNAL`. Each is written out (docs, `#[no_mangle]`,
//! signature) where cbindgen reads it, with its body in `ffi!` (ffi.rs).
//!
//! Modules, in the order of the header's functions:
//!
//! - `ffi`: the `ffi!` body of every export and the argument, C string, duration and
//!   blocking plumbing;
//! - `handle`: the registry type behind every handle type (`ferrolock_client *`, ...),
//!   so freed, doubly freed and foreign handles are refused, never dereferenced (each
//!   registry lives beside its type: `LOCKS` in lock.rs, ...);
//! - `options`: `ferrolock_options`, the connect settings, and their defaults;
//! - `client`: `ferrolock_client`;
//! - `metrics`: `ferrolock_metrics`, a client's counters, and their Prometheus text;
//! - `kind`: `ferrolock_lock_kind`, the lock kinds as C passes them;
//! - `ack`: `ferrolock_replica_ack`, the replica-acknowledgement policies of the options;
//! - `lock`: `ferrolock_lock`: create (by kind, or both sides of a read-write lock),
//!   free, per-thread holders, acquire, release, queries, tokens;
//! - `holder`: `ferrolock_holder`, who holds a lock (owner, note, how long);
//! - `lock_holder`: `ferrolock_lock_set_label()` for what a handle's holders' notes
//!   say and `ferrolock_lock_holder_info()` for who was in the way of a timed-out acquire;
//! - `multi`: `ferrolock_quorum` and `ferrolock_multilock_new()`, a lock over several
//!   member handles (Redlock, MultiLock);
//! - `lost`: the on_lost callback of a handle (a lock's, an election's);
//! - `lock_lost`: a lock handle's lost holds and `ferrolock_lock_on_lost()`;
//! - `election`: `ferrolock_election` (a candidate: campaign, resign, term, loss, who
//!   leads) and `ferrolock_observer` (its leadership changes);
//! - `counters`: `ferrolock_semaphore`, `ferrolock_permits` (permit-expirable
//!   semaphore) and `ferrolock_latch` (count-down latch);
//! - `inspect`: `ferrolock_inspect()` into a `ferrolock_inspection` snapshot (what a
//!   name is, its holders with their notes, lease, waiters, permits or count, last
//!   token) and `ferrolock_scan`, the names under a prefix;
//! - `log`: `ferrolock_set_logger()` and `FERROLOCK_LOG`, core's log events for C;
//! - `status`: `ferrolock_status`, `ferrolock_last_error()` (the thread's last error),
//!   status names, version.
//!
//! Imports between these files point one way (scripts/check_imports.py): `status`,
//! `handle` and `ffi` at the bottom, the handle types above them, and a file with
//! calls on a lock handle (`lock_holder`, `lock_lost`, `multi`) above `lock`.

#![allow(non_camel_case_types)]
// The exported functions check their pointers themselves (NULL is an error, not UB);
// the remaining contract (valid, live handles) is documented on each one.
#![allow(clippy::missing_safety_doc)]

#[macro_use]
mod ffi;
mod handle;
mod ack;
mod options;
mod client;
mod metrics;
mod kind;
mod lock;
mod holder;
mod lock_holder;
mod multi;
mod lost;
mod lock_lost;
mod election;
mod counters;
mod inspect;
mod log;
mod status;

pub use client::*;
pub use metrics::*;
pub use options::*;
pub use ack::*;
pub use kind::*;
pub use lock::*;
pub use holder::*;
pub use lock_holder::*;
pub use multi::*;
pub use lost::*;
pub use lock_lost::*;
pub use counters::*;
pub use inspect::*;
pub use log::*;
pub use status::*;
