//! An OTLP/HTTP trace receiver for the tests: the collector end of the protocol the
//! service's exporter speaks (`POST /v1/traces`, an `ExportTraceServiceRequest` in protobuf,
//! answered with an `ExportTraceServiceResponse`), on 127.0.0.1 at a port of its own, that
//! keeps what it receives in memory. Each test starts one, points the service under test at
//! [`OtlpReceiver::endpoint`] (its `telemetry.otlp_endpoint`) and waits for the spans of a
//! trace with [`OtlpReceiver::wait_trace`]; nothing is shared between tests. It stops when
//! dropped.
//!
//! Served with hyper's HTTP/1.1 server; the messages are `opentelemetry-proto`'s prost
//! types (no gRPC). OTLP/JSON bodies get `415`: the exporter under test sends protobuf.

mod decode;
mod http;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// The path spans are posted to, under the endpoint.
pub const TRACES_PATH: &str = "/v1/traces";

/// One span as the receiver decoded it. Ids are lowercase hex (32 digits for a trace, 16
/// for a span), as in a `traceparent`.
#[derive(Debug, Clone, PartialEq)]
pub struct ReceivedSpan {
    pub trace_id: String,
    pub span_id: String,
    /// None for a trace's root (an empty `parent_span_id`).
    pub parent_span_id: Option<String>,
    pub name: String,
    /// `internal`, `server`, `client`, `producer`, `consumer`, or `unspecified`.
    pub kind: &'static str,
    /// The `service.name` of the span's resource ("" when it has none).
    pub service: String,
    /// The name of the instrumentation scope that made it.
    pub scope: String,
    /// The span's attributes: strings, booleans, integers and doubles as such, arrays and
    /// key-value lists as JSON arrays and objects, bytes as a lowercase hex string.
    pub attributes: BTreeMap<String, Value>,
    pub status: SpanStatus,
    pub start_unix_nano: u64,
    pub end_unix_nano: u64,
}

/// A span's status code, with the message of an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SpanStatus {
    Unset,
    Ok,
    Error(String),
}

/// What every connection shares: the spans by trace id, and a counter bumped after each
/// request whose spans were stored, which waiters watch.
#[derive(Default)]
struct Store {
    traces: Mutex<HashMap<String, Vec<ReceivedSpan>>>,
    changed: watch::Sender<u64>,
}

impl Store {
    fn add(&self, spans: Vec<ReceivedSpan>) {
        if spans.is_empty() {
            return;
        }
        let mut traces = self.traces.lock().unwrap();
        for span in spans {
            traces.entry(span.trace_id.clone()).or_default().push(span);
        }
        drop(traces);
        self.changed.send_modify(|n| *n += 1);
    }

    fn trace(&self, trace_id: &str) -> Vec<ReceivedSpan> {
        let traces = self.traces.lock().unwrap();
        traces.get(trace_id).cloned().unwrap_or_default()
    }
}

/// The receiver: serving until dropped.
pub struct OtlpReceiver {
    addr: SocketAddr,
    store: Arc<Store>,
    stop: CancellationToken,
}

impl OtlpReceiver {
    /// Binds 127.0.0.1 on a free port and serves from there on.
    pub async fn start() -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let store = Arc::new(Store::default());
        let stop = CancellationToken::new();
        tokio::spawn(serve(listener, store.clone(), stop.clone()));
        Ok(Self { addr, store, stop })
    }

    /// The base URL a service's `telemetry.otlp_endpoint` takes (`http://127.0.0.1:PORT`).
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Where the spans are posted: the endpoint and `/v1/traces`.
    pub fn traces_url(&self) -> String {
        format!("{}{TRACES_PATH}", self.endpoint())
    }

    /// The spans of `trace_id` received so far, in the order they came.
    pub fn trace(&self, trace_id: &str) -> Vec<ReceivedSpan> {
        self.store.trace(&trace_id.to_ascii_lowercase())
    }

    /// How many spans it has received, of every trace.
    pub fn span_count(&self) -> usize {
        let traces = self.store.traces.lock().unwrap();
        traces.values().map(Vec::len).sum()
    }

    /// How many spans it holds once at least `min` have come, checked now and after each
    /// export, until `deadline`: `Err` with the count it had by then.
    pub async fn wait_spans(&self, min: usize, deadline: Duration) -> Result<usize, usize> {
        self.wait_until(deadline, || self.span_count(), |count| *count >= min)
            .await
    }

    /// The spans of `trace_id` once `ready` holds for them, checked now and after each
    /// export that brings spans, until `deadline`: `Err` with what it had by then.
    pub async fn wait_trace(
        &self,
        trace_id: &str,
        deadline: Duration,
        mut ready: impl FnMut(&[ReceivedSpan]) -> bool,
    ) -> Result<Vec<ReceivedSpan>, Vec<ReceivedSpan>> {
        self.wait_until(deadline, || self.trace(trace_id), |spans| ready(spans))
            .await
    }

    /// `read`, now and after each export, until `done` holds for what it read (`Ok`) or
    /// `deadline` passes (`Err` with the last read).
    async fn wait_until<T>(
        &self,
        deadline: Duration,
        read: impl Fn() -> T,
        mut done: impl FnMut(&T) -> bool,
    ) -> Result<T, T> {
        let until = tokio::time::Instant::now() + deadline;
        let mut changed = self.store.changed.subscribe();
        loop {
            // Marked seen before reading, so an export in between wakes the next wait.
            changed.borrow_and_update();
            let got = read();
            if done(&got) {
                return Ok(got);
            }
            // The sender lives in the store, which outlives this borrow: only the deadline ends it.
            if tokio::time::timeout_at(until, changed.changed())
                .await
                .is_err()
            {
                return Err(got);
            }
        }
    }
}

impl Drop for OtlpReceiver {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Accepts connections until `stop`, each served over HTTP/1.1 (keep-alive) until the
/// client closes it or `stop`.
async fn serve(listener: TcpListener, store: Arc<Store>, stop: CancellationToken) {
    loop {
        let accepted = tokio::select! {
            _ = stop.cancelled() => return,
            a = listener.accept() => a,
        };
        let Ok((stream, _)) = accepted else {
            // A failed accept (out of descriptors, say) is the connection's, not the server's.
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let _ = stream.set_nodelay(true);
        let (store, stop) = (store.clone(), stop.clone());
        tokio::spawn(async move {
            let service = service_fn(move |req| {
                let store = store.clone();
                async move { Ok::<_, Infallible>(http::answer(req, &store).await) }
            });
            let conn = http1::Builder::new().serve_connection(TokioIo::new(stream), service);
            tokio::select! {
                _ = conn => {}
                _ = stop.cancelled() => {}
            }
        });
    }
}
