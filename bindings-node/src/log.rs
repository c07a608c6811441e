//! Core's `tracing` events for Node: to stderr when `FERROLOCK_LOG` is set (a level
//! or `target=level` list, e.g. `info` or `ferrolock=debug`), and to a JS function
//! given to `setLogger`. The subscriber, the filters and the logger of the moment
//! are core's log_bridge; this file translates an event into a `LogRecord`.

use std::collections::HashMap;

use ferrolock::log_bridge::{Bridge, EventText, Logger};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::Status;
use napi_derive::napi;

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

/// The function given to `setLogger`.
struct JsLogger(LogFn);

static BRIDGE: Bridge<JsLogger> = Bridge::new("FERROLOCK_LOG");

/// At load: installs the subscriber only when `FERROLOCK_LOG` asks for logs.
pub(crate) fn init_from_env() {
    BRIDGE.init_from_env();
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
    caught(|| BRIDGE.set(logger.map(JsLogger), filter.as_deref()).map_err(|e| invalid(format!("setLogger: {e}"))))
}

impl Logger for JsLogger {
    fn log(&self, event: &tracing::Event<'_>) {
        let meta = event.metadata();
        let text = EventText::of(event);
        let record = LogRecord {
            level: meta.level().as_str().to_string(),
            target: meta.target().to_string(),
            message: text.message,
            fields: text.fields.into_iter().map(|(name, value)| (name.to_string(), value)).collect(),
        };
        // NonBlocking on an unbounded queue: never waits for the JS thread.
        self.0.call(record, ThreadsafeFunctionCallMode::NonBlocking);
    }
}
