//! One holder of one lock: its identity (name, owner field, kind), its hold
//! (hold/state.rs) and the calls that change it. Every such call runs under the
//! holder's operation lock and applies the reply to the local state itself, to the
//! end even if its caller goes away (hold/pending.rs). The protocol (the scripts
//! and their replies) is in reentrant.rs. While it holds, the client keeps it alive
//! and renews it through [`Held`].

use std::collections::HashMap;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex, Weak};
use std::time::Instant;

use futures_util::future::BoxFuture;

use super::{reentrant, wire, LockKind};
use crate::ctx::Ctx;
use crate::error::Result;
use crate::hold::pending::{detached, Pending, Undo};
use crate::hold::state::{Acquired, HoldCell};
use crate::hold::{Hold, Released};
use crate::names::LockNames;
use crate::renewal::{Held, Ticket};
use crate::waiting::Attempt;

pub(crate) struct Holder {
    pub ctx: Arc<Ctx>,
    pub names: LockNames,
    pub owner: String,
    pub kind: LockKind,
    /// The field it writes in the lock hash (wire.rs: the owner, or `<owner>:write`).
    pub field: String,
    /// Where its waits listen (wire.rs).
    pub wait_channel: Vec<u8>,
    /// Fair locks: how long a waiter may miss its turn (Redisson's `threadWaitTime`).
    pub fair_wait_ms: u64,
    pub uid: u64,
    /// Held by every call that changes the hold (and by a hand-off to this holder).
    pub op: Arc<tokio::sync::Mutex<()>>,
    pub cell: Arc<HoldCell>,
    /// Live `Lock` handles of this holder: the last one dropped while holding is logged.
    pub handles: AtomicUsize,
    registry: Weak<Holders>,
}

static NEXT_UID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// The client's live holders: handles for the same (name, owner field, kind) share one.
#[derive(Default)]
pub(crate) struct Holders {
    map: Mutex<HashMap<(Vec<u8>, String, LockKind), Weak<Holder>>>,
}

impl Holders {
    pub fn get_or_create(self: &Arc<Self>, ctx: &Arc<Ctx>, name: &[u8], owner: String, kind: LockKind, fair_wait_ms: u64) -> Arc<Holder> {
        let key = (name.to_vec(), owner, kind);
        let mut map = self.map.lock().unwrap();
        if let Some(existing) = map.get(&key).and_then(Weak::upgrade) {
            return existing;
        }
        let uid = NEXT_UID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let names = LockNames::new(name);
        let cell = HoldCell::new(ctx.clone(), uid, names.display.clone(), key.1.clone());
        let field = wire::field(&key.1, kind);
        let wait_channel = wire::wait_channel(&names, &field, kind);
        let holder = Arc::new(Holder {
            ctx: ctx.clone(),
            names,
            owner: key.1.clone(),
            kind,
            field,
            wait_channel,
            fair_wait_ms,
            uid,
            op: Arc::new(tokio::sync::Mutex::new(())),
            cell,
            handles: AtomicUsize::new(0),
            registry: Arc::downgrade(self),
        });
        map.insert(key, Arc::downgrade(&holder));
        holder
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        // Held holders are kept alive by the client, so a holder that goes away holds nothing.
        if let Some(registry) = self.registry.upgrade() {
            let mut map = registry.map.lock().unwrap();
            let key = (self.names.name.clone(), self.owner.clone(), self.kind);
            if map.get(&key).is_some_and(|w| w.strong_count() == 0) {
                map.remove(&key);
            }
        }
    }
}

impl Holder {
    pub fn is_fenced(&self) -> bool {
        self.kind == LockKind::Fenced
    }

    pub fn context(&self, what: &str) -> String {
        format!("{what} lock \"{}\"", self.names.display)
    }

    /// One acquire attempt.
    pub async fn attempt(self: &Arc<Self>, lease_ms: Option<u64>) -> Result<Attempt<PendingHold>> {
        let this = self.clone();
        detached(&self.ctx, &self.op, move |guard| reentrant::acquire_once(this, lease_ms, guard)).await
    }

    /// Releases one level (or all), idempotently (see reentrant.rs).
    pub async fn release(self: &Arc<Self>, all: bool) -> Result<Released> {
        let this = self.clone();
        detached(&self.ctx, &self.op, move |guard| async move { reentrant::release_once(&this, all, guard).await }).await
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
            tracing::debug!(lock = %self.names.display, "{e}; the others skip this waiter once its turn passes");
        }
    }

    /// Applies an acquisition to the local view (see `HoldCell::apply`) and, for a
    /// new hold, has the client keep and renew it.
    pub fn apply(self: &Arc<Self>, acquired: Acquired) -> Hold {
        let (hold, fresh, deadline) = self.cell.apply(acquired);
        if fresh {
            self.ctx.held.register(self.uid, self.clone());
        }
        // After registering: the deadline timer's next look must find this hold.
        self.ctx.deadlines.arm(deadline);
        hold
    }
}

impl Held for Holder {
    fn begin_renewal(&self, horizon: Option<Instant>) -> Option<Ticket> {
        let generation = self.cell.begin_renewal(horizon)?;
        Some(Ticket { script: wire::renew_script(self.kind), key: self.names.name.clone(), owner: self.field.clone(), generation })
    }

    fn renewed(self: Arc<Self>, generation: u64, sent_at: Instant) {
        if self.cell.renewed(generation, sent_at) {
            tracing::debug!(lock = %self.names.display, "a renewal landed after its hold was reported lost; releasing it");
            let ctx = self.ctx.clone();
            ctx.runtime.spawn(async move {
                let this = self.clone();
                let _ = detached(&self.ctx, &self.op, move |guard| async move {
                    let _guard = guard;
                    reentrant::release_revived(&this, generation).await
                })
                .await;
            });
        }
    }

    fn found_gone(&self, generation: u64) {
        self.cell.renewal_found_gone(generation);
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

/// One acquired level on its way to the caller.
pub(crate) struct Level {
    pub holder: Arc<Holder>,
    pub hold: Hold,
}

/// An acquired level that is released again if nobody takes it (a dropped future).
pub(crate) type PendingHold = Pending<Level>;

impl Undo for Level {
    fn undo(self) {
        let holder = self.holder;
        tracing::debug!(lock = %holder.names.display, "acquire abandoned by its caller; releasing");
        let runtime = holder.ctx.runtime.clone();
        runtime.spawn(async move {
            let _ = holder.release(false).await;
        });
    }
}
