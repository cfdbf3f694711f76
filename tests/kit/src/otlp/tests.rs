//! The receiver over real HTTP: requests encoded with the OTLP types, posted, read back.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::CONTENT_TYPE;
use hyper::{Method, Request, StatusCode};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::common::v1::{
    AnyValue, ArrayValue, InstrumentationScope, KeyValue,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use opentelemetry_proto::tonic::trace::v1::status::StatusCode as Code;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span, Status};
use prost::Message;
use serde_json::json;

use super::http::{RpcStatus, PROTOBUF};
use super::{OtlpReceiver, SpanStatus};

const TRACE: [u8; 16] = [
    0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36,
];
const TRACE_HEX: &str = "4bf92f3577b34da6a3ce929d0e0e4736";

fn kv(key: &str, value: Any) -> KeyValue {
    let value = Some(AnyValue { value: Some(value) });
    KeyValue {
        key: key.into(),
        value,
        ..Default::default()
    }
}

fn span_id(n: u8) -> Vec<u8> {
    vec![0xab, 0, 0, 0, 0, 0, 0, n]
}

fn span(n: u8, parent: Option<u8>, name: &str, kind: SpanKind) -> Span {
    Span {
        trace_id: TRACE.to_vec(),
        span_id: span_id(n),
        parent_span_id: parent.map(span_id).unwrap_or_default(),
        name: name.into(),
        kind: kind as i32,
        start_time_unix_nano: 1_000,
        end_time_unix_nano: 2_000,
        ..Default::default()
    }
}

fn request(service: &str, spans: Vec<Span>) -> ExportTraceServiceRequest {
    let resource = Resource {
        attributes: vec![kv("service.name", Any::StringValue(service.into()))],
        ..Default::default()
    };
    let scope = InstrumentationScope {
        name: "kit".into(),
        ..Default::default()
    };
    let scope_spans = ScopeSpans {
        scope: Some(scope),
        spans,
        ..Default::default()
    };
    let resource_spans = ResourceSpans {
        resource: Some(resource),
        scope_spans: vec![scope_spans],
        ..Default::default()
    };
    ExportTraceServiceRequest {
        resource_spans: vec![resource_spans],
    }
}

/// Posts `body` to `url` with that content type: the status, its content type and body.
async fn post(url: &str, content_type: &str, body: Vec<u8>) -> (StatusCode, String, Bytes) {
    send(Method::POST, url, content_type, body).await
}

async fn send(
    method: Method,
    url: &str,
    content_type: &str,
    body: Vec<u8>,
) -> (StatusCode, String, Bytes) {
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let req = Request::builder()
        .method(method)
        .uri(url)
        .header(CONTENT_TYPE, content_type)
        .body(Full::new(Bytes::from(body)))
        .unwrap();
    let r = client.request(req).await.unwrap();
    let status = r.status();
    let ct = r
        .headers()
        .get(CONTENT_TYPE)
        .map(|v| v.to_str().unwrap().to_string());
    (
        status,
        ct.unwrap_or_default(),
        r.into_body().collect().await.unwrap().to_bytes(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_posted_in_protobuf_are_answered_and_read_back() {
    let receiver = OtlpReceiver::start().await.unwrap();
    assert!(receiver.endpoint().starts_with("http://127.0.0.1:"));
    let mut server = span(1, None, "POST /things", SpanKind::Server);
    server.attributes = vec![
        kv("http.response.status_code", Any::IntValue(200)),
        kv("ok", Any::BoolValue(true)),
        kv("ratio", Any::DoubleValue(0.5)),
        kv("route", Any::StringValue("/things".into())),
        kv("raw", Any::BytesValue(vec![0xde, 0xad])),
        kv(
            "list",
            Any::ArrayValue(ArrayValue {
                values: vec![AnyValue {
                    value: Some(Any::IntValue(1)),
                }],
            }),
        ),
    ];
    let mut publish = span(2, Some(1), "publish x", SpanKind::Producer);
    publish.status = Some(Status {
        message: "refused".into(),
        code: Code::Error as i32,
    });
    let first = request("service-a", vec![server]);
    let second = request(
        "service-b",
        vec![publish, span(3, Some(2), "inner", SpanKind::Internal)],
    );
    for body in [first, second] {
        let (status, ct, body) = post(&receiver.traces_url(), PROTOBUF, body.encode_to_vec()).await;
        assert_eq!((status, ct.as_str()), (StatusCode::OK, PROTOBUF));
        let answer = ExportTraceServiceResponse::decode(body).unwrap();
        assert_eq!(answer.partial_success, None, "every span kept");
    }
    let spans = receiver
        .wait_trace(TRACE_HEX, Duration::from_secs(5), |s| s.len() == 3)
        .await
        .unwrap();
    assert_eq!(receiver.span_count(), 3);
    let (server, publish, inner) = (&spans[0], &spans[1], &spans[2]);
    assert_eq!(
        (server.span_id.as_str(), server.parent_span_id.as_deref()),
        ("ab00000000000001", None)
    );
    assert_eq!(
        (server.name.as_str(), server.kind, server.service.as_str()),
        ("POST /things", "server", "service-a")
    );
    assert_eq!(
        (server.scope.as_str(), server.status.clone()),
        ("kit", SpanStatus::Unset)
    );
    assert_eq!(
        (server.start_unix_nano, server.end_unix_nano),
        (1_000, 2_000)
    );
    let attrs = json!({"http.response.status_code": 200, "ok": true, "ratio": 0.5, "route": "/things", "raw": "dead", "list": [1]});
    assert_eq!(serde_json::to_value(&server.attributes).unwrap(), attrs);
    assert_eq!(publish.parent_span_id.as_deref(), Some("ab00000000000001"));
    assert_eq!(
        (publish.kind, publish.service.as_str()),
        ("producer", "service-b")
    );
    assert_eq!(publish.status, SpanStatus::Error("refused".into()));
    assert_eq!(
        (inner.kind, inner.parent_span_id.as_deref()),
        ("internal", Some("ab00000000000002"))
    );
    assert_eq!(
        receiver.trace(&TRACE_HEX.to_uppercase()).len(),
        3,
        "any case of the id"
    );
}

#[tokio::test]
async fn a_malformed_body_gets_400_with_a_status_and_nothing_is_kept() {
    let receiver = OtlpReceiver::start().await.unwrap();
    let (status, ct, body) = post(&receiver.traces_url(), PROTOBUF, vec![0x0a, 0xff, 0x01]).await;
    assert_eq!((status, ct.as_str()), (StatusCode::BAD_REQUEST, PROTOBUF));
    let why = RpcStatus::decode(body).unwrap();
    assert_eq!(why.code, 3, "INVALID_ARGUMENT: {why:?}");
    assert!(why.message.contains("ExportTraceServiceRequest"), "{why:?}");
    assert_eq!(receiver.span_count(), 0);
}

#[tokio::test]
async fn json_another_path_and_another_method_are_refused() {
    let receiver = OtlpReceiver::start().await.unwrap();
    let url = receiver.traces_url();
    let (status, _, body) = post(&url, "application/json", b"{}".to_vec()).await;
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert!(RpcStatus::decode(body)
        .unwrap()
        .message
        .contains("OTLP/JSON"));
    let (status, _, _) = post(
        &format!("{}/v1/metrics", receiver.endpoint()),
        PROTOBUF,
        vec![],
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _, _) = send(Method::GET, &url, PROTOBUF, vec![]).await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    // An empty request is a valid one, with no spans.
    let (status, _, _) = post(&url, "application/x-protobuf; charset=binary", vec![]).await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn spans_with_invalid_ids_are_refused_as_a_partial_success() {
    let receiver = OtlpReceiver::start().await.unwrap();
    let mut no_trace = span(1, None, "no trace", SpanKind::Internal);
    no_trace.trace_id = vec![0; 16];
    let mut short_parent = span(2, None, "short parent", SpanKind::Internal);
    short_parent.parent_span_id = vec![1, 2, 3];
    let kept = span(3, None, "kept", SpanKind::Unspecified);
    let body = request("a", vec![no_trace, short_parent, kept]).encode_to_vec();
    let (status, _, body) = post(&receiver.traces_url(), PROTOBUF, body).await;
    assert_eq!(status, StatusCode::OK);
    let partial = ExportTraceServiceResponse::decode(body)
        .unwrap()
        .partial_success
        .unwrap();
    assert_eq!(partial.rejected_spans, 2);
    assert!(partial.error_message.contains("invalid"), "{partial:?}");
    let spans = receiver.trace(TRACE_HEX);
    assert_eq!(spans.len(), 1);
    assert_eq!(
        (spans[0].name.as_str(), spans[0].kind),
        ("kept", "unspecified")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_wakes_on_the_export_and_gives_up_at_its_deadline() {
    let receiver = OtlpReceiver::start().await.unwrap();
    let none = receiver
        .wait_trace(TRACE_HEX, Duration::from_millis(200), |s| !s.is_empty())
        .await;
    assert_eq!(none, Err(vec![]), "nothing by the deadline");
    let url = receiver.traces_url();
    let body = request("a", vec![span(1, None, "late", SpanKind::Server)]).encode_to_vec();
    let sender = tokio::spawn(async move { post(&url, PROTOBUF, body).await.0 });
    let started = std::time::Instant::now();
    let got = receiver
        .wait_trace(TRACE_HEX, Duration::from_secs(30), |s| !s.is_empty())
        .await;
    assert_eq!(got.unwrap()[0].name, "late");
    assert_eq!(receiver.wait_spans(1, Duration::ZERO).await, Ok(1));
    assert_eq!(
        receiver.wait_spans(2, Duration::from_millis(100)).await,
        Err(1),
        "one span, not two, by the deadline"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "woken by the export, not the deadline"
    );
    assert_eq!(sender.await.unwrap(), StatusCode::OK);
}
