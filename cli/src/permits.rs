//! `ferrolock run --semaphore N`: run a command holding one of N permits of a
//! semaphore (Redisson's RSemaphore) instead of a lock.
//!
//! Permits are nobody's and have no lease, so nothing renews them and nothing can
//! be lost while CMD runs; the one thing that matters is giving the permit back,
//! whatever happens to CMD. A permit taken while a signal arrived is given back
//! before exiting, as a lock would be released.

use std::ffi::OsString;
use std::io::IsTerminal;
use std::os::unix::ffi::OsStrExt;

use ferrolock::{Client, Semaphore};

use crate::plan::{gave_up, Plan};
use crate::signals::{self, Signals};
use crate::target::{self, Target};
use crate::{child, exit, supervise};

pub async fn run(target: &Target, plan: &Plan, permits: u64, mut signals: Signals) -> i32 {
    let client = tokio::select! {
        connected = target::connect(target, None) => match connected {
            Ok(client) => client,
            Err(code) => return code,
        },
        signal = signals.recv() => return gave_up(signal, &plan.name),
    };
    let code = match client.semaphore(plan.name.as_bytes()) {
        Ok(semaphore) => hold_and_run(&semaphore, plan, permits, &mut signals).await,
        Err(e) => exit::fail(&e),
    };
    // Also settles an acquire abandoned by a signal: no permit stays taken.
    let _ = Client::shutdown(&client).await;
    code
}

async fn hold_and_run(semaphore: &Semaphore, plan: &Plan, permits: u64, signals: &mut Signals) -> i32 {
    let shown = plan.name.to_string_lossy();
    match semaphore.try_set_permits(permits).await {
        Ok(true) => {}
        Ok(false) => {
            // Only the free permits are stored: a larger total shows when more are free.
            match semaphore.available().await {
                Ok(free) if free > permits => exit::say(&format!(
                    "semaphore \"{shown}\" exists with {free} free permits, more than --semaphore {permits}: it was \
                     set with more; it is left as it is"
                )),
                Ok(_) => {}
                Err(e) => return exit::fail(&e),
            }
        }
        Err(e) => return exit::fail(&e),
    }
    let acquired = tokio::select! {
        acquired = semaphore.acquire_permits(1, plan.acquire.wait) => acquired,
        signal = signals.recv() => return gave_up_permit(signal, &plan.name),
    };
    match acquired {
        Ok(true) => {}
        Ok(false) => {
            if std::io::stderr().is_terminal() {
                let waited = plan.acquire.wait.unwrap_or_default().as_secs_f64();
                exit::say(&format!("semaphore \"{shown}\" has no free permit; none within {waited} s"));
            }
            return plan.conflict_exit_code;
        }
        Err(e) => return exit::fail(&e),
    }
    // A signal that came while the permit was being taken was meant for the wait.
    if let Some(signal) = signals.try_recv() {
        return match give_back(semaphore, "").await {
            Ok(()) => gave_up_permit(signal, &plan.name),
            Err(code) => code,
        };
    }
    let child = match child::spawn(&plan.command, &[("FERROLOCK_LOCK", plan.name.clone())], None) {
        Ok(child) => child,
        Err(code) => {
            return match give_back(semaphore, "; the command did not start").await {
                Ok(()) => code,
                Err(not_released) => not_released,
            }
        }
    };
    // A permit is never lost: nothing but CMD's end and signals to pass on.
    let code = supervise::watch(child, std::future::pending(), None, signals).await.code;
    match give_back(semaphore, &format!("; the command's own exit status was {code}")).await {
        Ok(()) => code,
        Err(not_released) => not_released,
    }
}

fn gave_up_permit(signal: signals::Signal, name: &OsString) -> i32 {
    exit::say(&format!(
        "{}: stopped waiting for a permit of semaphore \"{}\"; none is held",
        signal.name(),
        name.to_string_lossy()
    ));
    exit::SIGNAL_BASE + signal.number
}

/// Gives the permit back; when that fails the semaphore stays a permit short, which
/// nothing will repair by itself (permits have no lease): said, and exit 74.
async fn give_back(semaphore: &Semaphore, what_else: &str) -> Result<(), i32> {
    match semaphore.release(1).await {
        Ok(_) => Ok(()),
        Err(e) => {
            exit::say(&format!("could not give back the permit of semaphore \"{}\": {}", semaphore.name(), e.message()));
            exit::say(&format!(
                "semaphore \"{}\" stays one permit short until someone releases one (permits have no lease){what_else}",
                semaphore.name()
            ));
            Err(exit::NOT_RELEASED)
        }
    }
}
