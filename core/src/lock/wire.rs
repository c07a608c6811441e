//! What differs between lock kinds on the wire: the script each call runs, with
//! which keys and arguments (where waiters listen: holder.rs). Everything else of
//! the protocol (replies, lost replies, hand-off, renewal rounds) is shared
//! (reentrant.rs, release.rs). Every acquire script answers `{1, count, token}` (a fair take that left waiters:
//! `{1, 1, 0, head}`, then [`fair_shift`]) or `{0, pttl}` (the
//! RLock acquire: a bare count when it has no token, the cheapest reply for the server);
//! every release script answers nil (not the owner), 0 (still held) or 1 (released).

use redis::{FromRedisValue, RedisResult, Script};

use super::holder::Holder;
use super::LockKind;
use crate::scripts;
use crate::transport::{Command, Conn};

/// One script call, kept as data so that it can be sent alone (again, on a retry) or
/// in a pipeline: `EVALSHA <sha> <keys> <keys...> <args...>`, written straight into
/// the form the connection it goes out on sends (transport's `Command`).
pub(crate) struct Call {
    script: &'static Script,
    command: Command,
}

impl Call {
    /// `EVALSHA <sha> <keys>` for `h`: the caller appends exactly `keys` keys, then the arguments.
    fn new(h: &Holder, script: &'static Script, keys: usize) -> Call {
        let mut command = h.ctx.transport.command();
        command.arg(b"EVALSHA");
        command.arg(script.get_hash().as_bytes());
        command.num(keys as u64);
        Call { script, command }
    }

    fn arg(mut self, arg: impl AsRef<[u8]>) -> Call {
        self.command.arg(arg.as_ref());
        self
    }

    fn num(mut self, n: u64) -> Call {
        self.command.num(n);
        self
    }

    /// `arg` when there is one.
    fn opt(self, arg: Option<&[u8]>) -> Call {
        match arg {
            Some(arg) => self.arg(arg),
            None => self,
        }
    }

    pub fn script(&self) -> &'static Script {
        self.script
    }

    /// Runs it; after a NOSCRIPT (a SCRIPT FLUSH since the connection asked what the
    /// server has, a cluster: scripts/mod.rs) loads the script and runs it again, like
    /// redis-rs's `invoke_async`, but up to `NOSCRIPT_RELOADS` times.
    pub async fn invoke<T: FromRedisValue>(&self, conn: &mut Conn) -> RedisResult<T> {
        let mut loads = 0;
        loop {
            match self.send(conn).await {
                Err(e) if loads < crate::scripts::NOSCRIPT_RELOADS && e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript) => {
                    self.script.load_async(conn).await?;
                    loads += 1;
                }
                other => return other,
            }
        }
    }

    async fn send<T: FromRedisValue>(&self, conn: &Conn) -> RedisResult<T> {
        let value = conn.request_command(&self.command).await?.extract_error()?;
        Ok(T::from_redis_value(value)?)
    }

    /// The same call as a redis-rs command (for a pipeline, the replica acknowledgement's).
    pub fn to_cmd(&self) -> redis::Cmd {
        self.command.to_cmd().into_owned()
    }
}

/// The acquire of one level with `lease` ms; with `grant`, it records what it took
/// there (behind Sentinel or on a Cluster: lock/acked.rs).
pub(crate) fn acquire(h: &Holder, lease: u64, grant: Option<&[u8]>) -> Call {
    let n = &h.names;
    let field = h.field.as_ref();
    let g = grant.is_some() as usize;
    let call = match h.kind {
        LockKind::Reentrant => Call::new(h, &scripts::ACQUIRE, 1 + g).arg(&n.name).opt(grant).num(lease).arg(field),
        LockKind::Fenced => {
            Call::new(h, &scripts::ACQUIRE, 2 + g).arg(&n.name).arg(&n.token()).opt(grant).num(lease).arg(field)
        }
        LockKind::Fair => Call::new(h, &scripts::FAIR_ACQUIRE, 3 + g)
            .arg(&n.name)
            .arg(&n.queue())
            .arg(&n.queue_timeouts())
            .opt(grant)
            .num(lease)
            .arg(field)
            .num(h.fair_wait_ms),
        LockKind::Read => Call::new(h, &scripts::READ_ACQUIRE, 2 + g)
            .arg(&n.name)
            .arg(n.read_timeouts(&h.owner))
            .opt(grant)
            .num(lease)
            .arg(field)
            .arg(format!("{}:write", h.owner)),
        LockKind::Write => Call::new(h, &scripts::WRITE_ACQUIRE, 1 + g).arg(&n.name).opt(grant).num(lease).arg(field),
    };
    call.opt(grant.map(|_| b"1".as_slice()))
}

/// The release of `levels` ("all" or a number), idempotent through `latch`; for the
/// kinds that hand off, maybe straight to a waiter of this client (`successor`, with
/// the lease its hold gets; handoff.rs).
pub(crate) fn release(h: &Holder, latch: &[u8], lease_ms: u64, levels: &str, successor: Option<(&Holder, u64)>) -> Call {
    let n = &h.names;
    let ctx = &h.ctx;
    let successor = successor.filter(|_| h.kind.hands_off());
    let fenced_successor = successor.as_ref().is_some_and(|(s, _)| s.is_fenced());
    let mut call = match h.kind {
        LockKind::Reentrant | LockKind::Fenced => {
            Call::new(h, &scripts::RELEASE, 3 + fenced_successor as usize).arg(&n.name).arg(&n.channel())
        }
        LockKind::Fair => Call::new(h, &scripts::FAIR_RELEASE, 5)
            .arg(&n.name)
            .arg(&n.queue())
            .arg(&n.queue_timeouts())
            .arg(&n.channel()),
        LockKind::Write => Call::new(h, &scripts::WRITE_RELEASE, 3).arg(&n.name).arg(&n.rw_channel()),
        LockKind::Read => Call::new(h, &scripts::READ_RELEASE, 5)
            .arg(&n.name)
            .arg(&n.rw_channel())
            .arg(n.read_timeouts(&h.owner))
            .arg(n.tag()),
    };
    call = call.arg(latch);
    if let Some((successor, _)) = successor.as_ref().filter(|_| fenced_successor) {
        call = call.arg(&successor.names.token());
    }
    call = call
        .arg(h.field.as_ref())
        .num(lease_ms)
        .arg(ctx.transport.publish_command())
        .num(ctx.config.retry_window.as_millis() as u64)
        .arg(levels);
    if let Some((successor, lease_ms)) = successor {
        call = call.arg(successor.field.as_ref()).num(lease_ms);
    }
    call
}

/// A fair-lock waiter leaving the queue; nothing for other kinds.
pub(crate) fn leave_queue(h: &Holder) -> Option<Call> {
    let n = &h.names;
    (h.kind == LockKind::Fair).then(|| {
        Call::new(h, &scripts::FAIR_LEAVE, 4)
            .arg(&n.name)
            .arg(&n.queue())
            .arg(&n.queue_timeouts())
            .arg(&n.channel())
            .arg(h.field.as_ref())
            .num(h.fair_wait_ms)
            .arg(h.ctx.transport.publish_command())
    })
}

/// After a fair take that left waiters (`head` first), moving them up a turn (fair_shift.lua).
pub(crate) fn fair_shift(h: &Holder, head: &[u8]) -> Call {
    let n = &h.names;
    Call::new(h, &scripts::FAIR_SHIFT, 2).arg(n.queue()).arg(n.queue_timeouts()).arg(head).num(h.fair_wait_ms)
}

/// Deleting the lock whoever holds it, waking who waits for it.
pub(crate) fn force_unlock(h: &Holder) -> Call {
    let n = &h.names;
    let publish = h.ctx.transport.publish_command();
    match h.kind {
        LockKind::Fair => Call::new(h, &scripts::FORCE_UNLOCK, 3).arg(&n.name).arg(&n.channel()).arg(&n.queue()).arg(publish).arg("0"),
        LockKind::Read | LockKind::Write => {
            Call::new(h, &scripts::FORCE_UNLOCK, 2).arg(&n.name).arg(&n.rw_channel()).arg(publish).arg("1")
        }
        LockKind::Reentrant | LockKind::Fenced => {
            Call::new(h, &scripts::FORCE_UNLOCK, 2).arg(&n.name).arg(&n.channel()).arg(publish).arg("0")
        }
    }
}

/// The watchdog's renewal script for holds of `kind` (renew.lua's reply format).
pub(crate) fn renew_script(kind: LockKind) -> &'static Script {
    match kind {
        LockKind::Read => &scripts::READ_RENEW,
        _ => &scripts::RENEW,
    }
}
