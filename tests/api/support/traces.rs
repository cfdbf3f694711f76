//! Traces read back from the real OTLP receiver that `scripts/services.sh up` starts
//! (Jaeger, through its query API), the settings that make a `kh-review` binary export to
//! it, and the trace context of the messages a test takes from its queue. A receiver that
//! does not answer fails the test, naming `make services`.

use std::collections::HashMap;
use std::time::Duration;

use lapin::types::AMQPValue;
use serde_json::Value;

use super::inspect::wait_for;

/// The query API of the receiver (`KH_TEST_JAEGER_QUERY`, from `scripts/services.sh env`).
pub fn query_url() -> String {
    std::env::var("KH_TEST_JAEGER_QUERY").unwrap_or_else(|_| "http://127.0.0.1:16686".into())
}

/// Where a binary under test sends its spans (`KH_TEST_OTLP_ENDPOINT`).
pub fn otlp_endpoint() -> String {
    std::env::var("KH_TEST_OTLP_ENDPOINT").unwrap_or_else(|_| "http://127.0.0.1:4318".into())
}

/// The settings of a binary that exports every span at once to the receiver, as `service`.
pub fn exporting(service: &str) -> Vec<(&'static str, String)> {
    vec![
        ("APP__TELEMETRY__OTLP_ENDPOINT", otlp_endpoint()),
        ("APP__TELEMETRY__EXPORT_INTERVAL_MS", "100".into()),
        ("APP__TELEMETRY__SERVICE_NAME", service.to_string()),
    ]
}

/// Fails loudly unless the receiver answers.
pub async fn require_receiver(client: &reqwest::Client) {
    let url = format!("{}/api/services", query_url());
    let answer = client.get(&url).send().await;
    assert!(
        answer.as_ref().is_ok_and(|r| r.status().is_success()),
        "the OTLP receiver (Jaeger) does not answer at {url}: run `make services` \
         (scripts/services.sh up starts it) or set KH_TEST_JAEGER_QUERY and \
         KH_TEST_OTLP_ENDPOINT: {answer:?}"
    );
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

/// The trace `trace_id` once `ready` holds for it, read back from the receiver (which has
/// it a moment after the service sent it), within `deadline`.
pub async fn wait_trace(
    client: &reqwest::Client,
    trace_id: &str,
    deadline: Duration,
    ready: impl Fn(&TraceView) -> bool,
) -> TraceView {
    let last = std::sync::Mutex::new(None);
    let found = super::inspect::poll_until(deadline, || async {
        let trace = fetch(client, trace_id).await?;
        let ok = ready(&trace);
        *last.lock().unwrap() = Some(trace.clone());
        ok.then_some(trace)
    })
    .await;
    found.unwrap_or_else(|| {
        let seen = last.into_inner().unwrap().map(|t| t.outline());
        panic!("trace {trace_id} not complete after {deadline:?}; the receiver has:\n{seen:?}")
    })
}

async fn fetch(client: &reqwest::Client, trace_id: &str) -> Option<TraceView> {
    let url = format!("{}/api/traces/{trace_id}", query_url());
    let r = client.get(url).send().await.ok()?;
    if !r.status().is_success() {
        return None;
    }
    let body: Value = r.json().await.ok()?;
    let trace = body["data"].as_array()?.first()?.clone();
    let services: HashMap<String, String> = (trace["processes"].as_object()?.iter())
        .map(|(id, p)| (id.clone(), p["serviceName"].as_str().unwrap_or("").into()))
        .collect();
    let spans = trace["spans"].as_array()?.iter().map(|s| SpanView {
        span_id: s["spanID"].as_str().unwrap_or("").into(),
        name: s["operationName"].as_str().unwrap_or("").into(),
        parent: (s["references"].as_array().into_iter().flatten())
            .find(|r| r["refType"] == "CHILD_OF")
            .and_then(|r| r["spanID"].as_str().map(str::to_string)),
        service: (services.get(s["processID"].as_str().unwrap_or("")).cloned()).unwrap_or_default(),
        tags: (s["tags"].as_array().into_iter().flatten())
            .filter_map(|t| Some((t["key"].as_str()?.to_string(), t["value"].clone())))
            .collect(),
    });
    Some(TraceView {
        spans: spans.collect(),
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
