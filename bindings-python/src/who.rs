//! Who holds a lock, for Python: a core `HolderEntry` as the plain tuple
//! `ferrolock.HolderEntry._from_native` reads (status, inspect, and the holder a
//! timed-out acquire saw). The note is the core's parse and the description its
//! `describe()`: nothing here reads the note itself.

use ferrolock::HolderEntry;

/// `(app, host, pid, thread, command, renewed, since in Unix ms)`: a holder's note.
pub(crate) type Note = (Option<String>, Option<String>, Option<u64>, Option<String>, Option<String>, Option<bool>, Option<u64>);

/// `(owner, count, info, note or None, held for in seconds or None, description)`.
pub(crate) type Holder = (String, u64, Option<String>, Option<Note>, Option<f64>, String);

pub(crate) fn holder(entry: &HolderEntry) -> Holder {
    let note = entry.note.as_ref().map(|n| {
        (n.app.clone(), n.host.clone(), n.pid, n.thread.clone(), n.command.clone(), n.renewed, n.since_ms)
    });
    let held_for = entry.held_for.map(|d| d.as_secs_f64());
    (entry.owner.clone(), entry.count, entry.info.clone(), note, held_for, entry.describe())
}
