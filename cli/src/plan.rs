//! What `ferrolock run` was asked to do (main.rs reads it from the arguments; run.rs
//! and permits.rs carry it out), and what both say the same way.

use std::ffi::OsString;
use std::time::Duration;

use ferrolock::{AcquireOptions, LockKind, Quorum};

use crate::exit;
use crate::signals::Signal;

/// One `ferrolock run`: the lock or permit to take, how, and the command to run under it.
pub struct Plan {
    pub name: OsString,
    pub acquire: AcquireOptions,
    pub watchdog: Option<Duration>,
    /// Which lock to take (`--fenced`: a fenced lock, whose token CMD gets; `--shared`,
    /// `--exclusive`: a side of the read-write lock; `--fair`).
    pub kind: LockKind,
    /// `--semaphore N`: one of N permits instead of a lock.
    pub semaphore: Option<u64>,
    /// With several URLs: a majority of them (a Redlock) or all (`--all`, a MultiLock).
    pub quorum: Quorum,
    pub conflict_exit_code: i32,
    pub kill_after: Option<Duration>,
    /// --min-hold: the lock stays held at least this long after the acquire.
    pub min_hold: Option<Duration>,
    pub command: Vec<OsString>,
    /// CMD as `status` shows it: the `-c` string, or the words (quoted where needed).
    pub shown_command: String,
}

/// CMD's words as one line a shell would read back the same way.
pub fn shown_command(words: &[OsString]) -> String {
    let plain = |w: &str| !w.is_empty() && w.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
    words
        .iter()
        .map(|w| w.to_string_lossy())
        .map(|w| if plain(&w) { w.into_owned() } else { format!("'{}'", w.replace('\'', "'\\''")) })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A signal came before the lock: nothing is held (said), and the shell's exit code
/// for that signal.
pub fn gave_up(signal: Signal, name: &OsString) -> i32 {
    exit::say(&format!("{}: stopped waiting for lock \"{}\"; nothing is held", signal.name(), name.to_string_lossy()));
    exit::SIGNAL_BASE + signal.number
}

#[cfg(test)]
mod tests {
    use super::shown_command;

    #[test]
    fn commands_are_shown_as_a_shell_would_read_them_back() {
        let words = |w: &[&str]| w.iter().map(|w| w.into()).collect::<Vec<std::ffi::OsString>>();
        assert_eq!(shown_command(&words(&["./report.sh", "--full", "a=b"])), "./report.sh --full a=b");
        assert_eq!(shown_command(&words(&["sh", "-c", "echo it's $HOME"])), "sh -c 'echo it'\\''s $HOME'");
        assert_eq!(shown_command(&words(&["printf", ""])), "printf ''");
    }
}
