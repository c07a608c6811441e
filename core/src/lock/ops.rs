//! The calls that change a holder's hold. Every such call runs under the holder's
//! operation lock and applies the reply to the local state itself, to the end even
//! if its caller goes away (hold/pending.rs). The protocol (the scripts and their
//! replies) is in reentrant.rs. While it holds, the client keeps it alive and
//! renews it through [`Held`].

use std::sync::Arc;
use std::time::Instant;

use futures_util::future::BoxFuture;

use super::handoff::Directed;
use super::holder::{Holder, Level, PendingHold};
use super::release::release_revived;
use super::{acked, note, reentrant, wire};
use crate::error::Result;
use crate::hold::pending::{detached, Undo};
use crate::hold::Released;
use crate::renewal::{Held, NoteTicket, Ticket};
use crate::waiting::Attempt;

impl Holder {
    /// One acquire attempt.
    pub async fn attempt(self: &Arc<Self>, lease_ms: Option<u64>) -> Result<Attempt<PendingHold>> {
        let this = self.clone();
        if self.ctx.acknowledged() {
            return detached(&self.ctx, &self.op, move |guard| acked::acquire_once(this, lease_ms, guard)).await;
        }
        detached(&self.ctx, &self.op, move |guard| reentrant::acquire_once(this, lease_ms, guard)).await
    }

    /// Releases one level (or all), idempotently (see reentrant.rs).
    pub async fn release(self: &Arc<Self>, all: bool) -> Result<Released> {
        self.release_to(all, None).await
    }

    /// [`Holder::release`], handing a hold it ends to `directed` rather than to the
    /// hub's first waiter (a multi-lock's member, multi/follow.rs).
    pub async fn release_to(self: &Arc<Self>, all: bool, directed: Option<Directed>) -> Result<Released> {
        let this = self.clone();
        detached(&self.ctx, &self.op, move |guard| async move {
            let conn = this.ctx.conn();
            // Kept through the note's removal: a new hold of this holder writes its own.
            let op = guard.clone();
            let released = reentrant::release_once(&this, all, guard, directed).await;
            // A note left by the hold goes with it, a lost hold's too, once it is told:
            // here, where the release runs to its end even if its caller left (a close
            // that gave up waiting, a Redlock answered by its quorum), and awaited (a
            // process that exits right after must not leave it for a lease).
            let ended = match &released {
                Ok(Released::Unlocked) => true,
                Err(e) => e.kind() == crate::error::ErrorKind::LockLost,
                Ok(Released::StillHeld(_)) => false,
            };
            if let (true, Ok(conn)) = (ended, conn) {
                if this.cell.take_note_written() {
                    note::remove(&this, conn).await;
                }
            }
            drop(op);
            released
        })
        .await
    }

    /// Takes a fair-lock waiter that gave up out of the queue (after any try of its
    /// own still in flight); best effort: a waiter left behind is skipped once its
    /// turn passes.
    pub async fn leave_queue(self: &Arc<Self>) {
        let Some(call) = wire::leave_queue(self) else { return };
        let this = self.clone();
        let left = detached(&self.ctx, &self.op, move |guard| async move {
            let _guard = guard;
            let mut conn = this.ctx.conn()?;
            call.invoke::<i64>(&mut conn)
                .await
                .map_err(|e| crate::error::Error::from_redis(&e, &this.context("leaving the queue of")))
        })
        .await;
        if let Err(e) = left {
            tracing::debug!(lock = %self.names.display(), "{e}; the others skip this waiter once its turn passes");
        }
    }
}

impl Held for Holder {
    fn begin_note(&self, renewing: bool) -> Option<NoteTicket> {
        self.note_ticket(false, renewing)
    }

    fn noted(&self, generation: u64) {
        self.cell.note_written(generation);
    }

    fn begin_renewal(&self, horizon: Option<Instant>) -> Option<Ticket> {
        let generation = self.cell.begin_renewal(horizon)?;
        Some(Ticket { script: wire::renew_script(self.kind), key: self.names.name.clone(), owner: self.field.clone(), generation })
    }

    fn renewed(self: Arc<Self>, generation: u64, sent_at: Instant) {
        if self.cell.renewed(generation, sent_at) {
            tracing::debug!(lock = %self.names.display(), "a renewal landed after its hold was reported lost; releasing it");
            let ctx = self.ctx.clone();
            ctx.runtime.spawn(async move {
                let this = self.clone();
                let _ = detached(&self.ctx, &self.op, move |guard| async move {
                    let _guard = guard;
                    release_revived(&this, generation).await
                })
                .await;
            });
        }
    }

    fn found_gone(&self, generation: u64) -> bool {
        self.cell.renewal_found_gone(generation)
    }

    fn deadline_of(&self, generation: u64) -> Option<Instant> {
        self.cell.deadline_of(generation)
    }

    fn expire_if_due(&self, now: Instant) -> Option<Instant> {
        self.cell.expire_if_due(now)
    }

    fn release_all(self: Arc<Self>) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            let _ = self.release(true).await;
        })
    }
}

impl Undo for Level {
    fn undo(self) {
        let holder = self.holder;
        tracing::debug!(lock = %holder.names.display(), "acquire abandoned by its caller; releasing");
        let runtime = holder.ctx.runtime.clone();
        runtime.spawn(async move {
            let _ = holder.release(false).await;
        });
    }
}
