//! For the bindings: what they need to hand core's `tracing` events to their host's
//! logger (a JS function, a C callback, Python's `logging`), in one place.
//!
//! - [`EventText`]: an event's message and its other fields, as text;
//! - [`Bridge`]: the process's subscriber and the host's logger of the moment. A
//!   binding keeps one in a `static` and implements [`Logger`] (its translation of
//!   an event); `set_logger` is [`Bridge::set`], and at load [`Bridge::init_from_env`]
//!   installs the subscriber when the environment variable it names is set
//!   (`FERROLOCK_LOG=info`: a writer to stderr). Nothing is installed until one of
//!   them asks for it, so an event of a program that never asks costs core one
//!   cached "disabled" check.
//!
//! Filters are `Targets` directives (`info`, `ferrolock=debug,ferrolock::renewal=trace`):
//! `EnvFilter`'s span and field matching is not worth its regex engine in a C
//! library bounded in size (bindings-c/test.sh).

use std::fmt::Write as _;
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock};

use tracing::field::{Field, Visit};
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::{Context, SubscriberExt as _};
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{reload, Layer, Registry};

/// A host's logger, as a binding translates events for it.
pub trait Logger: Send + Sync + 'static {
    /// Hands `event` on, without waiting for the host (it is called on whatever thread
    /// emits the event: a runtime's, or the program's inside a call). A panic here is
    /// caught: it never unwinds into core, nor through a C or JS call under way.
    fn log(&self, event: &tracing::Event<'_>);

    /// What must run before this logger's first event (C: its delivery thread), once
    /// its filter is known to be valid. An error leaves the previous logger in place.
    fn start(&self) -> Result<(), String> {
        Ok(())
    }
}

/// Why [`Bridge::set`] changed nothing. Its text follows the binding's call name
/// (`setLogger: filter "x[" is not a valid filter (...)`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetError {
    /// The filter does not parse (bad input).
    Filter {
        /// The filter as given.
        spec: String,
        /// What the parser said of it.
        reason: String,
    },
    /// Another `tracing` subscriber was installed in this process first (bad use).
    OtherSubscriber,
    /// The logger could not start, or the filter could not change (internal).
    Internal(String),
}

impl std::fmt::Display for SetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SetError::Filter { spec, reason } => write!(
                f,
                "filter {spec:?} is not a valid filter ({reason}); give e.g. \"info\" or \"ferrolock=debug\""
            ),
            SetError::OtherSubscriber => f.write_str("another tracing subscriber is installed in this process"),
            SetError::Internal(e) => f.write_str(e),
        }
    }
}

/// A binding's bridge: the process's subscriber (installed once, on first need) with
/// the binding's layer behind a filter that starts off, and the logger that layer
/// hands events to.
pub struct Bridge<L> {
    /// The environment variable whose filter sends events to stderr.
    env: &'static str,
    /// The reload handle of the logger's filter (None: another subscriber came first).
    installed: OnceLock<Option<reload::Handle<Targets, Registry>>>,
    logger: RwLock<Option<Arc<L>>>,
    /// Serializes [`Bridge::set`] calls (filter and logger change together).
    setting: Mutex<()>,
}

impl<L: Logger> Bridge<L> {
    /// A bridge whose stderr writer reads the filter in the environment variable `env`.
    pub const fn new(env: &'static str) -> Self {
        Bridge { env, installed: OnceLock::new(), logger: RwLock::new(None), setting: Mutex::new(()) }
    }

    /// At load (or first use): installs the subscriber when `env` is set to something.
    pub fn init_from_env(&'static self) {
        if std::env::var_os(self.env).is_some_and(|v| !v.is_empty()) {
            self.install();
        }
    }

    /// The logger of the moment.
    pub fn logger(&self) -> Option<Arc<L>> {
        self.logger.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Sends the events `filter` lets through (None: "info") to `logger`; `None` stops
    /// that. Replaces the previous logger; on an error nothing changes.
    pub fn set(&'static self, logger: Option<L>, filter: Option<&str>) -> Result<(), SetError> {
        let _one_at_a_time = self.setting.lock().unwrap_or_else(PoisonError::into_inner);
        let filter = match (&logger, filter) {
            (None, _) => Targets::new(),
            (Some(_), spec) => {
                let spec = spec.unwrap_or("info");
                spec.parse::<Targets>().map_err(|e| SetError::Filter { spec: spec.to_string(), reason: e.to_string() })?
            }
        };
        let handle = self.install().ok_or(SetError::OtherSubscriber)?;
        if let Some(logger) = &logger {
            logger.start().map_err(SetError::Internal)?;
        }
        *self.logger.write().unwrap_or_else(PoisonError::into_inner) = logger.map(Arc::new);
        handle.reload(filter).map_err(|e| SetError::Internal(e.to_string()))
    }

    fn install(&'static self) -> Option<&'static reload::Handle<Targets, Registry>> {
        self.installed.get_or_init(|| install(self.env, Forward(self))).as_ref()
    }
}

/// The bridge's layer: hands the events its filter lets through to the logger.
struct Forward<L: 'static>(&'static Bridge<L>);

impl<S: tracing::Subscriber, L: Logger> Layer<S> for Forward<L> {
    fn on_event(&self, event: &tracing::Event<'_>, _ctx: Context<'_, S>) {
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            if let Some(logger) = self.0.logger() {
                logger.log(event);
            }
        }));
    }
}

/// Installs the process's subscriber: `layer` behind a filter that starts off (the
/// returned handle changes it), and stderr when `env` holds a filter (a bad one is
/// reported on stderr and leaves stderr off). `None` when another subscriber was
/// installed first.
fn install<L>(env: &str, layer: L) -> Option<reload::Handle<Targets, Registry>>
where
    L: Layer<Registry> + Send + Sync + 'static,
{
    let stderr = std::env::var(env).ok().filter(|v| !v.trim().is_empty()).and_then(|spec| match spec.parse::<Targets>() {
        Ok(filter) => Some(tracing_subscriber::fmt::layer().with_writer(std::io::stderr).with_ansi(false).with_filter(filter)),
        Err(e) => {
            eprintln!("ferrolock: {env}={spec:?} is not a valid filter ({e}); logging to stderr is off");
            None
        }
    });
    let (filter, handle) = reload::Layer::new(Targets::new());
    let subscriber = Registry::default().with(layer.with_filter(filter)).with(stderr);
    subscriber.try_init().ok().map(|_| handle)
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
