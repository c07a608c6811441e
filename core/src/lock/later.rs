//! A hold that ends later rather than now ([`Lock::release_after`]): a cron job's
//! minimum hold. The lock keeps a fixed expiry on the server, under a field no
//! holder writes (`<owner>:later`: not even its holder re-enters it), and the
//! holder gives it up at once here: nothing renews it, nothing is left to release
//! it, and no loss is told when it expires.

use std::sync::Arc;
use std::time::Duration;

use super::holder::Holder;
use super::{Lock, LockKind};
use crate::error::{Error, ErrorKind, Result};
use crate::hold::pending::detached;
use crate::scripts;
use crate::validate;

impl Lock {
    /// Ends this holder's hold `after` from now instead of now: the lock (with its
    /// holder note) gets that fixed expiry on the server, held under the field
    /// `<owner>:later` (so that this holder cannot re-enter it either), and this
    /// holder gives the hold up at once (every level; no more renewals, no release to send, no loss
    /// told when it expires), so its process may exit. Others get the lock once it
    /// expires. `NotOwner` without a hold, `LockLost` if the hold was lost,
    /// `InvalidArgument` for a read hold or a multi-lock. Should the call fail
    /// (`Connection`), the hold is kept as it was.
    pub async fn release_after(&self, after: Duration) -> Result<()> {
        let ms = validate::lease(after)?;
        let holder = self.one()?.clone();
        if holder.kind == LockKind::Read {
            return Err(Error::invalid(format!("{}: each read hold keeps the lease it was taken with", holder.context("releasing later"))));
        }
        let this = holder.clone();
        detached(&holder.ctx, &holder.op, move |guard| async move {
            let _guard = guard;
            release_later(&this, ms).await
        })
        .await
    }

    /// Ends this holder's hold at least `min_hold` after it was taken (a cron job run
    /// on several hosts: a host whose schedule fires a little later finds it held
    /// and skips): released now (every level) once it has lasted that long, else
    /// left to expire when it has ([`Lock::release_after`] the rest). `Ok(None)`:
    /// released now; `Ok(Some(left))`: it stays held that much longer. Errors as
    /// [`Lock::release_all`] and [`Lock::release_after`].
    pub async fn release_min_hold(&self, min_hold: Duration) -> Result<Option<Duration>> {
        let left = {
            let held = self.one()?.cell.state.lock().unwrap();
            (held.count > 0).then(|| min_hold.saturating_sub(held.since.elapsed())).filter(|left| *left >= Duration::from_millis(1))
        };
        match left {
            Some(left) => self.release_after(left).await.map(|()| Some(left)),
            None => self.release_all().await.map(|_| None),
        }
    }
}

async fn release_later(h: &Arc<Holder>, ms: u64) -> Result<()> {
    let context = h.context("releasing later");
    let generation = {
        let mut st = h.cell.state.lock().unwrap();
        if st.count == 0 {
            return Err(match &st.lost_error {
                Some(lost) => lost.clone(),
                None => Error::new(ErrorKind::NotOwner, format!("{context}: this holder does not hold it")),
            });
        }
        // No renewal from here on: one sent after this call would undo its expiry.
        let was = std::mem::replace(&mut st.watchdog, false);
        (st.generation, was)
    };
    let restore = |h: &Holder| {
        let mut st = h.cell.state.lock().unwrap();
        if st.generation == generation.0 && st.count > 0 {
            st.watchdog = generation.1;
        }
    };
    let mut conn = match h.ctx.conn() {
        Ok(conn) => conn,
        Err(e) => {
            restore(h);
            return Err(e);
        }
    };
    let later = format!("{}:later", h.field);
    let set: redis::RedisResult<i64> = scripts::RELEASE_LATER
        .key(&*h.names.name)
        .key(h.names.holder_info(&h.field))
        .key(h.names.holder_info(&later))
        .arg(&*h.field)
        .arg(ms)
        .arg(&later)
        .invoke_async(&mut conn)
        .await;
    match set {
        Ok(1) => {
            let mut st = h.cell.state.lock().unwrap();
            if st.generation == generation.0 && st.count > 0 {
                st.lost_levels = 0;
                h.cell.finish(&mut st);
            }
            drop(st);
            // The note expires with the lock: nothing to remove later.
            h.cell.take_note_written();
            Ok(())
        }
        Ok(_) => {
            h.cell.mark_lost(generation.0, "its owner field was gone when it was to be released later (expired or force-unlocked)");
            Err(h.cell.state.lock().unwrap().lost_error.clone().unwrap_or_else(|| h.cell.lost_error("its owner field was gone")))
        }
        Err(e) => {
            restore(h);
            Err(Error::from_redis(&e, &context))
        }
    }
}
