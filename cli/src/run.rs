//! `ferrolock run`: hold a lock while a command runs, like flock(1) across machines.

use std::io::IsTerminal;
use std::time::Duration;

use ferrolock::{Client, ErrorKind, Guard, Lock, LockOptions};
use tokio::time::Instant;

use crate::plan::{gave_up, Plan};
use crate::signals::Signals;
use crate::spinner::Spinner;
use crate::target::{self, Target};
use crate::{child, exit, multi, supervise};

/// How often the spinner's holder and lease are re-read while waiting.
const STATUS_REFRESH: Duration = Duration::from_millis(500);

/// Longest command kept in the holder note (core takes at most 600 bytes).
const MAX_SHOWN_COMMAND: usize = 590;

/// CMD as the holder note shows it (`status`, `top`, waiters' messages): cut short.
fn noted_command(plan: &Plan) -> String {
    let mut cmd = plan.shown_command.clone();
    if cmd.len() > MAX_SHOWN_COMMAND {
        let mut end = MAX_SHOWN_COMMAND;
        while !cmd.is_char_boundary(end) {
            end -= 1;
        }
        cmd.truncate(end);
        cmd.push('…');
    }
    cmd
}

pub async fn run(targets: Vec<Target>, plan: Plan, mut signals: Signals) -> i32 {
    if let Err(code) = child::check(&plan.command[0]) {
        return code;
    }
    if targets.len() > 1 {
        return run_multi(&targets, plan, signals).await;
    }
    let target = &targets[0];
    if let Some(permits) = plan.semaphore {
        return crate::permits::run(target, &plan, permits, signals).await;
    }
    let client = tokio::select! {
        connected = target::connect(target, plan.watchdog) => match connected {
            Ok(client) => client,
            Err(code) => return code,
        },
        signal = signals.recv() => return gave_up(signal, &plan.name),
    };
    let code = match client.lock_with(std::os::unix::ffi::OsStrExt::as_bytes(plan.name.as_os_str()), LockOptions::kind(plan.kind)) {
        Ok(lock) => hold_and_run(&lock, &client, &plan, &mut signals).await,
        Err(e) => exit::fail(&e),
    };
    // Also settles an acquire abandoned by a signal: nothing stays held.
    let _ = client.shutdown().await;
    code
}

/// Several URLs: a Redlock (or MultiLock) over one client per URL.
async fn run_multi(targets: &[Target], plan: Plan, mut signals: Signals) -> i32 {
    let members = tokio::select! {
        connected = multi::connect(targets, &plan.name, plan.quorum, plan.watchdog) => match connected {
            Ok(members) => members,
            Err(code) => return code,
        },
        signal = signals.recv() => return gave_up(signal, &plan.name),
    };
    let code = hold_and_run(&members.lock, &members.clients[0], &plan, &mut signals).await;
    members.shutdown().await;
    code
}

/// Takes `lock` (a single lock of `client`, or a multi-lock whose first member's
/// client is `client`) and runs CMD under it.
async fn hold_and_run(lock: &Lock, client: &Client, plan: &Plan, signals: &mut Signals) -> i32 {
    // Who holds it, for `status`, `top` and waiters: core writes the note (host, pid,
    // app, CMD, since) with the acquisition (the CLI's clients write every hold's
    // note), refreshes it with the renewals and removes it with the release.
    let _ = lock.set_holder_command(Some(&noted_command(plan)));
    let guard = match acquire(lock, plan, signals).await {
        Ok(guard) => guard,
        Err(code) => return code,
    };
    let lease = LeaseBound::after_acquire(plan, client);
    // A signal that came while the acquisition completed was meant for the wait, not for CMD.
    if let Some(signal) = signals.try_recv() {
        if let Err(code) = release(guard, &lease, "").await {
            return code;
        }
        return gave_up(signal, &plan.name);
    }
    let mut env = vec![("FERROLOCK_LOCK", plan.name.clone())];
    env.extend(guard.token().map(|token| ("FERROLOCK_TOKEN", token.to_string().into())));
    let child = match child::spawn(&plan.command, &env, plan.kill_after) {
        Ok(child) => child,
        Err(code) => {
            // The command did not start: the release decides nothing but the lock's fate.
            return match release(guard, &lease, "; the command did not start").await {
                Err(not_released) => not_released,
                Ok(_) => code,
            };
        }
    };
    supervise(child, guard, plan, &lease, signals).await
}

/// How long the lock can outlive a failed release: its lease runs out at the latest
/// `lease` after the acquisition (explicit lease) or after the last renewal, which
/// is no later than now (watchdog lease; nothing renews it once ferrolock exits).
struct LeaseBound {
    fixed_until: Option<Instant>,
    watchdog: Duration,
}

impl LeaseBound {
    /// Taken right after the acquisition returned: Redis set the expiry before replying.
    fn after_acquire(plan: &Plan, client: &Client) -> LeaseBound {
        LeaseBound {
            fixed_until: plan.acquire.lease.map(|lease| Instant::now() + lease),
            watchdog: client.config().watchdog_timeout,
        }
    }

    /// "at most 12.3 s from now (its --lease)", as of now.
    fn describe(&self) -> String {
        match self.fixed_until {
            Some(until) => {
                let left = until.saturating_duration_since(Instant::now());
                format!("at most {:.1} s from now (its --lease)", left.as_secs_f64())
            }
            None => format!(
                "at most {:.1} s after ferrolock exits (its watchdog lease, no longer renewed then)",
                self.watchdog.as_secs_f64()
            ),
        }
    }
}

/// Releases the lock ferrolock holds: `Ok(None)` when released, `Ok(Some(LockLost))`
/// when the hold turned out lost (it is over anyway; the caller decides what that
/// means). Any other failure leaves the lock held until its lease ends: that is said
/// on stderr (followed by `what_else`) and is `Err(NOT_RELEASED)`.
async fn release(guard: Guard, lease: &LeaseBound, what_else: &str) -> Result<Option<ferrolock::Error>, i32> {
    let lock = guard.lock();
    let name = lock.members().first().unwrap_or(lock).name().to_string();
    let settling = guard.lock().clone();
    match guard.release().await {
        // Given up on after the retry window: the client would finish it once Redis
        // answers, but this process exits now.
        Ok(_) if settling.is_settling() => {
            exit::say(&format!("could not release lock \"{name}\": Redis did not answer within the retry window; check that Redis is running"));
            exit::say(&format!("lock \"{name}\" may stay held until its lease ends, {}{what_else}", lease.describe()));
            Err(exit::NOT_RELEASED)
        }
        Ok(_) => Ok(None),
        Err(e) if e.kind() == ErrorKind::LockLost => Ok(Some(e)),
        Err(e) => {
            // Waiters elsewhere sit idle until the lease ends: a script must not take
            // this for a clean run.
            exit::say(&format!("could not release lock \"{name}\": {}", e.message()));
            exit::say(&format!(
                "lock \"{name}\" may stay held until its lease ends, {}{what_else}",
                lease.describe()
            ));
            Err(exit::NOT_RELEASED)
        }
    }
}

/// Waits for the lock, with the spinner on a terminal. `Err` carries the exit code.
async fn acquire(lock: &Lock, plan: &Plan, signals: &mut Signals) -> Result<Guard, i32> {
    let shown = plan.name.to_string_lossy();
    let spinner = Spinner::start(&shown);
    let refresh = async {
        let Some(spinner) = &spinner else { return std::future::pending::<()>().await };
        // A multi-lock's first member stands for it (its status reads one server).
        let one = lock.members().first().unwrap_or(lock);
        loop {
            if let Ok(status) = one.status().await {
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
            // A --wait that ran out says who was in the way (scripts log it); a bare
            // try stays quiet like flock(1) in scripts, and says it on a terminal.
            if plan.acquire.wait.is_some_and(|w| !w.is_zero()) || std::io::stderr().is_terminal() {
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
    let one = lock.members().first().unwrap_or(lock);
    // Who held it when the wait ran out (core reads it then); a bare try reads it now.
    let seen = match one.last_holder() {
        Some(holder) => Some(holder),
        None => one.status().await.ok().and_then(|status| status.holders.into_iter().next()),
    };
    let holder = seen.map_or_else(String::new, |holder| format!(" (held by {})", holder.describe()));
    let what = match lock.quorum() {
        Some(quorum) => format!("{} \"{}\" over {} servers", multi::kind(quorum), plan.name.to_string_lossy(), lock.members().len()),
        None => format!("lock \"{}\"", lock.name()),
    };
    exit::say(&format!("{what} is busy{holder}; not acquired within {waited} s"));
}

/// Runs CMD to its end under the lock (supervise.rs: signals passed on, CMD stopped
/// if the lock is lost), then releases (or, with --min-hold, leaves the lock to
/// expire that long after the acquire).
async fn supervise(child: tokio::process::Child, guard: Guard, plan: &Plan, lease: &LeaseBound, signals: &mut Signals) -> i32 {
    let ended = supervise::watch(child, guard.lost(), plan.kill_after, signals).await;
    let code = ended.code;
    if ended.lost {
        // Already reported; the release only cleans up what may be left.
        let _ = guard.release().await;
        return exit::LOST;
    }
    if let Some(min_hold) = plan.min_hold {
        return end_min_hold(guard, min_hold, lease, code).await;
    }
    // CMD is done; if the lock outlives us, that decides the exit status (CMD's is said).
    match release(guard, lease, &format!("; the command's own exit status was {code}")).await {
        Ok(None) => code,
        Ok(Some(lost)) => exit::fail(&lost),
        Err(not_released) => not_released,
    }
}

/// --min-hold: CMD ended; the lock stays held until `min_hold` after the acquire by
/// a fixed lease (nothing is left running to renew or release it), so a host whose
/// cron fires a little later finds it taken and skips; or it is released now if it
/// was held that long already.
async fn end_min_hold(guard: Guard, min_hold: Duration, lease: &LeaseBound, code: i32) -> i32 {
    let lock = guard.lock().clone();
    match lock.release_min_hold(min_hold).await {
        // Released now, but Redis did not answer within the retry window (as release() says).
        Ok(None) if lock.is_settling() => {
            let _ = guard.into_hold();
            exit::say(&format!("could not release lock \"{}\": Redis did not answer within the retry window; check that Redis is running", lock.name()));
            exit::say(&format!("lock \"{}\" may stay held until its lease ends, {}; the command's own exit status was {code}", lock.name(), lease.describe()));
            exit::NOT_RELEASED
        }
        Ok(_) => {
            let _ = guard.into_hold();
            code
        }
        Err(e) if e.kind() == ErrorKind::LockLost => {
            let _ = guard.into_hold();
            exit::fail(&e)
        }
        Err(e) => {
            // Nothing changed: still held and renewed. Release it as a run does.
            exit::say(&format!("could not leave lock \"{}\" held for --min-hold: {}; releasing it now", lock.name(), e.message()));
            match release(guard, lease, &format!("; the command's own exit status was {code}")).await {
                Ok(None) => code,
                Ok(Some(lost)) => exit::fail(&lost),
                Err(not_released) => not_released,
            }
        }
    }
}
