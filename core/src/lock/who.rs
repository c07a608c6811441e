//! Who holds a lock, as read back: each owner field with its count and note
//! ([`HolderEntry`], [`HolderNote`]) and how to say it to people; and what a holder
//! keeps about itself for its notes and its timeouts (`HolderExtras`).

use std::time::Duration;

/// One owner field of the lock hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HolderEntry {
    /// The owner field: `<client-id>:<holder-id>` for ferrolock, `<uuid>:<thread-id>` for Redisson.
    pub owner: String,
    /// How many times that holder has entered the lock.
    pub count: u64,
    /// The holder's note as stored: a JSON object written by the client (see
    /// [`HolderNote`]) or whatever [`crate::Lock::set_holder_info`] left; `None`
    /// while it has none (a short hold writes none by default: [`crate::HolderNotes`]).
    pub info: Option<String>,
    /// The note read as [`HolderNote`], when it is a JSON object.
    pub note: Option<HolderNote>,
    /// How long it has held the lock, by the server's clock (from its note's "since").
    pub held_for: Option<Duration>,
}

impl HolderEntry {
    /// "billing on host-7 pid 4242 (thread worker-3) for 5 m 12 s" (and ": CMD" for
    /// a holder that says what it runs): the holder for people; a note that is not a
    /// client's JSON as it is; its owner field when it left no note.
    pub fn describe(&self) -> String {
        let who = match &self.note {
            Some(note) if note != &HolderNote::default() => note.who(),
            _ => match &self.info {
                Some(info) => info.clone(),
                None => format!("{} (no note: a short hold, or a client that writes none)", self.owner),
            },
        };
        let mut text = match self.held_for {
            Some(held) => format!("{who} for {}", human_duration(held)),
            None => who,
        };
        if let Some(command) = self.note.as_ref().and_then(|n| n.command.as_deref()) {
            text.push_str(": ");
            text.push_str(command);
        }
        text
    }
}

/// A holder's note, read back ([`crate::HolderEntry::note`]). Every field is
/// optional: a note written with [`crate::Lock::set_holder_info`] may say anything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct HolderNote {
    /// The holder client's app name ([`crate::ClientBuilder::app_name`]).
    pub app: Option<String>,
    /// The holder's host name.
    pub host: Option<String>,
    /// The holder's process id.
    pub pid: Option<u64>,
    /// The holder's thread or task (Python: the thread or asyncio task name; Node and
    /// C: the label given; C without one: the OS thread id).
    pub thread: Option<String>,
    /// What the holder runs (`ferrolock run`: its command).
    pub command: Option<String>,
    /// True when the watchdog renews the hold (no explicit lease).
    pub renewed: Option<bool>,
    /// When the hold began, in Unix milliseconds by the Redis server's clock.
    pub since_ms: Option<u64>,
}

impl HolderNote {
    /// Reads a note; `None` unless it is a JSON object.
    pub fn parse(info: &str) -> Option<HolderNote> {
        let serde_json::Value::Object(fields) = serde_json::from_str(info).ok()? else { return None };
        let text = |key: &str| fields.get(key).and_then(|v| v.as_str()).map(str::to_string);
        Some(HolderNote {
            app: text("app"),
            host: text("host"),
            pid: fields.get("pid").and_then(|v| v.as_u64()),
            thread: text("thread"),
            command: text("cmd"),
            renewed: fields.get("renewed").and_then(|v| v.as_bool()),
            since_ms: fields.get("since").and_then(|v| v.as_u64().or_else(|| v.as_f64().map(|f| f as u64))),
        })
    }

    /// "billing on host-7 pid 4242 (thread worker-3)": who, for people (without
    /// the command, which [`HolderEntry::describe`] puts last).
    pub fn who(&self) -> String {
        let mut parts = Vec::new();
        if let Some(app) = &self.app {
            parts.push(app.clone());
        }
        match (&self.host, self.pid) {
            (Some(host), Some(pid)) => parts.push(format!("on {host} pid {pid}")),
            (Some(host), None) => parts.push(format!("on {host}")),
            (None, Some(pid)) => parts.push(format!("pid {pid}")),
            (None, None) => {}
        }
        if let Some(thread) = &self.thread {
            parts.push(format!("(thread {thread})"));
        }
        if parts.first().is_some_and(|p| p.starts_with("on ")) {
            parts[0] = parts[0].trim_start_matches("on ").to_string();
        }
        parts.join(" ")
    }
}

/// "5 m 12 s", "850 ms", "2 h 3 m": a hold's or a wait's age for people.
pub fn human_duration(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0 => format!("{} ms", d.as_millis()),
        1..60 => format!("{s} s"),
        60..3600 => format!("{} m {} s", s / 60, s % 60),
        3600..86400 => format!("{} h {} m", s / 3600, s % 3600 / 60),
        _ => format!("{} d {} h", s / 86400, s % 86400 / 3600),
    }
}

/// What a holder says about itself beyond the client's app, host and pid, and who
/// was in its way when its latest acquire timed out. Boxed behind one pointer in the
/// holder: most holders have none of it.
#[derive(Debug, Default)]
pub(crate) struct HolderExtras {
    /// The thread, task or job label (bindings pass the thread or task name).
    pub label: Option<Box<str>>,
    /// What the holder runs (`ferrolock run`: its command).
    pub command: Option<Box<str>>,
    /// The lock's holder when this holder's latest acquire timed out.
    pub last_seen: Option<HolderEntry>,
}
