//! Cron on many hosts, the short version of `scripts/cron-ticks.sh` (two hosts run
//! `ferrolock run -n --min-hold` each tick, their clocks skewed by libfaketime): a few
//! ticks with random skews up to 0.4 s and a 2 s minimum hold (room for a loaded
//! machine's slow start of a host's ferrolock), exactly one run per tick; and the control, the
//! same hosts 0.8 s apart without a minimum hold worth the name (1 ms), where the job
//! (50 ms) is over before the second host fires and every tick runs twice. Needs
//! target/debug/ferrolock (`cargo build -p ferrolock-cli`); the script installs faketime.

use std::process::Command;

use ferrolock_harness::{repo_root, target_binary};

fn ticks(ticks: u32, env: &[(&str, &str)]) -> (bool, String) {
    let out = Command::new("bash")
        .arg(repo_root().join("scripts/cron-ticks.sh"))
        .arg(ticks.to_string())
        .env("FERROLOCK", target_binary("ferrolock"))
        .envs(env.iter().copied())
        .output()
        .expect("bash runs scripts/cron-ticks.sh");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

#[test]
fn two_skewed_hosts_run_the_job_once_per_tick() {
    let (ok, text) = ticks(8, &[("MIN_HOLD", "2"), ("SKEW", "0.4"), ("PERIOD", "2.6")]);
    assert!(ok && text.contains("exactly one run in 8 of 8 ticks"), "{text}");
}

#[test]
fn without_a_minimum_hold_the_later_host_runs_it_again() {
    let (ok, text) = ticks(3, &[("MIN_HOLD", "0.001"), ("SKEW", "0.9"), ("APART", "0.8")]);
    assert!(!ok && text.contains("exactly one run in 0 of 3 ticks"), "the control must fail: {text}");
}
