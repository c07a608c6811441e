//! Who leads an election: [`Leader`], read from the server (the lock hash, its
//! PTTL and the token counter in one script, then the leader's note) or taken
//! from a new leader's announcement.

use std::time::Duration;

use crate::ctx::Ctx;
use crate::error::{Error, ErrorKind, Result};
use crate::lock::status::query_idempotent;
use crate::lock::{HolderEntry, HolderNote};
use crate::names::LockNames;
use crate::scripts;

/// The leader of an election, as read or announced.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Leader {
    /// Its term: the fencing token its campaign took (the token counter when read).
    pub term: u64,
    /// Who it is: its owner field and note (app, host, pid, label, since) and how long
    /// it has led, by the server's clock (`None` in an announcement: it just began).
    pub holder: HolderEntry,
    /// What was left of its lease when read or announced; `None` for a lock
    /// without expiry. A leader that stopped renewing is gone at the latest then.
    pub lease_left: Option<Duration>,
}

impl Leader {
    /// "term 7: billing on host-7 pid 4242 (thread worker-3) for 5 s": for people.
    pub fn describe(&self) -> String {
        format!("term {}: {}", self.term, self.holder.describe())
    }
}

/// Who leads the election `name` now, and the latest term handed out.
pub(crate) async fn read(ctx: &Ctx, name: &[u8]) -> Result<Option<Leader>> {
    Ok(read_state(ctx, name).await?.0)
}

/// [`read`], with the latest term (the token counter, 0 when none) besides.
pub(super) async fn read_state(ctx: &Ctx, name: &[u8]) -> Result<(Option<Leader>, u64)> {
    let names = LockNames::new(name);
    let context = format!("reading the leader of election \"{}\"", names.display());
    let conn = ctx.conn()?;
    let mut call = scripts::ELECTION_LEADER.prepare_invoke();
    call.key(&*names.name).key(names.token());
    let reply: redis::RedisResult<(Vec<String>, i64, String, u64, u64)> = call.invoke_async(&mut conn.clone()).await;
    let reply = match reply {
        Err(e) if Error::is_ambiguous(&e) => call.invoke_async(&mut conn.clone()).await,
        other => other,
    };
    let (fields, pttl, token, secs, micros) = reply.map_err(|e| Error::from_redis(&e, &context))?;
    let term = match token.as_str() {
        "" => 0,
        t => t.parse().map_err(|_| Error::new(ErrorKind::WrongType, format!("{context}: its fencing-token counter is not a number")))?,
    };
    // A read-write lock's hash also says which side holds it.
    let Some(owner) = fields.chunks(2).map(|pair| pair[0].clone()).find(|field| field != "mode") else { return Ok((None, term)) };
    let count = fields.chunks(2).find(|pair| pair[0] == owner).and_then(|pair| pair.get(1)).and_then(|c| c.parse().ok()).unwrap_or(1);
    let info: Option<String> = query_idempotent(&conn, &redis::Cmd::get(names.holder_info(&owner)), &context).await.unwrap_or(None);
    let note = info.as_deref().and_then(HolderNote::parse);
    let server_ms = secs * 1000 + micros / 1000;
    let held_for = note.as_ref().and_then(|n| n.since_ms).map(|since| Duration::from_millis(server_ms.saturating_sub(since)));
    let holder = HolderEntry { owner, count, info, note, held_for };
    Ok((Some(Leader { term, holder, lease_left: lease_left(pttl) }), term))
}

/// A lock's PTTL as time left; `None` for no expiry.
fn lease_left(pttl: i64) -> Option<Duration> {
    (pttl != -1).then(|| Duration::from_millis(pttl.max(0) as u64))
}

/// The leader a new leader's announcement describes (scripts/election/announce.lua:
/// its note with "term", "owner" and "lease"); `None` for a message that is not one.
pub(super) fn announced(payload: &[u8]) -> Option<Leader> {
    let serde_json::Value::Object(mut fields) = serde_json::from_slice(payload).ok()? else { return None };
    let term = fields.get("term")?.as_u64()?;
    let owner = fields.remove("owner")?.as_str()?.to_string();
    let lease = fields.remove("lease").and_then(|l| l.as_i64()).unwrap_or(-1);
    let info = serde_json::Value::Object(fields).to_string();
    let note = HolderNote::parse(&info);
    let holder = HolderEntry { owner, count: 1, info: Some(info), note, held_for: None };
    Some(Leader { term, holder, lease_left: lease_left(lease) })
}

#[cfg(test)]
mod tests {
    #[test]
    fn announcements_are_read_and_other_messages_are_not() {
        let leader = super::announced(br#"{"host":"h","pid":7,"since":1000,"term":12,"owner":"c:1","lease":2900}"#).unwrap();
        assert_eq!((leader.term, leader.holder.owner.as_str()), (12, "c:1"));
        assert_eq!(leader.lease_left, Some(std::time::Duration::from_millis(2900)));
        assert_eq!(leader.holder.note.as_ref().and_then(|n| n.pid), Some(7));
        assert!(!leader.holder.info.as_deref().unwrap().contains("owner"), "the note as stored");
        for junk in [&b"0"[..], b"", b"{}", br#"{"term":"x","owner":"c:1"}"#, b"[1]"] {
            assert!(super::announced(junk).is_none(), "{:?}", String::from_utf8_lossy(junk));
        }
    }
}
