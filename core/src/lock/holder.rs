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

/// A client may keep many (a handle per holder): the name and the owner are kept
/// once each, shared with the registry's key and the hold cell's messages.
pub(crate) struct Holder {
    pub ctx: Arc<Ctx>,
    pub names: LockNames,
    pub owner: Arc<str>,
    pub kind: LockKind,
    /// The field it writes in the lock hash: the owner, or `<owner>:write`.
    pub field: Arc<str>,
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
    map: Mutex<HashMap<(Arc<[u8]>, Arc<str>, LockKind), Weak<Holder>>>,
}

impl Holders {
    pub fn get_or_create(self: &Arc<Self>, ctx: &Arc<Ctx>, name: &[u8], owner: String, kind: LockKind, fair_wait_ms: u64) -> Arc<Holder> {
        let key = (Arc::<[u8]>::from(name), Arc::<str>::from(owner), kind);
        let mut map = self.map.lock().unwrap();
        if let Some(existing) = map.get(&key).and_then(Weak::upgrade) {
            return existing;
        }
        let uid = NEXT_UID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let names = LockNames::shared(key.0.clone());
        let cell = HoldCell::new(ctx.clone(), uid, key.0.clone(), key.1.clone());
        let holder = Arc::new(Holder {
            ctx: ctx.clone(),
            names,
            owner: key.1.clone(),
            kind,
            field: field(&key.1, kind),
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

    /// Whether its owner field is one of this client's (`<client id>:<holder id>`):
    /// no other client can have levels under it, only a call of its own.
    pub fn owner_is_ours(&self) -> bool {
        self.owner.strip_prefix(self.ctx.id.as_str()).is_some_and(|rest| rest.starts_with(':'))
    }

    pub fn context(&self, what: &str) -> String {
        format!("{what} lock \"{}\"", self.names.display())
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
fn field(owner: &Arc<str>, kind: LockKind) -> Arc<str> {
    match kind {
        LockKind::Write => format!("{owner}:write").into(),
        _ => owner.clone(),
    }
}

impl Holder {
    /// The channel its waits listen on (written per wait: see `LockNames`).
    pub fn wait_channel(&self) -> Vec<u8> {
        match self.kind {
            LockKind::Fair => self.names.waiter_channel(&self.field),
            LockKind::Read | LockKind::Write => self.names.rw_channel(),
            LockKind::Reentrant | LockKind::Fenced => self.names.channel(),
        }
    }
}
