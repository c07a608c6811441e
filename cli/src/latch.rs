//! `ferrolock latch`: set, count down or wait for a count-down latch (Redisson's
//! RCountDownLatch), for scripts that wait until N services are ready.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::time::Duration;

use ferrolock::CountDownLatch;

use crate::exit;
use crate::signals::Signals;
use crate::target::{self, Target};

pub enum Action {
    /// `--count N`
    Set(u64),
    /// `--count-down`
    CountDown,
    /// `--wait [--timeout SECS]`
    Wait(Option<Duration>),
}

pub async fn run(target: &Target, name: &OsStr, action: Action, mut signals: Signals) -> i32 {
    let shown = name.to_string_lossy();
    let client = tokio::select! {
        connected = target::connect(target, None) => match connected {
            Ok(client) => client,
            Err(code) => return code,
        },
        signal = signals.recv() => {
            exit::say(&format!("{}: stopped before reaching latch \"{shown}\"", signal.name()));
            return exit::SIGNAL_BASE + signal.number;
        }
    };
    let code = match client.count_down_latch(name.as_bytes()) {
        Ok(latch) => act(&latch, action, &mut signals).await,
        Err(e) => exit::fail(&e),
    };
    let _ = client.shutdown().await;
    code
}

async fn act(latch: &CountDownLatch, action: Action, signals: &mut Signals) -> i32 {
    let name = latch.name();
    match action {
        Action::Set(count) => match latch.try_set_count(count).await {
            Ok(true) => {
                println!("set {name} to {count}");
                0
            }
            Ok(false) => {
                let left = latch.count().await.map_or_else(|_| String::new(), |n| format!(" ({n} left)"));
                exit::say(&format!("latch \"{name}\" is still counting down{left}; its count is left as it is"));
                exit::CONFLICT
            }
            Err(e) => exit::fail(&e),
        },
        Action::CountDown => match latch.count_down().await {
            Ok(left) => {
                println!("{left}");
                0
            }
            Err(e) => exit::fail(&e),
        },
        Action::Wait(timeout) => {
            // Dropping the wait on a signal leaves no subscription behind.
            let opened = tokio::select! {
                opened = latch.wait(timeout) => opened,
                signal = signals.recv() => {
                    exit::say(&format!("{}: stopped waiting for latch \"{name}\"", signal.name()));
                    return exit::SIGNAL_BASE + signal.number;
                }
            };
            match opened {
                Ok(true) => {
                    println!("open");
                    0
                }
                Ok(false) => {
                    let left = latch.count().await.map_or_else(|_| String::new(), |n| format!(" ({n} left)"));
                    let waited = timeout.unwrap_or_default().as_secs_f64();
                    exit::say(&format!("latch \"{name}\" is still counting down{left} after {waited} s"));
                    exit::CONFLICT
                }
                Err(e) => exit::fail(&e),
            }
        }
    }
}
