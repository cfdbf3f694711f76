//! The CloudEvents 1.0 envelope of every published message, in binary content mode: the
//! event's JSON body as it is, and its attributes as the `ce-` headers of the RabbitMQ
//! protocol binding (Knative's; the CloudEvents AMQP binding covers AMQP 1.0 only), each
//! value an AMQP long string, with one extension attribute of the service's, `khspace`
//! (the body's `space`, so a consumer routes by knowledge base without parsing the body).
//! `datacontenttype` is the `content_type` property, which the publisher sets.
//!
//! The headers are built from the outbox row alone, by [`cloudevent_headers`], whoever
//! publishes it and however often (the request, a background dispatcher, a retry after a
//! parking): the same row always gets the same headers. Other paths (a replay, trace
//! context) add theirs to the table this returns; they never build `ce-` headers of their
//! own.

use chrono::{DateTime, SecondsFormat, Utc};
use lapin::types::{AMQPValue, FieldTable};
use serde::Deserialize;

use uuid::Uuid;

use crate::store::OutboxRow;

/// `[events]`: how the service names itself and its schemas in the envelope.
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct EventSettings {
    /// `ce-source` of every event: a URI reference naming this service.
    pub source: String,
    /// Where consumers reach this service's HTTP root: `ce-dataschema` is
    /// `{public_base_url}/schemas/events/{type}.json`.
    pub public_base_url: String,
}

impl Default for EventSettings {
    fn default() -> Self {
        Self {
            source: "/kh-review".into(),
            public_base_url: "http://127.0.0.1:8080".into(),
        }
    }
}

impl EventSettings {
    /// The URL of `event_type`'s JSON Schema, served by this service.
    pub fn schema_url(&self, event_type: &str) -> String {
        format!(
            "{}/schemas/events/{event_type}.json",
            self.public_base_url.trim_end_matches('/')
        )
    }

    /// Reports each invalid setting to `bad` by its key.
    pub fn check(&self, bad: &mut impl FnMut(&'static str, &str)) {
        let source = self.source.trim();
        if source.is_empty() || source != self.source || source.contains(char::is_whitespace) {
            bad(
                "events.source",
                "must be a URI reference without spaces (for example /kh-review)",
            );
        }
        let url = self.public_base_url.as_str();
        let rest = url
            .strip_prefix("https://")
            .or_else(|| url.strip_prefix("http://"));
        let host_ok = rest
            .is_some_and(|r| !r.is_empty() && !r.starts_with('/') && !r.contains(['?', '#', ' ']));
        if !host_ok {
            bad(
                "events.public_base_url",
                "must be an http:// or https:// URL without a query (for example https://review.example.com)",
            );
        }
    }
}

/// `ce-specversion`.
pub const SPEC_VERSION: &str = "1.0";

/// The header of the extension attribute `khspace`: the key of the event's space.
pub const SPACE_HEADER: &str = "ce-khspace";

/// The `ce-` headers every message about a document carries, in this order (the service's
/// own events, about no document, have neither `ce-subject` nor `ce-khspace`).
pub const CE_HEADERS: [&str; 8] = [
    "ce-specversion",
    "ce-id",
    "ce-source",
    "ce-type",
    "ce-subject",
    "ce-time",
    "ce-dataschema",
    SPACE_HEADER,
];

/// The CloudEvents attributes of the row's event: every `ce-` header, each a long string.
/// `ce-time` is the event's `occurred_at` (the time of the change, not of this publish),
/// in RFC 3339 UTC; a body without a readable one (never written by the service) has
/// no `ce-time`, which CloudEvents allows. `ce-khspace` is the body's `space`: the
/// service writes it in every row's body (a row written by a release before spaces, still
/// undelivered when this one starts, has none, and so no `ce-khspace`).
pub fn cloudevent_headers(row: &OutboxRow, events: &EventSettings) -> FieldTable {
    headers_for(
        row.event_id,
        &row.event_type,
        row.document_id,
        &row.payload,
        events,
    )
}

/// The CloudEvents headers of any event the service sends: a live row's, a replayed row's,
/// a replay's `document.snapshot` (`payload` is the body; its `occurred_at` is `ce-time`,
/// its `space` is `ce-khspace`).
pub fn headers_for(
    event_id: Uuid,
    event_type: &str,
    document_id: Uuid,
    payload: &serde_json::Value,
    events: &EventSettings,
) -> FieldTable {
    attributes(event_id, event_type, Some(document_id), payload, events)
}

/// The CloudEvents headers of an event about no document (`audit.checkpoint`): those of
/// [`headers_for`] without `ce-subject`, which CloudEvents leaves optional (and without
/// `ce-khspace`: its body names no space).
pub fn service_headers(
    event_id: Uuid,
    event_type: &str,
    payload: &serde_json::Value,
    events: &EventSettings,
) -> FieldTable {
    attributes(event_id, event_type, None, payload, events)
}

fn attributes(
    event_id: Uuid,
    event_type: &str,
    subject: Option<Uuid>,
    payload: &serde_json::Value,
    events: &EventSettings,
) -> FieldTable {
    let time = payload["occurred_at"]
        .as_str()
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        .map(|t| {
            t.with_timezone(&Utc)
                .to_rfc3339_opts(SecondsFormat::AutoSi, true)
        });
    let values = [
        Some(SPEC_VERSION.to_string()),
        Some(event_id.to_string()),
        Some(events.source.clone()),
        Some(event_type.to_string()),
        subject.map(|s| s.to_string()),
        time,
        Some(events.schema_url(event_type)),
        payload["space"].as_str().map(str::to_string),
    ];
    let mut headers = FieldTable::default();
    for (name, value) in CE_HEADERS.iter().zip(values) {
        if let Some(v) = value {
            headers.insert((*name).into(), AMQPValue::LongString(v.into()));
        }
    }
    headers
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use uuid::Uuid;

    fn row(occurred_at: serde_json::Value) -> OutboxRow {
        OutboxRow {
            id: 1,
            event_id: Uuid::now_v7(),
            document_id: Uuid::now_v7(),
            document_version: 3,
            event_type: "document.approved".into(),
            routing_key: Some("document.approved".into()),
            payload: json!({"occurred_at": occurred_at, "space": "hr"}),
            traceparent: None,
            tracestate: None,
            attempts: 0,
            ticket: Uuid::nil(),
            projected: true,
        }
    }

    fn text(headers: &FieldTable, name: &str) -> Option<String> {
        match headers.inner().get(name) {
            Some(AMQPValue::LongString(s)) => Some(s.to_string()),
            Some(other) => panic!("{name} is not a long string: {other:?}"),
            None => None,
        }
    }

    #[test]
    fn every_attribute_comes_from_the_row_and_the_settings() {
        let r = row(json!("2026-11-29T10:10:06.398771+01:00"));
        let settings = EventSettings {
            source: "/kh".into(),
            public_base_url: "https://review.example/".into(),
        };
        let h = cloudevent_headers(&r, &settings);
        let id = r.event_id.to_string();
        let subject = r.document_id.to_string();
        let want = [
            ("ce-specversion", "1.0"),
            ("ce-id", id.as_str()),
            ("ce-source", "/kh"),
            ("ce-type", "document.approved"),
            ("ce-subject", subject.as_str()),
            ("ce-time", "2026-11-29T09:10:06.398771Z"),
            (
                "ce-dataschema",
                "https://review.example/schemas/events/document.approved.json",
            ),
            ("ce-khspace", "hr"),
        ];
        for (name, value) in want {
            assert_eq!(text(&h, name).as_deref(), Some(value), "{name}");
        }
        assert_eq!(h.inner().len(), want.len());
        assert_eq!(
            cloudevent_headers(&r, &settings),
            h,
            "the same row, the same headers"
        );
    }

    #[test]
    fn a_body_without_a_time_has_no_ce_time() {
        let h = cloudevent_headers(&row(json!(null)), &EventSettings::default());
        assert_eq!(text(&h, "ce-time"), None);
        assert_eq!(h.inner().len(), CE_HEADERS.len() - 1);
    }

    #[test]
    fn a_body_without_a_space_has_no_ce_khspace_and_a_service_event_neither() {
        let mut r = row(json!("2026-11-29T10:10:06Z"));
        r.payload = json!({"occurred_at": "2026-11-29T10:10:06Z"});
        let h = cloudevent_headers(&r, &EventSettings::default());
        assert_eq!(text(&h, SPACE_HEADER), None);
        let payload = json!({"occurred_at": "2026-11-29T10:10:06Z"});
        let service = service_headers(
            Uuid::now_v7(),
            "audit.checkpoint",
            &payload,
            &Default::default(),
        );
        assert_eq!(service.inner().len(), CE_HEADERS.len() - 2);
    }

    #[test]
    fn settings_are_checked_by_key() {
        let mut problems = Vec::new();
        let bad = EventSettings {
            source: " ".into(),
            public_base_url: "ftp://x".into(),
        };
        bad.check(&mut |k, _| problems.push(k));
        assert_eq!(problems, ["events.source", "events.public_base_url"]);
        let mut none = Vec::new();
        EventSettings::default().check(&mut |k, _| none.push(k));
        assert!(none.is_empty());
    }
}
