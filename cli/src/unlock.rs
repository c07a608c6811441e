//! `ferrolock unlock --force`: break a lock whose holder is stuck or gone (with
//! several URLs: on each of them, as for a Redlock's members).

use std::ffi::OsStr;

use crate::exit;
use crate::target::{self, redact, Target};

/// Said when `--force` is missing: the command is destructive for whoever holds the lock.
pub const WHY_FORCE: &str = "unlock needs --force: it deletes the lock whoever holds it, so the holder \
loses it mid-work (a `ferrolock run` holder stops its command with SIGTERM and exits 75); \
use `ferrolock status NAME` to see who holds it first";

pub async fn run(targets: Vec<Target>, name: &OsStr) -> i32 {
    // Core's force unlock refuses (WrongType) a key that is not a lock, in the same script.
    let shown = name.to_string_lossy();
    let several = targets.len() > 1;
    let mut code = 0;
    for target in &targets {
        let on = if several { format!(" on {}", redact(&target.url)) } else { String::new() };
        let result = if several {
            Ok(target::try_with_lock(target, name, |lock| async move { lock.force_unlock().await }).await)
        } else {
            target::with_lock(target, name, |lock| async move { lock.force_unlock().await }).await
        };
        let failed = match result {
            Err(failed) => failed,
            Ok(Ok(true)) => {
                println!("unlocked {shown}{on}");
                0
            }
            Ok(Ok(false)) => {
                println!("{shown} was not locked{on}");
                0
            }
            Ok(Err(e)) if several => {
                // The URL (masked) says which server; a malformed one is a usage error.
                exit::say(&format!("{}: {}", redact(&target.url), e.message()));
                exit::for_kind(e.kind())
            }
            Ok(Err(e)) => exit::fail(&e),
        };
        // Every server is tried; the first failure decides the exit status.
        if code == 0 {
            code = failed;
        }
    }
    code
}
