//! One holder of one lock: its identity (name, owner field, kind, where it waits)
//! and its hold (hold/state.rs). The calls that change the hold are in ops.rs.

use std::collections::HashMap;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex, Weak};

use super::who::HolderExtras;
use super::LockKind;
use crate::ctx::Ctx;
use crate::hold::pending::Pending;
use crate::hold::state::{Acquired, HoldCell};
use crate::hold::Hold;
use crate::names::LockNames;

pub(crate) struct Holder {
    pub ctx: Arc<Ctx>,
    pub names: LockNames,
    pub owner: String,
    pub kind: LockKind,
    /// The field it writes in the lock hash: the owner, or `<owner>:write`.
    pub field: String,
    /// Where its waits listen.
    pub wait_channel: Vec<u8>,
    /// Fair locks: how long a waiter may miss its turn (Redisson's `threadWaitTime`).
    pub fair_wait_ms: u64,
    pub uid: u64,
    /// Held by every call that changes the hold (and by a hand-off to this holder).
    pub op: Arc<tokio::sync::Mutex<()>>,
    pub cell: Arc<HoldCell>,
    /// Live `Lock` handles of this holder: the last one dropped while holding is logged.
    pub handles: AtomicUsize,
    /// Its label and command for notes, and who held the lock when it timed out.
    pub extras: Mutex<Option<Box<HolderExtras>>>,
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
        let field = field(&key.1, kind);
        let wait_channel = wait_channel(&names, &field, kind);
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
            extras: Mutex::new(None),
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

/// One acquired level on its way to the caller.
pub(crate) struct Level {
    pub holder: Arc<Holder>,
    pub hold: Hold,
}

/// An acquired level that is released again if nobody takes it (a dropped future).
pub(crate) type PendingHold = Pending<Level>;

/// The field this holder writes in the lock hash: the owner, or `<owner>:write`.
fn field(owner: &str, kind: LockKind) -> String {
    match kind {
        LockKind::Write => format!("{owner}:write"),
        _ => owner.to_string(),
    }
}

/// The channel a waiter of `kind` listens on.
fn wait_channel(names: &LockNames, field: &str, kind: LockKind) -> Vec<u8> {
    match kind {
        LockKind::Fair => names.waiter_channel(field),
        LockKind::Read | LockKind::Write => names.rw_channel.clone(),
        LockKind::Reentrant | LockKind::Fenced => names.channel.clone(),
    }
}
