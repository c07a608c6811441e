//! Core's `tracing` events for Node: to stderr when `FERROLOCK_LOG` is set (an
//! env-filter, e.g. `info` or `ferrolock=debug`), and to a JS function given to
//! `setLogger`. No subscriber is installed until one of them asks for it, so
//! without them an event costs core one cached "disabled" check.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::Status;
use napi_derive::napi;
use tracing_subscriber::field::Visit;
use tracing_subscriber::layer::{Context, SubscriberExt as _};
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{reload, EnvFilter, Layer, Registry};

use crate::errors::{caught, invalid, Result};

/// One event, as the function given to `setLogger` receives it.
#[napi(object)]
pub struct LogRecord {
    /// "ERROR", "WARN", "INFO", "DEBUG" or "TRACE".
    pub level: String,
    /// Where in core it comes from, e.g. "ferrolock::waiting::subscriber".
    pub target: String,
    pub message: String,
    /// The event's other fields (lock name, error, ...), as text.
    pub fields: HashMap<String, String>,
}

/// Weak (unref'd): a logger never keeps the event loop alive.
type LogFn = ThreadsafeFunction<LogRecord, (), LogRecord, Status, false, true>;

/// The JS logger's layer reads it on every event it lets through.
static LOGGER: RwLock<Option<Arc<LogFn>>> = RwLock::new(None);

type JsFilter = reload::Handle<EnvFilter, Registry>;

/// The reload handle of the JS layer's filter, once the subscriber is installed.
static INSTALLED: OnceLock<Option<JsFilter>> = OnceLock::new();
/// Serializes `setLogger` calls (filter and function change together).
static SETTING: Mutex<()> = Mutex::new(());

const ENV: &str = "FERROLOCK_LOG";

/// The subscriber: stderr (when `FERROLOCK_LOG` is set) and the JS layer, whose
/// filter stays "off" until `setLogger` sets one. Installed once per process; `None`
/// when another global subscriber was already there.
fn install() -> &'static Option<JsFilter> {
    INSTALLED.get_or_init(|| {
        let stderr = std::env::var(ENV).ok().filter(|v| !v.trim().is_empty()).and_then(|spec| {
            match EnvFilter::try_new(&spec) {
                Ok(filter) => Some(
                    tracing_subscriber::fmt::layer()
                        .with_writer(std::io::stderr)
                        .with_ansi(false)
                        .with_filter(filter),
                ),
                Err(e) => {
                    eprintln!("ferrolock: {ENV}={spec:?} is not a valid filter ({e}); logging to stderr is off");
                    None
                }
            }
        });
        let (filter, handle) = reload::Layer::new(EnvFilter::new("off"));
        let subscriber = Registry::default().with(JsLayer.with_filter(filter)).with(stderr);
        subscriber.try_init().ok().map(|_| handle)
    })
}

/// At load: installs the subscriber only when `FERROLOCK_LOG` asks for logs.
pub(crate) fn init_from_env() {
    if std::env::var_os(ENV).is_some_and(|v| !v.is_empty()) {
        install();
    }
}

/// Sends core's log events at `filter` (env-filter syntax, e.g. "info" or
/// "ferrolock=debug,ferrolock::renewal=trace") or above to `logger`, from the
/// runtime's thread without blocking it; `null` stops that. One logger per process:
/// a call replaces the previous one.
#[napi]
pub fn set_logger(
    #[napi(ts_arg_type = "((record: LogRecord) => void) | null")] logger: Option<LogFn>,
    filter: Option<String>,
) -> Result<()> {
    caught(|| {
        let _one_at_a_time = SETTING.lock().unwrap_or_else(|p| p.into_inner());
        let filter = match (&logger, filter) {
            (None, _) => EnvFilter::new("off"),
            (Some(_), None) => EnvFilter::new("info"),
            (Some(_), Some(spec)) => EnvFilter::try_new(&spec)
                .map_err(|e| invalid(format!("setLogger: level {spec:?} is not a valid filter ({e}); give e.g. \"info\" or \"ferrolock=debug\"")))?,
        };
        let Some(handle) = install() else {
            return Err(invalid("setLogger: another tracing subscriber is installed in this process"));
        };
        *LOGGER.write().unwrap_or_else(|p| p.into_inner()) = logger.map(Arc::new);
        handle.reload(filter).map_err(|e| invalid(format!("setLogger: {e}")))?;
        Ok(())
    })
}

/// Forwards the events its filter lets through to the JS logger.
struct JsLayer;

impl<S: tracing::Subscriber> Layer<S> for JsLayer {
    fn on_event(&self, event: &tracing::Event<'_>, _ctx: Context<'_, S>) {
        let Some(logger) = LOGGER.read().unwrap_or_else(|p| p.into_inner()).clone() else { return };
        let meta = event.metadata();
        let mut fields = Fields::default();
        event.record(&mut fields);
        let record = LogRecord {
            level: meta.level().as_str().to_string(),
            target: meta.target().to_string(),
            message: fields.message,
            fields: fields.others,
        };
        // NonBlocking on an unbounded queue: never waits for the JS thread.
        logger.call(record, ThreadsafeFunctionCallMode::NonBlocking);
    }
}

#[derive(Default)]
struct Fields {
    message: String,
    others: HashMap<String, String>,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.put(field, value.to_string());
    }

    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        let mut text = String::new();
        let _ = write!(text, "{value:?}");
        self.put(field, text);
    }
}

impl Fields {
    fn put(&mut self, field: &tracing::field::Field, value: String) {
        if field.name() == "message" {
            self.message = value;
        } else {
            self.others.insert(field.name().to_string(), value);
        }
    }
}
