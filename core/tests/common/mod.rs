//! The workspace's Redis test harness (tests/harness) plus ferrolock clients with
//! short timeouts, so fault tests run in seconds.
#![allow(dead_code)]

use std::sync::{Arc, Mutex, OnceLock};
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

pub mod acl;
pub mod replicated;

/// Warnings logged through `tracing` (the message of each), collected for the tests
/// of one test binary: the first call installs the collector.
pub fn warnings() -> Arc<Mutex<Vec<String>>> {
    static LOG: OnceLock<Arc<Mutex<Vec<String>>>> = OnceLock::new();
    LOG.get_or_init(|| {
        let log = Arc::new(Mutex::new(Vec::new()));
        tracing::subscriber::set_global_default(WarnCollector(log.clone())).unwrap();
        log
    })
    .clone()
}

struct WarnCollector(Arc<Mutex<Vec<String>>>);

struct Message(String);

impl tracing::field::Visit for Message {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}

impl tracing::Subscriber for WarnCollector {
    fn enabled(&self, metadata: &tracing::Metadata<'_>) -> bool {
        *metadata.level() <= tracing::Level::WARN
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut message = Message(String::new());
        event.record(&mut message);
        self.0.lock().unwrap().push(message.0);
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}
