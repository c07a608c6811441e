//! What differs between lock kinds on the wire: the script each call runs, with
//! which keys and arguments, and where waiters listen. Everything else of the
//! protocol (replies, lost replies, hand-off, renewal rounds) is shared
//! (reentrant.rs). Every acquire script answers `{1, count, token}` or `{0, pttl}`;
//! every release script answers nil (not the owner), 0 (still held) or 1 (released).

use redis::{Pipeline, Script, ScriptInvocation};

use super::handoff::Handoff;
use super::holder::Holder;
use super::LockKind;
use crate::scripts;

/// One script call, kept as data so that it can be sent alone or in a pipeline.
pub(crate) struct Call {
    script: &'static Script,
    keys: Vec<Vec<u8>>,
    args: Vec<Vec<u8>>,
}

impl Call {
    fn new(script: &'static Script, keys: Vec<Vec<u8>>, args: Vec<Vec<u8>>) -> Call {
        Call { script, keys, args }
    }

    pub fn script(&self) -> &'static Script {
        self.script
    }

    pub fn invocation(&self) -> ScriptInvocation<'static> {
        let mut call = self.script.prepare_invoke();
        for key in &self.keys {
            call.key(key);
        }
        for arg in &self.args {
            call.arg(arg);
        }
        call
    }

    /// The same call as an EVALSHA in `pipe` (e.g. before a WAIT on its connection).
    pub fn evalsha(&self, pipe: &mut Pipeline) {
        pipe.cmd("EVALSHA").arg(self.script.get_hash()).arg(self.keys.len()).arg(&self.keys).arg(&self.args);
    }
}

fn arg(value: impl ToString) -> Vec<u8> {
    value.to_string().into_bytes()
}

/// The acquire of one level with `lease` ms.
pub(crate) fn acquire(h: &Holder, lease: u64) -> Call {
    let n = &h.names;
    let field = arg(&h.field);
    match h.kind {
        LockKind::Reentrant => Call::new(&scripts::ACQUIRE, vec![n.name.clone()], vec![arg(lease), field]),
        LockKind::Fenced => Call::new(&scripts::ACQUIRE, vec![n.name.clone(), n.token.clone()], vec![arg(lease), field]),
        LockKind::Fair => Call::new(
            &scripts::FAIR_ACQUIRE,
            vec![n.name.clone(), n.queue.clone(), n.queue_timeouts.clone()],
            vec![arg(lease), field, arg(h.fair_wait_ms)],
        ),
        LockKind::Read => Call::new(
            &scripts::READ_ACQUIRE,
            vec![n.name.clone(), n.read_timeouts(&h.owner)],
            vec![arg(lease), field, arg(format!("{}:write", h.owner))],
        ),
        LockKind::Write => Call::new(&scripts::WRITE_ACQUIRE, vec![n.name.clone()], vec![arg(lease), field]),
    }
}

/// The release of `levels` ("all" or a number), idempotent through `latch`; for the
/// kinds that hand off, maybe straight to a waiter of this client.
pub(crate) fn release(h: &Holder, latch: &[u8], lease_ms: u64, levels: &str, handoff: Option<&Handoff>) -> Call {
    let n = &h.names;
    let ctx = &h.ctx;
    let args = vec![
        arg(&h.field),
        arg(lease_ms),
        arg(ctx.transport.publish_command()),
        arg(ctx.config.retry_window.as_millis()),
        arg(levels),
    ];
    let (script, mut keys): (&'static Script, Vec<Vec<u8>>) = match h.kind {
        LockKind::Reentrant | LockKind::Fenced => (&scripts::RELEASE, vec![n.name.clone(), n.channel.clone()]),
        LockKind::Fair => (&scripts::FAIR_RELEASE, vec![n.name.clone(), n.queue.clone(), n.queue_timeouts.clone(), n.channel.clone()]),
        LockKind::Write => (&scripts::WRITE_RELEASE, vec![n.name.clone(), n.rw_channel.clone()]),
        LockKind::Read => {
            (&scripts::READ_RELEASE, vec![n.name.clone(), n.rw_channel.clone(), n.read_timeouts(&h.owner), n.tag()])
        }
    };
    keys.push(latch.to_vec());
    let mut call = Call::new(script, keys, args);
    if let Some(handoff) = handoff.filter(|_| h.kind.hands_off()) {
        let successor = handoff.successor();
        if successor.is_fenced() {
            call.keys.push(successor.names.token.clone());
        }
        call.args.push(arg(&successor.field));
        call.args.push(arg(handoff.lease_ms));
    }
    call
}

/// A fair-lock waiter leaving the queue; nothing for other kinds.
pub(crate) fn leave_queue(h: &Holder) -> Option<Call> {
    let n = &h.names;
    (h.kind == LockKind::Fair).then(|| {
        Call::new(
            &scripts::FAIR_LEAVE,
            vec![n.name.clone(), n.queue.clone(), n.queue_timeouts.clone(), n.channel.clone()],
            vec![arg(&h.field), arg(h.fair_wait_ms), arg(h.ctx.transport.publish_command())],
        )
    })
}

/// Deleting the lock whoever holds it, waking who waits for it.
pub(crate) fn force_unlock(h: &Holder) -> Call {
    let n = &h.names;
    let publish = arg(h.ctx.transport.publish_command());
    match h.kind {
        LockKind::Fair => Call::new(&scripts::FORCE_UNLOCK, vec![n.name.clone(), n.channel.clone(), n.queue.clone()], vec![publish, arg(0)]),
        LockKind::Read | LockKind::Write => Call::new(&scripts::FORCE_UNLOCK, vec![n.name.clone(), n.rw_channel.clone()], vec![publish, arg(1)]),
        LockKind::Reentrant | LockKind::Fenced => Call::new(&scripts::FORCE_UNLOCK, vec![n.name.clone(), n.channel.clone()], vec![publish, arg(0)]),
    }
}

/// The watchdog's renewal script for holds of `kind` (renew.lua's reply format).
pub(crate) fn renew_script(kind: LockKind) -> &'static Script {
    match kind {
        LockKind::Read => &scripts::READ_RENEW,
        _ => &scripts::RENEW,
    }
}

/// The field this holder writes in the lock hash: the owner, or `<owner>:write`.
pub(crate) fn field(owner: &str, kind: LockKind) -> String {
    match kind {
        LockKind::Write => format!("{owner}:write"),
        _ => owner.to_string(),
    }
}

/// The channel a waiter of `kind` listens on.
pub(crate) fn wait_channel(names: &crate::names::LockNames, field: &str, kind: LockKind) -> Vec<u8> {
    match kind {
        LockKind::Fair => names.waiter_channel(field),
        LockKind::Read | LockKind::Write => names.rw_channel.clone(),
        LockKind::Reentrant | LockKind::Fenced => names.channel.clone(),
    }
}
