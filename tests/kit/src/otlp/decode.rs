//! An `ExportTraceServiceRequest` into [`ReceivedSpan`]s: ids to hex, the resource's
//! `service.name`, the kind's and the status's names, attributes to JSON values. A span
//! whose trace or span id is not a valid one (16 and 8 bytes, not all zero), or whose parent
//! id is neither empty nor 8 bytes, is refused and counted, as a collector does.

use std::collections::BTreeMap;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue};
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use opentelemetry_proto::tonic::trace::v1::status::StatusCode;
use opentelemetry_proto::tonic::trace::v1::Span;
use serde_json::Value;

use super::{ReceivedSpan, SpanStatus};

/// The spans of one request: those kept, and how many were refused and why.
pub(super) struct Decoded {
    pub spans: Vec<ReceivedSpan>,
    pub rejected: i64,
    pub why_rejected: String,
}

pub(super) fn spans(request: ExportTraceServiceRequest) -> Decoded {
    let mut out = Decoded {
        spans: Vec::new(),
        rejected: 0,
        why_rejected: String::new(),
    };
    for resource_spans in request.resource_spans {
        let resource = resource_spans.resource.unwrap_or_default();
        let service = (resource.attributes.iter())
            .find(|kv| kv.key == "service.name")
            .and_then(|kv| match kv.value.as_ref()?.value.as_ref()? {
                Any::StringValue(s) => Some(s.clone()),
                _ => None,
            })
            .unwrap_or_default();
        for scope_spans in resource_spans.scope_spans {
            let scope = scope_spans.scope.map(|s| s.name).unwrap_or_default();
            for span in scope_spans.spans {
                match one(span, &service, &scope) {
                    Ok(span) => out.spans.push(span),
                    Err(why) => {
                        out.rejected += 1;
                        out.why_rejected = why;
                    }
                }
            }
        }
    }
    out
}

fn one(span: Span, service: &str, scope: &str) -> Result<ReceivedSpan, String> {
    let invalid = |what: &str| format!("span {:?}: invalid {what} id", span.name);
    let trace_id = id(&span.trace_id, 16).ok_or_else(|| invalid("trace"))?;
    let span_id = id(&span.span_id, 8).ok_or_else(|| invalid("span"))?;
    let parent_span_id = match span.parent_span_id.len() {
        0 => None,
        _ => Some(id(&span.parent_span_id, 8).ok_or_else(|| invalid("parent span"))?),
    };
    let status = span.status.unwrap_or_default();
    let status = match StatusCode::try_from(status.code) {
        Ok(StatusCode::Ok) => SpanStatus::Ok,
        Ok(StatusCode::Error) => SpanStatus::Error(status.message),
        _ => SpanStatus::Unset,
    };
    Ok(ReceivedSpan {
        trace_id,
        span_id,
        parent_span_id,
        name: span.name,
        kind: kind(span.kind),
        service: service.to_string(),
        scope: scope.to_string(),
        attributes: attributes(span.attributes),
        status,
        start_unix_nano: span.start_time_unix_nano,
        end_unix_nano: span.end_time_unix_nano,
    })
}

/// Lowercase hex of an id of `len` bytes, unless it has another length or is all zero.
fn id(bytes: &[u8], len: usize) -> Option<String> {
    (bytes.len() == len && bytes.iter().any(|b| *b != 0)).then(|| hex(bytes))
}

pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn kind(kind: i32) -> &'static str {
    match SpanKind::try_from(kind) {
        Ok(SpanKind::Internal) => "internal",
        Ok(SpanKind::Server) => "server",
        Ok(SpanKind::Client) => "client",
        Ok(SpanKind::Producer) => "producer",
        Ok(SpanKind::Consumer) => "consumer",
        Ok(SpanKind::Unspecified) | Err(_) => "unspecified",
    }
}

fn attributes(kvs: Vec<KeyValue>) -> BTreeMap<String, Value> {
    (kvs.into_iter())
        .map(|kv| (kv.key, value(kv.value)))
        .collect()
}

fn value(v: Option<AnyValue>) -> Value {
    match v.and_then(|v| v.value) {
        None => Value::Null,
        Some(Any::StringValue(s)) => Value::String(s),
        Some(Any::BoolValue(b)) => Value::Bool(b),
        Some(Any::IntValue(i)) => Value::from(i),
        // NaN and the infinities have no JSON number: their text instead.
        Some(Any::DoubleValue(d)) => serde_json::Number::from_f64(d)
            .map_or_else(|| Value::String(d.to_string()), Value::Number),
        Some(Any::ArrayValue(a)) => {
            Value::Array(a.values.into_iter().map(Some).map(value).collect())
        }
        Some(Any::KvlistValue(l)) => Value::Object(attributes(l.values).into_iter().collect()),
        Some(Any::BytesValue(b)) => Value::String(hex(&b)),
        // An index into a dictionary that only the profiles signal has.
        Some(Any::StringValueStrindex(i)) => Value::from(i),
    }
}
