//! Several URLs: one lock over independent Redis masters, one client per URL — a
//! Redlock (a majority of them, N/2 + 1) or with `--all` a MultiLock (every one).
//!
//! A master that does not answer at all cannot even get a client (connecting checks
//! that it answers), so it is left out here and counted against the quorum: with
//! enough of them left the lock is taken on those that answered, still needing
//! N/2 + 1 of all N; otherwise ferrolock exits (69 when they are unreachable).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::time::Duration;

use ferrolock::{Client, Error, ErrorKind, Lock, Quorum};

use crate::exit;
use crate::target::{self, redact, Target};

/// The clients of the masters that answered, and the multi-lock over them.
pub struct Members {
    pub clients: Vec<Client>,
    pub lock: Lock,
}

impl Members {
    /// Shuts the clients down, except those of members still settling a release: once
    /// the quorum released (a Redlock with a master down), such a member keeps nobody
    /// out, and its client would hold the exit up for the release's retry window and
    /// more. The lock there ends with its lease once this process exits.
    pub async fn shutdown(self) {
        let settling: Vec<bool> = (0..self.clients.len()).map(|i| self.lock.members().get(i).is_some_and(Lock::is_settling)).collect();
        drop(self.lock);
        for (client, settling) in self.clients.into_iter().zip(settling) {
            if !settling {
                let _ = client.shutdown().await;
            }
        }
    }
}

/// "redlock" or "MultiLock (--all)".
pub fn kind(quorum: Quorum) -> &'static str {
    match quorum {
        Quorum::All => "MultiLock (--all)",
        _ => "redlock",
    }
}

/// Connects to every target and builds the multi-lock on `name` over those that
/// answered; `Err`: the exit code, said on stderr.
pub async fn connect(targets: &[Target], name: &OsStr, quorum: Quorum, watchdog: Option<Duration>) -> Result<Members, i32> {
    let n = targets.len();
    let needed = quorum.of(n);
    let mut clients = Vec::new();
    let mut failed: Vec<(&Target, Error)> = Vec::new();
    for (target, connected) in targets.iter().zip(target::connect_all(targets, watchdog).await) {
        match connected {
            Ok(client) => clients.push(client),
            Err(e) => failed.push((target, e)),
        }
    }
    let shut = |clients: Vec<Client>| async move {
        for client in clients {
            let _ = client.shutdown().await;
        }
    };
    // A malformed URL is a usage error whatever the others do.
    if let Some((target, e)) = failed.iter().find(|(_, e)| e.kind() == ErrorKind::InvalidArgument) {
        shut(clients).await;
        return Err(target::report(target, e));
    }
    let why = |failed: &[(&Target, Error)]| {
        failed.iter().map(|(t, e)| format!("{}: {}", redact(&t.url), e.message())).collect::<Vec<_>>().join("; ")
    };
    if clients.len() < needed {
        shut(clients).await;
        let kind = failed.iter().map(|(_, e)| e.kind()).find(|k| *k != ErrorKind::Connection).unwrap_or(ErrorKind::Connection);
        exit::say(&format!(
            "a {} over {n} servers needs {needed} of them, but {} did not answer: {}",
            self::kind(quorum),
            failed.len(),
            why(&failed)
        ));
        return Err(exit::for_kind(kind));
    }
    if !failed.is_empty() {
        exit::say(&format!(
            "warning: {} of {n} servers did not answer ({}); taking the {} on the {} that did ({needed} needed)",
            failed.len(),
            why(&failed),
            kind(quorum),
            clients.len()
        ));
    }
    let members: ferrolock::Result<Vec<Lock>> = clients.iter().map(|c| c.lock(name.as_bytes())).collect();
    let mut members = match members {
        Ok(members) => members,
        Err(e) => {
            shut(clients).await;
            return Err(exit::fail(&e));
        }
    };
    // The quorum stays `needed` of all n: over the k members left, a majority of k
    // when that is the same number, else all of `needed` of them.
    let k = members.len();
    let quorum = if k == n || Quorum::Majority.of(k) == needed {
        quorum
    } else {
        members.truncate(needed);
        Quorum::All
    };
    match Lock::multi(members, quorum) {
        Ok(lock) => Ok(Members { clients, lock }),
        Err(e) => {
            shut(clients).await;
            Err(exit::fail(&e))
        }
    }
}
