//! `ferrolock demo`: placeholder.

use std::path::PathBuf;

/// Runs the demo against `url` (its own redis-server when `None`); returns the exit code.
pub fn run(_url: Option<String>, _seconds: u64, _workers: Option<PathBuf>) -> i32 {
    eprintln!("ferrolock: demo: not implemented yet");
    70
}
