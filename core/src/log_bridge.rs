//! For the bindings: what they need to hand core's `tracing` events to their host's
//! logger (a JS function, a C callback, Python's `logging`), in one place.
//!
//! - [`EventText`]: an event's message and its other fields, as text;
//! - [`install`]: the process's subscriber, made of the binding's layer behind a
//!   filter it can change later (off until its `set_logger` call) and, when the
//!   environment variable it names is set (`FERROLOCK_LOG=info`), a writer to stderr.
//!   Nothing is installed until one of them asks for it, so an event of a program
//!   that never asks costs core one cached "disabled" check.
//!
//! Filters are `Targets` directives (`info`, `ferrolock=debug,ferrolock::renewal=trace`):
//! `EnvFilter`'s span and field matching is not worth its regex engine in a C
//! library bounded in size (bindings-c/test.sh).

use std::fmt::Write as _;

use tracing::field::{Field, Visit};
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{reload, Layer, Registry};

/// Changes the filter of a binding's layer.
pub type FilterHandle = reload::Handle<Targets, Registry>;

/// Parses a filter (`info`, `ferrolock=debug`, ...): the error says what is wrong.
pub fn parse_filter(spec: &str) -> Result<Targets, String> {
    spec.parse::<Targets>().map_err(|e| e.to_string())
}

/// A filter that lets nothing through.
pub fn off() -> Targets {
    Targets::new()
}

/// Installs the process's subscriber: `layer` behind a filter that starts off (the
/// returned handle changes it), and stderr when `env` holds a filter (a bad one is
/// reported on stderr and leaves stderr off). `None` when another subscriber was
/// installed first. Call it once per process (keep the handle in a `OnceLock`).
pub fn install<L>(env: &str, layer: L) -> Option<FilterHandle>
where
    L: Layer<Registry> + Send + Sync + 'static,
{
    let stderr = std::env::var(env).ok().filter(|v| !v.trim().is_empty()).and_then(|spec| match parse_filter(&spec) {
        Ok(filter) => Some(tracing_subscriber::fmt::layer().with_writer(std::io::stderr).with_ansi(false).with_filter(filter)),
        Err(e) => {
            eprintln!("ferrolock: {env}={spec:?} is not a valid filter ({e}); logging to stderr is off");
            None
        }
    });
    let (filter, handle) = reload::Layer::new(off());
    let subscriber = Registry::default().with(layer.with_filter(filter)).with(stderr);
    subscriber.try_init().ok().map(|_| handle)
}

/// True when `env` is set to something: a binding installs at load when it is.
pub fn env_asks(env: &str) -> bool {
    std::env::var_os(env).is_some_and(|v| !v.is_empty())
}

/// An event's message and its other fields (the lock name, an error, ...) as text.
#[derive(Debug, Default)]
pub struct EventText {
    /// The event's message ("" when it has none).
    pub message: String,
    /// Its other fields, name and value, in the order the event gives them.
    pub fields: Vec<(&'static str, String)>,
}

impl EventText {
    /// The text of `event`.
    pub fn of(event: &tracing::Event<'_>) -> Self {
        let mut text = EventText::default();
        event.record(&mut text);
        text
    }

    /// The fields as `key=value` pairs separated by spaces.
    pub fn fields_line(&self) -> String {
        let mut line = String::new();
        for (name, value) in &self.fields {
            if !line.is_empty() {
                line.push(' ');
            }
            let _ = write!(line, "{name}={value}");
        }
        line
    }

    /// The message, then the fields it does not already show, as ` key=value`.
    pub fn into_line(self) -> String {
        let mut line = self.message;
        for (name, value) in self.fields {
            if !line.contains(value.as_str()) {
                let _ = write!(line, " {name}={value}");
            }
        }
        line
    }
}

impl Visit for EventText {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message.push_str(value);
        } else {
            self.fields.push((field.name(), value.to_string()));
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.message, "{value:?}");
        } else {
            self.fields.push((field.name(), format!("{value:?}")));
        }
    }
}
