//! Watching CMD while a lock or a leadership is held (`run`, `elect`): signals
//! sent to ferrolock are passed on, and a loss stops CMD with SIGTERM (SIGKILL
//! after --kill-after). What happens after CMD ended is the caller's.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

use crate::signals::{self, Signal, Signals};
use crate::{child, exit};

/// How CMD ended and what happened meanwhile.
pub struct Ended {
    /// CMD's exit code (128 + N when a signal ended it).
    pub code: i32,
    /// The hold was lost while CMD ran (CMD got SIGTERM for it).
    pub lost: bool,
    /// The first signal that asks ferrolock to stop (SIGINT, SIGTERM, SIGHUP,
    /// SIGQUIT), passed on to CMD, if one came.
    pub stop: Option<Signal>,
}

/// True for a signal that asks ferrolock to stop (not SIGUSR1/SIGUSR2).
pub fn stops(signal: &Signal) -> bool {
    ![libc::SIGUSR1, libc::SIGUSR2].contains(&signal.number)
}

/// Runs `child` to its end: forwards signals, and when `lost` resolves stops CMD
/// with SIGTERM (then SIGKILL after `kill_after`).
pub async fn watch<L>(mut child: tokio::process::Child, lost: L, kill_after: Option<Duration>, signals: &mut Signals) -> Ended
where
    L: Future<Output = ferrolock::Error>,
{
    let pid = child.id().unwrap_or_default();
    let mut lost_yet = false;
    let mut stop = None;
    let mut kill_at: Option<Instant> = None;
    let mut lost = std::pin::pin!(lost);
    let status = loop {
        tokio::select! {
            biased;
            status = child.wait() => break status,
            signal = signals.recv() => {
                if stops(&signal) {
                    stop = stop.or(Some(signal));
                }
                // child.id() is None once CMD is reaped: its pid may belong to someone else then.
                if let (false, Some(pid)) = (signal.to_group, child.id()) {
                    signals::send(pid, signal.number);
                }
            }
            err = lost.as_mut(), if !lost_yet => {
                lost_yet = true;
                exit::say(&format!("{}; stopping the command (pid {pid}) with SIGTERM", err.message()));
                if let Some(pid) = child.id() {
                    signals::send(pid, libc::SIGTERM);
                }
                kill_at = kill_after.map(|after| Instant::now() + after);
            }
            _ = sleep_until(kill_at), if kill_at.is_some() => {
                kill_at = None;
                exit::say(&format!("the command (pid {pid}) outlived --kill-after; sending SIGKILL"));
                if let Some(pid) = child.id() {
                    signals::send(pid, libc::SIGKILL);
                }
            }
        }
    };
    let code = match status {
        Ok(status) => child::exit_code(status),
        Err(e) => {
            exit::say(&format!("lost track of the command (pid {pid}): {e}"));
            exit::INTERNAL
        }
    };
    Ended { code, lost: lost_yet, stop }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
