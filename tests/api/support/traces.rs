//! Traces read back from an OTLP/HTTP receiver of the test's own (the test kit's
//! `otlp::OtlpReceiver`, on 127.0.0.1 at a port of its own), the settings that make a
//! `kh-review` binary export to it, and the trace context of the messages a test takes from
//! its queue. Spans are read as Jaeger shows them: the kind as the `span.kind` tag, an error
//! status as `error = true`.

use std::collections::HashMap;
use std::time::Duration;

use kh_review_testkit::otlp::{OtlpReceiver, ReceivedSpan, SpanStatus};
use lapin::types::AMQPValue;
use serde_json::Value;

use super::inspect::wait_for;

/// A receiver for one test: the binaries it starts export to it.
pub async fn receiver() -> OtlpReceiver {
    OtlpReceiver::start()
        .await
        .expect("the OTLP receiver binds 127.0.0.1")
}

/// The settings of a binary that exports every span at once to `receiver`, as `service`.
pub fn exporting(receiver: &OtlpReceiver, service: &str) -> Vec<(&'static str, String)> {
    vec![
        ("APP__TELEMETRY__OTLP_ENDPOINT", receiver.endpoint()),
        ("APP__TELEMETRY__EXPORT_INTERVAL_MS", "100".into()),
        ("APP__TELEMETRY__SERVICE_NAME", service.to_string()),
    ]
}

/// A fresh `traceparent` (sampled) with its trace id and span id.
pub fn new_traceparent() -> (String, String, String) {
    let trace = uuid::Uuid::new_v4().simple().to_string();
    let span = uuid::Uuid::new_v4().simple().to_string()[..16].to_string();
    (format!("00-{trace}-{span}-01"), trace, span)
}

/// One span as the receiver holds it.
#[derive(Debug, Clone)]
pub struct SpanView {
    pub span_id: String,
    pub name: String,
    /// The span it is a child of (none for a trace's root).
    pub parent: Option<String>,
    pub service: String,
    pub tags: HashMap<String, Value>,
}

impl SpanView {
    /// The span with the tags Jaeger's OTLP translation gives it: the attributes (arrays and
    /// maps as JSON text), `span.kind` (unless unspecified), `otel.scope.name`, and for a
    /// status `otel.status_code` (`OK`, `ERROR`), then, for an error, `error = true` and
    /// `otel.status_description` (its message, when it has one).
    fn of(span: &ReceivedSpan) -> Self {
        let mut tags: HashMap<String, Value> = (span.attributes.iter())
            .map(|(k, v)| match v {
                Value::Array(_) | Value::Object(_) => (k.clone(), Value::String(v.to_string())),
                _ => (k.clone(), v.clone()),
            })
            .collect();
        let mut tag = |k: &str, v: Value| tags.insert(k.to_string(), v);
        if span.kind != "unspecified" {
            tag("span.kind", span.kind.into());
        }
        if !span.scope.is_empty() {
            tag("otel.scope.name", span.scope.clone().into());
        }
        match &span.status {
            SpanStatus::Unset => {}
            SpanStatus::Ok => _ = tag("otel.status_code", "OK".into()),
            SpanStatus::Error(message) => {
                tag("otel.status_code", "ERROR".into());
                tag("error", Value::Bool(true));
                if !message.is_empty() {
                    tag("otel.status_description", message.clone().into());
                }
            }
        }
        SpanView {
            span_id: span.span_id.clone(),
            name: span.name.clone(),
            parent: span.parent_span_id.clone(),
            service: span.service.clone(),
            tags,
        }
    }

    pub fn tag(&self, key: &str) -> Option<&str> {
        self.tags.get(key).and_then(Value::as_str)
    }

    pub fn kind(&self) -> Option<&str> {
        self.tag("span.kind")
    }

    pub fn failed(&self) -> bool {
        self.tags.get("error") == Some(&Value::Bool(true))
    }
}

/// A trace: its spans, in no particular order.
#[derive(Debug, Clone)]
pub struct TraceView {
    pub spans: Vec<SpanView>,
}

impl TraceView {
    fn of(spans: &[ReceivedSpan]) -> Self {
        TraceView {
            spans: spans.iter().map(SpanView::of).collect(),
        }
    }

    pub fn named(&self, name: &str) -> Vec<&SpanView> {
        self.spans.iter().filter(|s| s.name == name).collect()
    }

    pub fn of_kind(&self, kind: &str) -> Vec<&SpanView> {
        self.spans
            .iter()
            .filter(|s| s.kind() == Some(kind))
            .collect()
    }

    pub fn span(&self, id: &str) -> Option<&SpanView> {
        self.spans.iter().find(|s| s.span_id == id)
    }

    /// The names of the spans above `span`, its parent first.
    pub fn ancestors(&self, span: &SpanView) -> Vec<&str> {
        let mut out = Vec::new();
        let mut at = span.parent.as_deref().and_then(|id| self.span(id));
        while let Some(s) = at {
            if out.len() > self.spans.len() {
                break; // a cycle: never in a real trace
            }
            out.push(s.name.as_str());
            at = s.parent.as_deref().and_then(|id| self.span(id));
        }
        out
    }

    /// Every span's name, for a failure message.
    pub fn outline(&self) -> String {
        let mut lines: Vec<String> = (self.spans.iter())
            .map(|s| {
                let parent = s.parent.as_deref().unwrap_or("-");
                format!("{} {} <- {parent} ({})", s.span_id, s.name, s.service)
            })
            .collect();
        lines.sort();
        lines.join("\n")
    }
}

/// The trace `trace_id` once `ready` holds for it, as `receiver` has it (a moment after
/// the service sent it), within `deadline`.
pub async fn wait_trace(
    receiver: &OtlpReceiver,
    trace_id: &str,
    deadline: Duration,
    ready: impl Fn(&TraceView) -> bool,
) -> TraceView {
    let found = receiver
        .wait_trace(trace_id, deadline, |spans| ready(&TraceView::of(spans)))
        .await;
    found
        .map(|spans| TraceView::of(&spans))
        .unwrap_or_else(|spans| {
            let seen = TraceView::of(&spans).outline();
            panic!("trace {trace_id} not complete after {deadline:?}; the receiver has:\n{seen}")
        })
}

/// A trace context header of a message (`traceparent`, `tracestate`), if it has it: a
/// long string.
pub fn header(props: &lapin::BasicProperties, name: &str) -> Option<String> {
    let headers = props.headers().as_ref()?;
    let (_, value) = (headers.inner().iter()).find(|(k, _)| k.as_str() == name)?;
    match value {
        AMQPValue::LongString(s) => Some(s.to_string()),
        other => panic!("{name} is not a long string: {other:?}"),
    }
}

/// (trace id, span id) of a `traceparent`.
pub fn ids(traceparent: &str) -> (String, String) {
    let parts: Vec<&str> = traceparent.split('-').collect();
    assert_eq!(parts.len(), 4, "{traceparent}");
    (parts[1].to_string(), parts[2].to_string())
}

/// Waits for `n` messages on the app's queue, with their properties.
pub async fn messages(
    app: &super::app::TestApp,
    n: usize,
    deadline: Duration,
) -> Vec<(Value, lapin::BasicProperties)> {
    let got = std::cell::RefCell::new(Vec::new());
    wait_for(&format!("{n} messages"), deadline, || async {
        let more = app.take_events().await;
        got.borrow_mut().extend(more);
        (got.borrow().len() >= n).then_some(())
    })
    .await;
    got.into_inner()
}
