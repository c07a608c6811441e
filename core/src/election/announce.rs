//! A new leader says who it is, right after its campaign won: one script call that
//! writes its holder note and publishes it, with its term, on the election's
//! leader channel (scripts/election/announce.lua). The note is then the hold's:
//! refreshed with its renewals and removed with its release, as any note.

use crate::lock::Lock;
use crate::scripts;

/// Announces `lock`'s current hold as leader with `term`. Best effort: a failure
/// costs observers the announcement (they still hear the lock's release and its
/// lease's end) and `leader()` the note, never the leadership.
pub(super) async fn announce(lock: &Lock, term: u64) {
    let Some(ticket) = lock.note_now() else { return };
    let Ok(holder) = lock.one() else { return };
    let Ok(mut conn) = holder.ctx.conn() else { return };
    let reply: redis::RedisResult<i64> = scripts::ELECTION_ANNOUNCE
        .key(&*ticket.key)
        .key(&ticket.note_key)
        .key(holder.names.leader_channel())
        .arg(&*ticket.owner)
        .arg(ticket.text.as_deref().unwrap_or("{}"))
        .arg(ticket.held_ms)
        .arg(term)
        .arg(holder.ctx.transport.publish_command())
        .invoke_async(&mut conn)
        .await;
    match reply {
        Ok(1) => lock.note_written(ticket.generation),
        // Lost already: the hold's loss is told by its own signal.
        Ok(_) => {}
        Err(e) => tracing::warn!(election = %lock.name(), term, error = %e, "the new leader's announcement failed; observers learn of it at the next release or lease end"),
    }
}
