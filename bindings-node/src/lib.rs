//! Node.js binding of ferrolock (napi-rs 3, napi's tokio runtime).
//!
//! This layer only translates: JS numbers to durations (through
//! `ferrolock::validate`), core errors to JS errors with `err.code` (errors.rs),
//! and core holds to small objects. The hand-written JS layer (`lib/`) turns
//! error codes into `FerrolockError` subclasses, wires `AbortSignal` through the
//! cancel handles (cancel.rs), and turns lost-hold notifications into `'lost'`
//! events and aborted signals. No lock logic lives here (DESIGN §1).
//!
//! Files: errors.rs (errors), cancel.rs, executor.rs and host.rs (calls and promises
//! on the JS thread), lost.rs (what a client and its lock handles share: the client,
//! lost-hold notifications), client.rs, lock.rs (every lock kind, multi-locks),
//! fast.rs (a lock's acquire and release as raw Node-API calls), family.rs
//! (semaphores, the latch), election.rs (a candidate, whose lock is a lock handle,
//! and an observer), log.rs (core's tracing events to stderr or a JS function); this
//! file sets up the runtime. `native.d.ts` is generated from them (`npm run dts`).

mod cancel;
mod client;
mod election;
mod errors;
mod executor;
mod fast;
mod family;
mod host;
mod lock;
mod log;
mod lost;

/// One worker thread for core's background work (renewals, the subscriber, resolvers):
/// calls themselves run on the JS thread (executor.rs), and on small machines a
/// second worker mostly adds wake-ups between the two workers.
#[napi_derive::module_init]
fn init() {
    log::init_from_env();
    if let Ok(rt) = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build() {
        executor::set_runtime(rt.handle().clone());
        napi::bindgen_prelude::create_custom_tokio_runtime(rt);
    }
}
