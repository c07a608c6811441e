//! Holds: the public view of an acquisition ([`Hold`], [`Released`], loss
//! notices), the local state behind it (state.rs: count, token, deadline, lost
//! signal, renewal bookkeeping) and the machinery that keeps the server and the
//! local view together when callers go away (pending.rs).

pub(crate) mod pending;
pub(crate) mod state;

use std::sync::Arc;
use std::time::Instant;

use tokio::sync::watch;

use crate::error::Error;

/// Called once when a hold is lost, from a background thread.
pub type LostCallback = Arc<dyn Fn(&LostEvent) + Send + Sync>;

/// What an `on_lost` callback is told.
#[derive(Debug, Clone)]
pub struct LostEvent {
    /// The lock name (lossy UTF-8).
    pub name: String,
    /// The owner field of the hold that was lost.
    pub owner: String,
    /// Why, in a few words (e.g. "its lease (5000 ms) ran out before it was renewed or released").
    pub reason: String,
    /// The `LockLost` error, whose message names the lock and the holder and gives the reason.
    pub error: Error,
    /// When the holder learned of the loss (monotonic clock).
    pub at: Instant,
}

/// A snapshot of one acquisition: its fencing token and a signal that fires if
/// the hold is lost. Dropping it changes nothing (see `Guard` for release-on-drop).
#[derive(Debug, Clone)]
pub struct Hold {
    pub(crate) token: Option<u64>,
    pub(crate) count: u32,
    pub(crate) lost: watch::Receiver<Option<Error>>,
}

impl Hold {
    /// The fencing token of this acquisition (fenced locks only).
    pub fn token(&self) -> Option<u64> {
        self.token
    }

    /// The hold count right after this acquisition (1 for a first acquisition).
    pub fn hold_count(&self) -> u32 {
        self.count
    }

    /// True once the hold has been lost.
    pub fn is_lost(&self) -> bool {
        self.lost.borrow().is_some()
    }

    /// The `LockLost` error, if the hold has been lost.
    pub fn lost_error(&self) -> Option<Error> {
        self.lost.borrow().clone()
    }

    /// Resolves with the `LockLost` error when the hold is lost; never resolves
    /// for a hold that ends by release.
    pub async fn lost(&self) -> Error {
        let mut rx = self.lost.clone();
        let result = rx.wait_for(Option::is_some).await.map(|v| v.clone());
        match result {
            Ok(Some(err)) => err,
            _ => std::future::pending().await,
        }
    }

    /// A watch channel that turns `Some(error)` when the hold is lost (for bindings).
    pub fn lost_watch(&self) -> watch::Receiver<Option<Error>> {
        self.lost.clone()
    }
}

/// What a release did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Released {
    /// Re-entrant hold: still held with this many levels left.
    StillHeld(u32),
    /// The hold is over: the lock is free now (one waiter was woken) or was handed to
    /// a waiter of this client. (After a release Redis did not answer within the retry
    /// window: on the server as soon as Redis answers.)
    Unlocked,
}

