//! Core's `tracing` events for Node: to stderr when `FERROLOCK_LOG` is set (a level
//! or `target=level` list, e.g. `info` or `ferrolock=debug`), and to a JS function
//! given to `setLogger`. The subscriber and the filters are core's log_bridge, as in
//! the C binding.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::Status;
use napi_derive::napi;
use ferrolock::log_bridge::{self, EventText, FilterHandle};
use tracing_subscriber::layer::{Context, Layer};

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

/// The reload handle of the JS layer's filter, once the subscriber is installed.
static INSTALLED: OnceLock<Option<FilterHandle>> = OnceLock::new();
/// Serializes `setLogger` calls (filter and function change together).
static SETTING: Mutex<()> = Mutex::new(());

const ENV: &str = "FERROLOCK_LOG";

/// The subscriber (core's log_bridge): stderr when `FERROLOCK_LOG` is set, and the
/// JS layer, off until `setLogger` sets its filter.
fn install() -> &'static Option<FilterHandle> {
    INSTALLED.get_or_init(|| log_bridge::install(ENV, JsLayer))
}

/// At load: installs the subscriber only when `FERROLOCK_LOG` asks for logs.
pub(crate) fn init_from_env() {
    if log_bridge::env_asks(ENV) {
        install();
    }
}

/// Sends core's log events at `filter` (a level, or `target=level` directives: e.g.
/// "info" or "ferrolock=debug,ferrolock::renewal=trace") or above to `logger`, from the
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
            (None, _) => log_bridge::off(),
            (Some(_), None) => log_bridge::parse_filter("info").map_err(invalid)?,
            (Some(_), Some(spec)) => log_bridge::parse_filter(&spec)
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
        let text = EventText::of(event);
        let record = LogRecord {
            level: meta.level().as_str().to_string(),
            target: meta.target().to_string(),
            message: text.message,
            fields: text.fields.into_iter().map(|(name, value)| (name.to_string(), value)).collect(),
        };
        // NonBlocking on an unbounded queue: never waits for the JS thread.
        logger.call(record, ThreadsafeFunctionCallMode::NonBlocking);
    }
}
