//! `ferrolock elect NAME -- CMD`: campaign; while leading run CMD (with its term);
//! campaign again when CMD ends or leadership is lost (consul lock's shape, on
//! core's election).

use std::ffi::OsString;
use std::time::Duration;

use ferrolock::{Election, ErrorKind, Leadership};

use crate::args::ElectArgs;
use crate::signals::{Signal, Signals};
use crate::supervise::{self, stops};
use crate::target::{self, Target};
use crate::{child, exit};

/// Wait between a campaign that met Redis down and the next.
const RETRY: Duration = Duration::from_secs(1);

pub async fn run(target: &Target, args: ElectArgs, mut signals: Signals) -> i32 {
    if let Err(code) = child::check(&args.command[0]) {
        return code;
    }
    let client = tokio::select! {
        connected = target::connect(target, args.watchdog) => match connected {
            Ok(client) => client,
            Err(code) => return code,
        },
        signal = signals.recv() => return stopped(signal, &args.name),
    };
    let code = match client.election(std::os::unix::ffi::OsStrExt::as_bytes(args.name.as_os_str())) {
        Ok(election) => {
            let _ = election.lock().set_holder_command(Some(&crate::plan::shown_command(&args.command)));
            lead_in_turn(&election, &args, &mut signals).await
        }
        Err(e) => exit::fail(&e),
    };
    // Resigns what may still be held, and settles a campaign a signal abandoned.
    let _ = client.shutdown().await;
    code
}

/// Campaigns, leads, and campaigns again, until --once or a signal ends it.
async fn lead_in_turn(election: &Election, args: &ElectArgs, signals: &mut Signals) -> i32 {
    loop {
        let leadership = match campaign(election, args, signals).await {
            Ok(leadership) => leadership,
            Err(code) => return code,
        };
        let term = leadership.term();
        let env = [
            ("FERROLOCK_LOCK", args.name.clone()),
            ("FERROLOCK_TERM", OsString::from(term.to_string())),
            ("FERROLOCK_TOKEN", OsString::from(term.to_string())),
        ];
        let child = match child::spawn(&args.command, &env, args.kill_after) {
            Ok(child) => child,
            Err(code) => {
                let _ = leadership.resign().await;
                return code;
            }
        };
        let ended = supervise::watch(child, leadership.lost(), args.kill_after, signals).await;
        if ended.lost {
            // Told already (supervise.rs); the resignation only cleans up what may be left.
            let _ = leadership.resign().await;
            if args.once {
                return exit::LOST;
            }
            continue;
        }
        if let Err(e) = leadership.resign().await {
            exit::say(&format!("could not resign from election \"{}\": {}; its lease ends it", election.name(), e.message()));
        }
        if args.once || ended.stop.is_some() {
            return ended.code;
        }
        let delay = args.restart_delay.unwrap_or(Duration::from_secs(1));
        exit::say(&format!(
            "the command ended with status {} (term {term}); resigned, campaigning again in {:.1} s",
            ended.code,
            delay.as_secs_f64()
        ));
        if let Err(code) = pause(delay, &args.name, signals).await {
            return code;
        }
    }
}

/// Waits until this process leads; a signal that asks to stop ends the wait
/// (`Err` with the exit code). Redis down: said once, tried again every second.
async fn campaign(election: &Election, args: &ElectArgs, signals: &mut Signals) -> Result<Leadership, i32> {
    let mut said = false;
    loop {
        let led = election.campaign();
        tokio::pin!(led);
        let outcome = loop {
            tokio::select! {
                led = &mut led => break led,
                signal = signals.recv() => if stops(&signal) {
                    return Err(stopped(signal, &args.name));
                },
            }
        };
        match outcome {
            Ok(leadership) => return Ok(leadership),
            Err(e) if matches!(e.kind(), ErrorKind::Connection | ErrorKind::NotReplicated) => {
                if !said {
                    exit::say(&format!("{}; campaigning again every {} s until Redis answers", e.message(), RETRY.as_secs()));
                    said = true;
                }
                pause(RETRY, &args.name, signals).await?;
            }
            Err(e) => return Err(exit::fail(&e)),
        }
    }
}

/// Sleeps `delay` unless a signal asks to stop first.
async fn pause(delay: Duration, name: &OsString, signals: &mut Signals) -> Result<(), i32> {
    let sleep = tokio::time::sleep(delay);
    tokio::pin!(sleep);
    loop {
        tokio::select! {
            _ = &mut sleep => return Ok(()),
            signal = signals.recv() => if stops(&signal) {
                return Err(stopped(signal, name));
            },
        }
    }
}

fn stopped(signal: Signal, name: &OsString) -> i32 {
    exit::say(&format!("{}: stopped campaigning in election \"{}\"; nothing is held", signal.name(), name.to_string_lossy()));
    exit::SIGNAL_BASE + signal.number
}
