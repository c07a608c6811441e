//! Explicit leases after the fact (redis-py's `extend` and `reacquire`), and the
//! note a holder may leave beside its hold for operators (`ferrolock run` stores
//! its host, pid and command there; `status` shows it).

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::holder::Holder;
use super::Lock;
use crate::error::{Error, ErrorKind, Result};
use crate::hold::pending::detached;
use crate::scripts;
use crate::validate;

/// How a lease changes.
#[derive(Debug, Clone, Copy)]
pub(crate) enum LeaseChange {
    /// Add to what is left.
    Add(Duration),
    /// Replace what is left.
    Set(Duration),
    /// Back to the lease the hold was taken with.
    Reset,
}

/// Longest note beside a hold.
const MAX_INFO_LEN: usize = 1024;

impl Lock {
    /// Adds `by` to what is left of this holder's explicit lease; returns the lease
    /// left now. `NotOwner` if it holds nothing, `LockLost` if its hold was lost,
    /// `InvalidArgument` for a hold the watchdog renews (taken without a lease).
    /// A multi-lock changes it on every member it holds and needs its quorum.
    pub async fn extend(&self, by: Duration) -> Result<Duration> {
        self.change_lease(LeaseChange::Add(by)).await
    }

    /// Replaces what is left of this holder's explicit lease with `lease` (redis-py's
    /// `extend(..., replace_ttl=True)`). Errors as [`Lock::extend`].
    pub async fn set_lease(&self, lease: Duration) -> Result<Duration> {
        self.change_lease(LeaseChange::Set(lease)).await
    }

    /// Resets this holder's explicit lease to the one its hold was taken with
    /// (redis-py's `reacquire`). Errors as [`Lock::extend`].
    pub async fn reacquire(&self) -> Result<Duration> {
        self.change_lease(LeaseChange::Reset).await
    }

    pub(crate) async fn change_lease(&self, change: LeaseChange) -> Result<Duration> {
        if let LeaseChange::Add(d) | LeaseChange::Set(d) = change {
            validate::lease(d)?;
        }
        match self.multi_ref() {
            Some(multi) => Box::pin(multi.change_lease(change)).await,
            None => {
                let holder = self.one()?.clone();
                let this = holder.clone();
                detached(&holder.ctx, &holder.op, move |guard| async move {
                    let _guard = guard;
                    change_lease(&this, change).await
                })
                .await
            }
        }
    }

    /// Leaves `info` (at most 1024 bytes; `None` removes it) beside this holder's
    /// hold, shown by [`Lock::status`] in place of the note the client writes itself
    /// ([`crate::HolderNotes`]); Redisson ignores it. It lives as long as the hold:
    /// renewed with it, removed with its release (with the client's notes
    /// [`crate::HolderNotes::Off`] too).
    /// `NotOwner` if this holder does not hold the lock.
    pub async fn set_holder_info(&self, info: Option<&str>) -> Result<()> {
        let holder = self.one()?;
        let info = info.unwrap_or("");
        if info.len() > MAX_INFO_LEN {
            return Err(Error::invalid(format!(
                "holder info is {} bytes long; the limit is {MAX_INFO_LEN} bytes",
                info.len()
            )));
        }
        let mut conn = holder.ctx.conn()?;
        let stored: i64 = scripts::HOLDER_INFO
            .key(&holder.names.name)
            .key(holder.names.holder_info(&holder.field))
            .arg(&*holder.field)
            .arg(info)
            .invoke_async(&mut conn)
            .await
            .map_err(|e| Error::from_redis(&e, &holder.context("storing the holder info of")))?;
        if stored == 0 {
            return Err(Error::new(
                ErrorKind::NotOwner,
                format!("{}: this holder does not hold it", holder.context("storing the holder info of")),
            ));
        }
        // The client's own note must not replace it: renewals only keep it alive now.
        if !info.is_empty() {
            let generation = holder.cell.state.lock().unwrap().generation;
            holder.cell.note_written(generation);
        }
        Ok(())
    }
}

/// Changes one holder's lease on the server, then its local deadline (only once the
/// server confirmed it: an unanswered call leaves the earlier, safe deadline).
async fn change_lease(h: &Arc<Holder>, change: LeaseChange) -> Result<Duration> {
    let context = h.context("changing the lease of");
    let mut conn = h.ctx.conn()?;
    if h.kind == super::LockKind::Read {
        return Err(Error::invalid(format!("{context}: each read hold keeps the lease it was taken with")));
    }
    let (generation, taken) = h.cell.explicit_lease(&context)?;
    let (ms, mode) = match change {
        LeaseChange::Add(by) => (by.as_millis() as u64, "add"),
        LeaseChange::Set(lease) => (lease.as_millis() as u64, "set"),
        LeaseChange::Reset => (taken, "set"),
    };
    let sent_at = Instant::now();
    let left: i64 = scripts::EXTEND
        .key(&h.names.name)
        .arg(&*h.field)
        .arg(ms)
        .arg(mode)
        .invoke_async(&mut conn)
        .await
        .map_err(|e| Error::from_redis(&e, &context))?;
    if left < 0 {
        h.cell.mark_lost(generation, "its owner field was gone when its lease was to be changed (expired, force-unlocked, or the server lost its data)");
        return Err(h.cell.state.lock().unwrap().lost_error.clone().unwrap_or_else(|| h.cell.lost_error("its owner field was gone")));
    }
    h.cell.lease_changed(generation, sent_at, left as u64);
    Ok(Duration::from_millis(left as u64))
}
