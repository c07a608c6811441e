//! The release script (DESIGN §2): one call, idempotent through its reply latch
//! (retries reuse the request id and get the first answer) for as long as the latch
//! lives, the retry window, and what it answered. What a release does with the
//! answer (the hold, a hand-off, a call left unanswered) is reentrant.rs's.

use std::time::{Duration, Instant};

use super::holder::Holder;
use super::wire;
use crate::error::{Error, Result};
use crate::transport::Conn;

/// Deletes this holder's field, revived by a late renewal of a lost hold (or left by
/// a hand-over settled after the successor's hold was lost), unless the holder
/// acquired again since.
pub(crate) async fn release_revived(h: &Holder, generation: u64) -> Result<()> {
    if h.cell.state.lock().unwrap().generation != generation {
        return Ok(());
    }
    let conn = h.ctx.conn()?;
    release_script(h, conn, h.names.latch(h.ctx.next_request()), 0, Levels::All, None).await?;
    Ok(())
}

/// What the release script answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReleaseReply {
    /// The owner field was absent.
    NotOwner,
    /// Levels are left.
    StillHeld,
    /// The lock is free; a waiter was woken by a message.
    Released,
    /// The lock went straight to the hand-off's successor, with this token (0 unfenced).
    Handed(u64),
}

impl ReleaseReply {
    fn decode(value: &redis::Value) -> Result<ReleaseReply> {
        use redis::Value::{Array, Int, Nil};
        match value {
            Nil => Ok(ReleaseReply::NotOwner),
            Int(0) => Ok(ReleaseReply::StillHeld),
            Int(1) => Ok(ReleaseReply::Released),
            Array(parts) => match parts.as_slice() {
                [Int(2), Int(token)] => Ok(ReleaseReply::Handed(*token as u64)),
                _ => Err(Error::internal(format!("unexpected release reply {value:?}"))),
            },
            _ => Err(Error::internal(format!("unexpected release reply {value:?}"))),
        }
    }
}

/// How many levels a release script call gives up.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Levels {
    All,
    Some(u32),
}

/// Runs the release script, retrying after a lost reply with the same request (its
/// reply latch, `latch`) while the latch lives (the retry window); then queues the
/// latch for deletion. `successor`: a hand-off's, with its lease (handoff.rs).
/// `Ok(None)`: sent, never answered: it may or may not have run.
/// An error means it did not run (refused before anything was sent, or failed).
pub(crate) async fn release_script(
    h: &Holder,
    mut conn: Conn,
    latch: Vec<u8>,
    lease_ms: u64,
    levels: Levels,
    successor: Option<(&Holder, u64)>,
) -> Result<Option<ReleaseReply>> {
    let (ctx, names) = (&h.ctx, &h.names);
    let window = ctx.config.retry_window;
    let mut digits = itoa::Buffer::new();
    let levels = match levels {
        Levels::All => "all",
        Levels::Some(n) => digits.format(n),
    };
    let call = wire::release(h, &latch, lease_ms, levels, successor);
    let started = Instant::now();
    let mut delay = Duration::from_millis(10);
    let mut sent = false;
    let reply = loop {
        match call.invoke::<redis::Value>(&mut conn).await {
            Ok(reply) => break reply,
            // A refused connection sent nothing; once an attempt may have run, no later
            // failure (a refused reconnect, say) tells otherwise.
            // A refusal for now (a failover or migration under way) did not run it either:
            // it is tried again within the window like a lost reply, not failed at once.
            Err(e) if sent || Error::is_ambiguous(&e) || Error::is_refused_for_now(&e) => {
                sent |= !e.is_connection_refusal() && !Error::is_refused_for_now(&e);
                if started.elapsed() + delay >= window {
                    if !sent {
                        return Err(Error::from_redis(&e, &format!("releasing lock \"{}\"", names.display())));
                    }
                    tracing::debug!(lock = %names.display(), error = %e, "release not answered within the retry window");
                    return Ok(None);
                }
                tracing::debug!(lock = %names.display(), error = %e, "release reply lost; retrying with the same request id");
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_millis(500));
            }
            Err(e) => return Err(Error::from_redis(&e, &format!("releasing lock \"{}\"", names.display()))),
        }
    };
    // The latch only answers retries of this call, which are over now.
    ctx.remove_latch_later(latch);
    ReleaseReply::decode(&reply).map(Some)
}
