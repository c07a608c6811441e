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
//! Java services on Redisson's `RLock` / `RFencedLock` exclude and wake ours on the
//! same names. See docs/design.md for the protocol and the semantics.

mod client;
mod config;
mod error;
mod handoff;
mod holder;
mod keys;
mod latch;
mod lock;
mod pubsub;
pub mod runtime;
mod scripts;
mod status;
mod transport;
pub mod validate;
mod watchdog;

pub use client::Client;
pub use config::{ClientBuilder, Config};
pub use error::{Error, ErrorKind, Result};
pub use holder::{Hold, LostCallback, LostEvent, Released};
pub use lock::{AcquireOptions, Guard, Lock, LockOptions};
pub use status::{HolderEntry, LockStatus};
pub use watchdog::RenewalReport;
