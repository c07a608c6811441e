//! The workspace's Redis test harness (tests/harness) plus ferrolock clients with
//! short timeouts, so fault tests run in seconds.
#![allow(dead_code)]

use std::time::Duration;

pub use ferrolock_harness::*;
use ferrolock::{Client, ClientBuilder};

pub async fn client(url: &str, watchdog_ms: u64) -> Client {
    builder(url, watchdog_ms).connect().await.unwrap()
}

pub fn builder(url: &str, watchdog_ms: u64) -> ClientBuilder {
    Client::builder(url)
        .watchdog_timeout(Duration::from_millis(watchdog_ms))
        .response_timeout(Duration::from_millis(500))
        .connect_timeout(Duration::from_millis(500))
        .retry_window(Duration::from_secs(3))
}

pub mod replicated;
