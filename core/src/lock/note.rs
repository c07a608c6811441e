//! Holder notes: who holds a lock, for operators and for the waiters it keeps
//! waiting. A note is a small JSON object beside the hold (`ferrolock_holder_info`
//! keys, which Redisson ignores): the client's app name, host, pid, the holder's
//! thread or task label, what it runs, whether the watchdog renews it and, added by
//! the server, since when it holds. Cheap by design (see [`crate::HolderNotes`]): in
//! the default mode a hold writes its note only once it outlives
//! `holder_note_after`, in the watchdog's next round, batched with every other due
//! note (renewal.rs); a noted hold's note is refreshed with its renewals and removed
//! with its release.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use super::holder::Holder;
use super::{HolderEntry, Lock, Repr};
use crate::config::HolderNotes;
use crate::renewal::NoteTicket;
use crate::error::{Error, Result};
use crate::scripts;
use crate::transport::Conn;

/// Longest label or command kept in a note.
const MAX_DETAIL_LEN: usize = 600;





/// This machine's host name, read once.
fn hostname() -> &'static str {
    static HOST: OnceLock<String> = OnceLock::new();
    HOST.get_or_init(|| {
        #[cfg(unix)]
        {
            let mut buf = [0u8; 256];
            // SAFETY: gethostname writes at most buf.len() bytes into buf.
            if unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } == 0 {
                let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
                return String::from_utf8_lossy(&buf[..end]).into_owned();
            }
        }
        std::env::var("COMPUTERNAME").unwrap_or_else(|_| "unknown".to_string())
    })
}

/// Checks a label or command given for notes.
fn check_detail(what: &str, value: &str) -> Result<()> {
    if value.len() > MAX_DETAIL_LEN {
        return Err(Error::invalid(format!("the holder {what} is {} bytes long; the limit is {MAX_DETAIL_LEN} bytes", value.len())));
    }
    Ok(())
}

/// The note `holder` writes for its current hold ("since" is added by the server).
pub(crate) fn text(holder: &Holder, renewed: bool) -> String {
    let mut note = serde_json::Map::new();
    if let Some(app) = &holder.ctx.config.app_name {
        note.insert("app".into(), app.as_str().into());
    }
    note.insert("host".into(), hostname().into());
    note.insert("pid".into(), std::process::id().into());
    let details = holder.extras.lock().unwrap().as_ref().map(|d| (d.label.clone(), d.command.clone()));
    if let Some((label, command)) = details {
        if let Some(label) = label {
            note.insert("thread".into(), label.as_ref().into());
        }
        if let Some(command) = command {
            note.insert("cmd".into(), command.as_ref().into());
        }
    }
    note.insert("kind".into(), holder.kind.as_str().into());
    note.insert("renewed".into(), renewed.into());
    serde_json::Value::Object(note).to_string()
}

impl Holder {
    /// The note to write or refresh now, if due: `now` for a hold just taken
    /// ([`HolderNotes::Always`]), `renewing` when the watchdog renews the hold.
    pub(crate) fn note_ticket(&self, now: bool, renewing: bool) -> Option<NoteTicket> {
        // A closing client releases every hold, and its notes with them: writing or
        // refreshing them meanwhile only slows the releases and the renewals down.
        if self.ctx.is_shut_down() {
            return None;
        }
        let after = match self.ctx.config.holder_notes {
            // Never written by itself; one an election's leader wrote is kept alive.
            HolderNotes::Off if now => return None,
            HolderNotes::Off => Duration::MAX,
            HolderNotes::Always => Duration::ZERO,
            HolderNotes::Long if now => return None,
            HolderNotes::Long => self.ctx.config.holder_note_after,
        };
        let (generation, first, held, renewed) = self.cell.note_due(renewing, after)?;
        Some(NoteTicket {
            key: self.names.name.clone(),
            note_key: self.names.holder_info(&self.field),
            owner: self.field.clone(),
            text: first.then(|| text(self, renewed)),
            held_ms: held.as_millis() as u64,
            generation,
        })
    }

    /// Changes what this holder's notes say about it (see `HolderExtras` in who.rs).
    pub(crate) fn set_detail(&self, label: Option<Option<&str>>, command: Option<Option<&str>>) -> Result<()> {
        for (what, value) in [("label", label), ("command", command)] {
            if let Some(Some(value)) = value {
                check_detail(what, value)?;
            }
        }
        let mut extras = self.extras.lock().unwrap();
        let extras = extras.get_or_insert_with(Default::default);
        if let Some(label) = label {
            extras.label = label.map(Into::into);
        }
        if let Some(command) = command {
            extras.command = command.map(Into::into);
        }
        Ok(())
    }
}

impl Lock {
    /// Who held the lock when this holder's latest acquire with a wait timed out
    /// (read at that moment; `None` if it was free by then, could not be read, or no
    /// such acquire timed out). Each holder's note says who it is: [`HolderEntry::describe`].
    pub fn last_holder(&self) -> Option<HolderEntry> {
        match &self.repr {
            Repr::One { holder, .. } => holder.extras.lock().unwrap().as_ref()?.last_seen.clone(),
            Repr::Many(multi) => multi.members.iter().find_map(Lock::last_holder),
        }
    }

    /// Names this holder's thread, task or job in its notes (Python passes the thread
    /// or task name, Node and C a label); `None` removes it. At most 600 bytes.
    pub fn set_holder_label(&self, label: Option<&str>) -> Result<()> {
        self.each_holder(&|h| h.set_detail(Some(label), None))
    }

    /// Says in this holder's notes what it runs (`ferrolock run`: its command); `None`
    /// removes it. At most 600 bytes.
    pub fn set_holder_command(&self, command: Option<&str>) -> Result<()> {
        self.each_holder(&|h| h.set_detail(None, Some(command)))
    }

    /// The note of this holder's current hold, to be written now whatever the
    /// client's notes mode says (an election's leader writes it at once, so that
    /// `leader()` answers right after a campaign: election/announce.rs); `None` when
    /// nothing is held. Once written, [`Lock::note_written`] has the watchdog keep it.
    pub(crate) fn note_now(&self) -> Option<NoteTicket> {
        let holder = self.one().ok()?;
        let (generation, _, held, renewed) = holder.cell.note_due(true, Duration::ZERO)?;
        Some(NoteTicket {
            key: holder.names.name.clone(),
            note_key: holder.names.holder_info(&holder.field),
            owner: holder.field.clone(),
            text: Some(text(holder, renewed)),
            held_ms: held.as_millis() as u64,
            generation,
        })
    }

    /// The note of [`Lock::note_now`] is on the server: refreshed with the hold's
    /// renewals, removed with its release.
    pub(crate) fn note_written(&self, generation: u64) {
        if let Ok(holder) = self.one() {
            holder.cell.note_written(generation);
        }
    }

    fn each_holder(&self, f: &dyn Fn(&Holder) -> Result<()>) -> Result<()> {
        match &self.repr {
            Repr::One { holder, .. } => f(holder),
            Repr::Many(multi) => multi.members.iter().try_for_each(|m| m.each_holder(f)),
        }
    }
}

/// Writes the note of a hold just taken ([`crate::HolderNotes::Always`]); a failure
/// only costs the note (the watchdog's rounds try again).
pub(crate) async fn write_now(holder: &Arc<Holder>) {
    let Some(ticket) = holder.note_ticket(true, false) else { return };
    let Ok(conn) = holder.ctx.conn() else { return };
    let mut conn = conn.best_effort();
    let reply: redis::RedisResult<Vec<i64>> = scripts::NOTES
        .key(&ticket.key)
        .key(&ticket.note_key)
        .arg(&*ticket.owner)
        .arg(ticket.text.as_deref().unwrap_or(""))
        .arg(ticket.held_ms)
        .invoke_async(&mut conn)
        .await;
    match reply {
        Ok(flags) if flags == [1] => holder.cell.note_written(ticket.generation),
        Ok(_) => {}
        Err(e) => tracing::debug!(lock = %holder.names.display(), error = %e, "holder note not written; the watchdog tries again"),
    }
}

/// Removes the note of a hold that ended (it would otherwise outlive it by the
/// lease it had); only holds that lasted pay for it. Best effort, bounded by the
/// response timeout: a note nobody holds is never shown anyway. On `conn`, taken when
/// the release began: a release that goes on after its caller left (a close that
/// gave up waiting, say) may end after the client closed.
pub(crate) async fn remove(holder: &Holder, conn: Conn) {
    let mut conn = conn.best_effort();
    let key = holder.names.holder_info(&holder.field);
    let _: redis::RedisResult<i64> = redis::Cmd::del(key).query_async(&mut conn).await;
}
