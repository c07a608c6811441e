//! `ferrolock run`: hold a lock while a command runs, like flock(1) across machines.

use std::ffi::OsString;
use std::io::IsTerminal;
use std::time::Duration;

use ferrolock::{AcquireOptions, Client, ErrorKind, Guard, Lock};
use tokio::time::Instant;

use crate::signals::{self, Signal, Signals};
use crate::spinner::Spinner;
use crate::target::{self, Target};
use crate::{child, exit};

/// How often the spinner's holder and lease are re-read while waiting.
const STATUS_REFRESH: Duration = Duration::from_millis(500);

pub struct Plan {
    pub name: OsString,
    pub acquire: AcquireOptions,
    pub watchdog: Option<Duration>,
    pub fenced: bool,
    pub conflict_exit_code: i32,
    pub kill_after: Option<Duration>,
    pub command: Vec<OsString>,
}

pub async fn run(target: Target, plan: Plan, mut signals: Signals) -> i32 {
    if let Err(code) = child::check(&plan.command[0]) {
        return code;
    }
    let client = tokio::select! {
        connected = target::connect(&target, plan.watchdog) => match connected {
            Ok(client) => client,
            Err(code) => return code,
        },
        signal = signals.recv() => return gave_up(signal, &plan.name),
    };
    let code = hold_and_run(&client, &plan, &mut signals).await;
    // Also settles an acquire abandoned by a signal: nothing stays held.
    let _ = client.shutdown().await;
    code
}

async fn hold_and_run(client: &Client, plan: &Plan, signals: &mut Signals) -> i32 {
    use std::os::unix::ffi::OsStrExt;
    let name = plan.name.as_bytes();
    let lock = match if plan.fenced { client.fenced_lock(name) } else { client.lock(name) } {
        Ok(lock) => lock,
        Err(e) => return exit::fail(&e),
    };
    let guard = match acquire(&lock, plan, signals).await {
        Ok(guard) => guard,
        Err(code) => return code,
    };
    // A signal that came while the acquisition completed was meant for the wait, not for CMD.
    if let Some(signal) = signals.try_recv() {
        let _ = guard.release().await;
        return gave_up(signal, &plan.name);
    }
    let child = match child::spawn(&plan.command, guard.token()) {
        Ok(child) => child,
        Err(code) => {
            let _ = guard.release().await;
            return code;
        }
    };
    supervise(child, guard, plan, signals).await
}

/// Waits for the lock, with the spinner on a terminal. `Err` carries the exit code.
async fn acquire(lock: &Lock, plan: &Plan, signals: &mut Signals) -> Result<Guard, i32> {
    let spinner = Spinner::start(lock.name());
    let refresh = async {
        let Some(spinner) = &spinner else { return std::future::pending::<()>().await };
        loop {
            if let Ok(status) = lock.status().await {
                spinner.show(status);
            }
            tokio::time::sleep(STATUS_REFRESH).await;
        }
    };
    let outcome = tokio::select! {
        acquired = lock.acquire_with(plan.acquire) => Ok(acquired),
        signal = signals.recv() => Err(signal),
        _ = refresh => unreachable!("the refresh loop never ends"),
    };
    if let Some(spinner) = spinner {
        spinner.stop();
    }
    match outcome {
        Ok(Ok(Some(guard))) => Ok(guard),
        Ok(Ok(None)) => {
            // Quiet like flock(1) in scripts; on a terminal, say who is in the way.
            if std::io::stderr().is_terminal() {
                report_conflict(lock, plan).await;
            }
            Err(plan.conflict_exit_code)
        }
        Ok(Err(e)) => Err(exit::fail(&e)),
        Err(signal) => Err(gave_up(signal, &plan.name)),
    }
}

async fn report_conflict(lock: &Lock, plan: &Plan) {
    let waited = plan.acquire.wait.unwrap_or_default().as_secs_f64();
    let holder = match lock.status().await {
        Ok(status) => match status.holders.first() {
            Some(holder) => format!(" (held by {})", holder.owner),
            None => String::new(),
        },
        Err(_) => String::new(),
    };
    exit::say(&format!("lock \"{}\" is busy{holder}; not acquired within {waited} s", lock.name()));
}

fn gave_up(signal: Signal, name: &OsString) -> i32 {
    exit::say(&format!("{}: stopped waiting for lock \"{}\"; nothing is held", signal.name(), name.to_string_lossy()));
    exit::SIGNAL_BASE + signal.number
}

/// Runs CMD to its end under the lock: forwards signals, stops CMD if the lock is
/// lost, then releases.
async fn supervise(mut child: tokio::process::Child, guard: Guard, plan: &Plan, signals: &mut Signals) -> i32 {
    let pid = child.id().unwrap_or_default();
    let mut lost = false;
    let mut kill_at: Option<Instant> = None;
    let status = loop {
        tokio::select! {
            biased;
            status = child.wait() => break status,
            signal = signals.recv() => {
                // child.id() is None once CMD is reaped: its pid may belong to someone else then.
                if let (false, Some(pid)) = (signal.to_group, child.id()) {
                    signals::send(pid, signal.number);
                }
            }
            err = guard.lost(), if !lost => {
                lost = true;
                exit::say(&format!("{}; stopping the command (pid {pid}) with SIGTERM", err.message()));
                if let Some(pid) = child.id() {
                    signals::send(pid, libc::SIGTERM);
                }
                kill_at = plan.kill_after.map(|after| Instant::now() + after);
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
    let released = guard.release().await;
    if lost {
        return exit::LOST;
    }
    match released {
        Ok(_) => code,
        Err(e) if e.kind() == ErrorKind::LockLost => exit::fail(&e),
        Err(e) => {
            // CMD is done and its status is the more useful answer; the lock ends with its lease.
            exit::say(&format!("{}; the lock expires when its lease runs out", e.message()));
            code
        }
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
