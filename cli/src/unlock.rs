//! `ferrolock unlock --force`: break a lock whose holder is stuck or gone.

use std::ffi::OsStr;

use crate::exit;
use crate::target::{self, Target};

/// Said when `--force` is missing: the command is destructive for whoever holds the lock.
pub const WHY_FORCE: &str = "unlock needs --force: it deletes the lock whoever holds it, so the holder \
loses it mid-work (a `ferrolock run` holder stops its command with SIGTERM and exits 75); \
use `ferrolock status NAME` to see who holds it first";

pub async fn run(target: Target, name: &OsStr) -> i32 {
    // Core's force unlock refuses (WrongType) a key that is not a lock, in the same script.
    let shown = name.to_string_lossy();
    match target::with_lock(&target, name, |lock| async move { lock.force_unlock().await }).await {
        Err(code) => return code,
        Ok(Ok(true)) => println!("unlocked {shown}"),
        Ok(Ok(false)) => println!("{shown} was not locked"),
        Ok(Err(e)) => return exit::fail(&e),
    }
    0
}
