//! ferrolock: distributed locks on Redis that speak Redisson's wire protocol.
//!
//! ```no_run
//! # async fn demo() -> ferrolock::Result<()> {
//! let client = ferrolock::Client::connect("redis://127.0.0.1:6379").await?;
//! let lock = client.lock("orders:42")?;
//! let guard = lock.acquire().await?;          // waits on pub/sub, renewed by the watchdog
//! // ... critical section; `guard.lost()` resolves if the hold is lost ...
//! guard.release().await?;
//! client.shutdown().await?;
//! # Ok(()) }
//! ```
//!
//! Java services on Redisson's `RLock`, `RFencedLock`, `RFairLock`, `RReadWriteLock`,
//! `RSemaphore`, `RPermitExpirableSemaphore` and `RCountDownLatch` exclude, limit and
//! wake ours on the same names. See docs/design.md for the protocol and the semantics.
//!
//! # Reading the code
//!
//! Layers, each importing only those below it:
//!
//! 1. leaves: `ack` (the replica-acknowledgement policy), [`error`](Error), `validate`, `names` (every Redisson key and channel
//!    name), `config`, `runtime`, `metrics` (the counters behind [`Client::metrics`]),
//!    `until` (a wait on a `Notify` until a condition holds);
//! 2. `transport` (the command connection, the subscriber, the publish command and
//!    the cluster slot of a key), `scripts` (the Lua, one folder per primitive),
//!    `reply_latch` (Redisson's unlock latch and the sweeping of every reply latch);
//! 3. engines: `waiting` (the acquire loop and the pub/sub hub with its wake
//!    policies), `hold` (hold state, loss notices, work that outlives its caller),
//!    `renewal` (the registry of held holds and renewal rounds), tied together for
//!    every primitive in `ctx`; `request` (calls made idempotent by a reply latch);
//! 4. primitives: `lock` (every kind with an owner: the handle, its holder, the
//!    shared protocol and what differs per kind on the wire, same-client hand-off, status), `semaphore` (permits
//!    nobody owns) and `latch` (the count-down latch); `inspect` (what a name is, told
//!    from its keys, and the names under a prefix: for operators);
//! 5. `election` (leader election on a fenced lock: campaigns, terms, who leads and
//!    observers of every change);
//! 6. `client` (the only module that knows everything) and this facade; `blocking`
//!    (how bindings that block run a call: on their own thread, doing its I/O) and
//!    `log_bridge` (how bindings hand core's log events to their host's logger).
//!
//! A newcomer's path: this file -> `client.rs` -> `lock/mod.rs` -> `waiting/mod.rs`
//! -> `hold/state.rs` -> `lock/reentrant.rs` with `scripts/lock/*.lua` ->
//! `scripts/mod.rs` and `transport/`.

mod ack;
pub mod blocking;
mod client;
mod config;
mod ctx;
mod election;
mod error;
mod hold;
mod inspect;
mod latch;
mod lock;
pub mod log_bridge;
mod metrics;
mod names;
mod renewal;
mod reply_latch;
mod request;
pub mod runtime;
mod scripts;
mod semaphore;
mod transport;
mod until;
pub mod validate;
mod waiting;

pub use ack::{ReplicaAck, ReplicaShortfall};
pub use client::Client;
pub use config::{ClientBuilder, Config, HolderNotes};
pub use election::{Election, Leader, Leadership, Observer};
pub use error::{Error, ErrorKind, Result};
pub use hold::{Hold, LostCallback, LostEvent, Released};
pub use inspect::{Inspection, ObjectKind, PermitOut};
pub use latch::CountDownLatch;
pub use metrics::{Histogram, Metrics};
pub use semaphore::{Permit, PermitExpirableSemaphore, Permits, Semaphore};
pub use lock::{human_duration, AcquireOptions, Guard, HolderEntry, HolderNote, Lock, LockKind, LockOptions, LockStatus, Quorum, ReadWriteLock};
pub use renewal::RenewalReport;
pub use transport::{HostAddress, HostLink};

// The Rust examples of the documentation site's guides, run as doctests against a scratch
// redis-server (REDIS_URL) by scripts/docs-examples.sh, which passes --cfg docs_examples:
// the plain test command has no server for them.
#[cfg(all(doctest, docs_examples))]
#[doc = include_str!("../../docs/site/guides/getting-started-rust.md")]
mod docs_examples {}

// The same for the guides to leader election and cron on many hosts.
#[cfg(all(doctest, docs_examples))]
#[doc = include_str!("../../docs/site/guides/leader-election.md")]
mod docs_examples_election {}

#[cfg(all(doctest, docs_examples))]
#[doc = include_str!("../../docs/site/guides/cron.md")]
mod docs_examples_cron {}
