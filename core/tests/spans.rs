//! With the `spans` feature every acquire is a `ferrolock.acquire` span with its
//! outcome and wait, which an OpenTelemetry layer exports (scripts/test.sh runs this
//! file with `--features spans`).
#![cfg(feature = "spans")]

mod common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

type Fields = HashMap<String, String>;

/// Keeps the fields of every closed `ferrolock.acquire` span.
#[derive(Clone, Default)]
struct Spans(Arc<Mutex<Vec<Fields>>>);

struct Collect<'a>(&'a mut Fields);

impl Visit for Collect<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_string(), format!("{value:?}").trim_matches('"').to_string());
    }
}

impl<S: tracing::Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Spans {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut fields = Fields::new();
        attrs.record(&mut Collect(&mut fields));
        ctx.span(id).unwrap().extensions_mut().insert(fields);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if let Some(fields) = ctx.span(id).unwrap().extensions_mut().get_mut::<Fields>() {
            values.record(&mut Collect(fields));
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let span = ctx.span(&id).unwrap();
        if span.name() == "ferrolock.acquire" {
            self.0.lock().unwrap().push(span.extensions().get::<Fields>().cloned().unwrap_or_default());
        }
    }
}

#[tokio::test]
async fn every_acquire_is_a_span_with_its_outcome_and_wait() {
    let spans = Spans::default();
    let _default = tracing::subscriber::set_default(tracing_subscriber::registry().with(spans.clone()));
    let server = RedisServer::start();
    let client = client(&server.url(), 3000).await;
    let lock = client.fair_lock("spanned").unwrap();
    let guard = lock.acquire().await.unwrap();
    assert!(client.lock("spanned-2").unwrap().try_acquire().await.unwrap().is_some());
    let other = client.fair_lock("spanned").unwrap();
    let waited = other.acquire_with(ferrolock::AcquireOptions::wait(Duration::from_millis(50))).await.unwrap();
    assert!(waited.is_none());
    let sem = client.semaphore("spanned-sem").unwrap();
    assert!(sem.try_acquire(1).await.unwrap().is_none());
    guard.release().await.unwrap();
    client.shutdown().await.unwrap();

    let seen = spans.0.lock().unwrap().clone();
    let summary: Vec<(String, String, String)> =
        seen.iter().map(|f| (f["primitive"].clone(), f["name"].clone(), f["outcome"].clone())).collect();
    assert_eq!(
        summary,
        [
            ("fair".into(), "spanned".into(), "acquired".into()),
            ("reentrant".into(), "spanned-2".into(), "acquired".into()),
            ("fair".into(), "spanned".into(), "not_acquired".into()),
            ("semaphore".into(), "spanned-sem".into(), "not_acquired".into()),
        ]
    );
    let waited_ms: f64 = seen[2]["wait_ms"].parse().unwrap();
    assert!(waited_ms >= 50.0, "the bounded wait's time: {waited_ms}");
}
