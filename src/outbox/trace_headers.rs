//! The trace of a publish: the PRODUCER span of each message (OpenTelemetry messaging
//! semantic conventions), child of the context the outbox row kept from the span that
//! wrote it, and the `traceparent` / `tracestate` AMQP headers that carry the producer
//! span's own context, so that a consumer's span is the producer's child. Whoever
//! publishes the row (the request, a dispatcher on another instance, a retry after a
//! parking) sends the same trace. Building headers never fails a publish.

use lapin::types::{AMQPValue, FieldTable};
use opentelemetry::trace::{Span, SpanKind, Status, TraceContextExt, Tracer};
use opentelemetry::{global, Context, KeyValue};

use crate::store::{OutboxRow, TraceContext};
use crate::store::{TRACEPARENT, TRACESTATE};

/// The instrumentation scope of the spans made here.
const SCOPE: &str = "kh-review.outbox";

/// The PRODUCER span of one publish, open until [`Producer::end`] (or drop).
pub struct Producer {
    span: global::BoxedSpan,
    context: Option<TraceContext>,
}

impl Producer {
    /// Starts the span of publishing `row` to `exchange` (the destination) with
    /// `routing_key`, under the context the row kept (none: a trace of its own).
    pub fn start(row: &OutboxRow, exchange: &str, routing_key: &str, body_len: usize) -> Self {
        let parent = stored_context(row).map_or_else(Context::new, |t| t.parent());
        let tracer = global::tracer(SCOPE);
        let span = tracer
            .span_builder(format!("publish {exchange}"))
            .with_kind(SpanKind::Producer)
            .with_attributes([
                KeyValue::new("messaging.system", "rabbitmq"),
                KeyValue::new("messaging.operation.type", "send"),
                KeyValue::new("messaging.operation.name", "publish"),
                KeyValue::new("messaging.destination.name", exchange.to_string()),
                KeyValue::new(
                    "messaging.rabbitmq.destination.routing_key",
                    routing_key.to_string(),
                ),
                KeyValue::new("messaging.message.id", row.event_id.to_string()),
                KeyValue::new("messaging.message.body.size", body_len as i64),
                KeyValue::new("kh.document_id", row.document_id.to_string()),
                KeyValue::new("kh.event_type", row.event_type.clone()),
            ])
            .start_with_context(&tracer, &parent);
        // Without a tracer provider (or when not sampled and not recording) the span still
        // carries the parent's trace: that is what the headers then send on.
        let own = Context::new().with_remote_span_context(span.span_context().clone());
        let context = TraceContext::of(&own).or_else(|| stored_context(row));
        Self { span, context }
    }

    /// The headers that carry this publish's trace context.
    pub fn headers(&self) -> FieldTable {
        let mut headers = FieldTable::default();
        add(&mut headers, self.context.as_ref());
        headers
    }

    /// Ends the span, as an error with `why` when the publish failed.
    pub fn end(mut self, failed: Option<&str>) {
        if let Some(why) = failed {
            self.span.set_status(Status::error(why.to_string()));
        }
        self.span.end();
    }
}

/// Adds `traceparent` and `tracestate` (when there is one) to `headers`, as long strings.
pub fn add(headers: &mut FieldTable, context: Option<&TraceContext>) {
    let Some(tc) = context else { return };
    headers.insert(
        TRACEPARENT.into(),
        AMQPValue::LongString(tc.traceparent.as_str().into()),
    );
    if let Some(state) = &tc.tracestate {
        headers.insert(
            TRACESTATE.into(),
            AMQPValue::LongString(state.as_str().into()),
        );
    }
}

/// The context the row kept, when it is well-formed.
fn stored_context(row: &OutboxRow) -> Option<TraceContext> {
    TraceContext::parse(row.traceparent.as_deref()?, row.tracestate.as_deref())
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    fn row(traceparent: Option<&str>) -> OutboxRow {
        OutboxRow {
            id: 1,
            event_id: Uuid::now_v7(),
            document_id: Uuid::now_v7(),
            document_version: 1,
            event_type: "document.approved".into(),
            routing_key: Some("document.approved".into()),
            payload: serde_json::json!({}),
            attempts: 0,
            ticket: Uuid::new_v4(),
            projected: true,
            traceparent: traceparent.map(str::to_string),
            tracestate: Some("kh=1".into()),
        }
    }

    fn header(headers: &FieldTable, name: &str) -> Option<String> {
        let (_, value) = headers.inner().iter().find(|(k, _)| k.as_str() == name)?;
        match value {
            AMQPValue::LongString(s) => Some(s.to_string()),
            other => panic!("{name} is not a long string: {other:?}"),
        }
    }

    #[test]
    fn the_headers_continue_the_stored_trace() {
        let stored = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let producer = Producer::start(&row(Some(stored)), "kh.events", "document.approved", 2);
        let headers = producer.headers();
        let sent = header(&headers, TRACEPARENT).unwrap();
        let tc = TraceContext::parse(&sent, None).unwrap();
        assert_eq!(tc.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(header(&headers, TRACESTATE).as_deref(), Some("kh=1"));
        producer.end(None);
    }

    #[test]
    fn a_row_without_a_valid_context_sends_no_stored_one() {
        for stored in [None, Some("00-zz-00f067aa0ba902b7-01")] {
            let producer = Producer::start(&row(stored), "kh.events", "document.approved", 2);
            // With no tracer provider installed there is no span of its own either.
            if let Some(sent) = header(&producer.headers(), TRACEPARENT) {
                assert!(TraceContext::parse(&sent, None).is_some(), "{sent}");
            }
            producer.end(Some("refused"));
        }
    }
}
