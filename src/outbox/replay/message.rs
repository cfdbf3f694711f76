//! What a replayed message is on the wire: the one place its AMQP properties and headers
//! are made. A history replay sends a delivered row as the live publish sent it (the same
//! body, `message_id`, `type`, `content_type`, persistence) plus `kh-replay-id`; a row
//! written before documents had spaces gets its document's `space` in its body (and so its
//! `ce-khspace`), as every message the service sends has. A snapshot replay sends a
//! `document.snapshot` made from the published revision.

use chrono::Utc;
use lapin::types::{AMQPValue, FieldTable};
use lapin::BasicProperties;
use serde_json::Value;
use uuid::Uuid;

use crate::domain::replay::{
    snapshot_event, stored_event_body, PublishedRevision, SNAPSHOT_EVENT_TYPE,
};
use crate::outbox::envelope::{headers_for, EventSettings};
use crate::outbox::trace_headers;
use crate::store::{StoredEvent, TraceContext};

/// The header naming the replay a message belongs to: a consumer processes such a message
/// even when it has seen its `event_id`.
pub const REPLAY_ID_HEADER: &str = "kh-replay-id";

/// One message to send to the target queue.
#[derive(Debug, Clone)]
pub struct Outgoing {
    pub event_id: Uuid,
    pub body: Vec<u8>,
    pub properties: BasicProperties,
}

/// The AMQP properties of a replayed message: those of a live publish, with the replay's
/// id among the headers. `headers` are the message's own (as a live publish of the row
/// would carry them); `kh-replay-id` is added to them.
pub fn properties(
    event_id: Uuid,
    event_type: &str,
    replay: Uuid,
    mut headers: FieldTable,
) -> BasicProperties {
    headers.insert(
        REPLAY_ID_HEADER.into(),
        AMQPValue::LongString(replay.to_string().into()),
    );
    BasicProperties::default()
        .with_delivery_mode(2)
        .with_content_type("application/json".into())
        .with_message_id(event_id.to_string().into())
        .with_type(event_type.into())
        .with_app_id("kh-review".into())
        .with_timestamp(Utc::now().timestamp() as u64)
        .with_headers(headers)
}

/// The headers a live publish of `row` (whose body is `body`) carries, besides the
/// replay's own.
pub fn stored_headers(row: &StoredEvent, body: &Value, events: &EventSettings) -> FieldTable {
    let mut headers = headers_for(row.event_id, &row.event_type, row.document_id, body, events);
    // The trace of the change, as it was stored: the replay continues it.
    let trace = row
        .traceparent
        .as_deref()
        .and_then(|tp| TraceContext::parse(tp, row.tracestate.as_deref()));
    trace_headers::add(&mut headers, trace.as_ref());
    headers
}

/// A delivered outbox row, sent again as it was (with its document's space, when the row
/// was written without one).
pub fn replayed(
    row: &StoredEvent,
    replay: Uuid,
    events: &EventSettings,
) -> Result<Outgoing, serde_json::Error> {
    let body = stored_event_body(row.payload.clone(), &row.space);
    let headers = stored_headers(row, &body, events);
    Ok(Outgoing {
        event_id: row.event_id,
        body: serde_json::to_vec(&body)?,
        properties: properties(row.event_id, &row.event_type, replay, headers),
    })
}

/// The `document.snapshot` of a published revision, asked for by `actor`.
pub fn snapshot(
    replay: Uuid,
    rev: &PublishedRevision,
    actor: &str,
    events: &EventSettings,
) -> Outgoing {
    let (event_id, body) = snapshot_event(replay, rev, actor, Utc::now());
    let headers = headers_for(
        event_id,
        SNAPSHOT_EVENT_TYPE,
        rev.document_id,
        &body,
        events,
    );
    Outgoing {
        event_id,
        body: serde_json::to_vec(&body).expect("a JSON value serializes"),
        properties: properties(event_id, SNAPSHOT_EVENT_TYPE, replay, headers),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replayed_row_keeps_its_id_type_and_body_and_names_the_replay() {
        let row = StoredEvent {
            id: 7,
            event_id: Uuid::now_v7(),
            document_id: Uuid::now_v7(),
            space: "hr".into(),
            event_type: "document.approved".into(),
            payload: serde_json::json!({"event_type": "document.approved", "n": 1, "space": "hr"}),
            traceparent: None,
            tracestate: None,
        };
        let replay = Uuid::now_v7();
        let m = replayed(&row, replay, &EventSettings::default()).unwrap();
        assert_eq!(m.body, serde_json::to_vec(&row.payload).unwrap());
        let p = &m.properties;
        assert_eq!(
            p.message_id().as_ref().unwrap().as_str(),
            row.event_id.to_string()
        );
        assert_eq!(p.kind().as_ref().unwrap().as_str(), "document.approved");
        assert_eq!(p.delivery_mode(), &Some(2));
        let headers = p.headers().as_ref().unwrap();
        assert_eq!(
            headers.inner().get(REPLAY_ID_HEADER),
            Some(&AMQPValue::LongString(replay.to_string().into()))
        );
        assert_eq!(
            headers.inner().get("ce-khspace"),
            Some(&AMQPValue::LongString("hr".into()))
        );
    }

    #[test]
    fn a_row_stored_without_a_space_is_sent_with_its_document_s() {
        let row = StoredEvent {
            id: 8,
            event_id: Uuid::now_v7(),
            document_id: Uuid::now_v7(),
            space: "legal".into(),
            event_type: "document.archived".into(),
            payload: serde_json::json!({"event_type": "document.archived"}),
            traceparent: None,
            tracestate: None,
        };
        let m = replayed(&row, Uuid::now_v7(), &EventSettings::default()).unwrap();
        let body: Value = serde_json::from_slice(&m.body).unwrap();
        assert_eq!(body["space"], "legal");
        let headers = m.properties.headers().as_ref().unwrap();
        assert_eq!(
            headers.inner().get("ce-khspace"),
            Some(&AMQPValue::LongString("legal".into()))
        );
    }
}
