//! The JSON Schemas of the published events, from their one source,
//! `docs/schemas/events.json` (compiled in): the envelope every document event has, the
//! envelope of the service's own events (about no document: `audit.checkpoint`), and each
//! type's `data`. Each type's schema (the envelope with its `event_type` and its `data`) is served
//! at its `ce-dataschema` URL and is the payload of its message in the AsyncAPI document.
//! Never edit a schema anywhere else: the endpoint, the AsyncAPI document, docs/events.md
//! and the tests all read this one.

use std::sync::OnceLock;

use serde_json::{json, Map, Value};

/// The schema source, as written.
pub const SOURCE: &str = include_str!("../../docs/schemas/events.json");

/// The JSON Schema dialect of the served schemas.
const DIALECT: &str = "https://json-schema.org/draft/2020-12/schema";

fn source() -> &'static Value {
    static PARSED: OnceLock<Value> = OnceLock::new();
    PARSED.get_or_init(|| serde_json::from_str(SOURCE).expect("docs/schemas/events.json is JSON"))
}

/// The envelope's schema (`data` any object).
pub fn envelope() -> &'static Value {
    &source()["envelope"]
}

/// The envelope of the service's own events (no document, no review, no version).
pub fn service_envelope() -> &'static Value {
    &source()["service_envelope"]
}

/// The types an envelope lists.
fn listed(envelope: &'static Value) -> impl Iterator<Item = &'static str> {
    let listed = envelope["properties"]["event_type"]["enum"].as_array();
    listed.into_iter().flatten().filter_map(Value::as_str)
}

/// Whether `event_type` is one of the service's own events (about no document).
pub fn is_service_event(event_type: &str) -> bool {
    listed(service_envelope()).any(|t| t == event_type)
}

/// Every event type with a schema: the document events in the envelope's order, then the
/// service's own.
pub fn event_types() -> Vec<&'static str> {
    listed(envelope())
        .chain(listed(service_envelope()))
        .filter(|t| data_schema(t).is_some())
        .collect()
}

/// The `data` schema of `event_type`; None for a type without a schema.
pub fn data_schema(event_type: &str) -> Option<&'static Value> {
    source()["types"].get(event_type).map(|t| &t["data"])
}

/// One line on what an event of `event_type` says.
pub fn summary(event_type: &str) -> Option<&'static str> {
    source()["types"].get(event_type)?["summary"].as_str()
}

/// The schema of a whole message of `event_type`, without `$schema` and `$id` (as the
/// AsyncAPI document embeds it): the envelope, `event_type` fixed to the type, its `data`.
pub fn payload_schema(event_type: &str) -> Option<Value> {
    let data = data_schema(event_type)?.clone();
    let mut schema = if is_service_event(event_type) {
        service_envelope().clone()
    } else {
        envelope().clone()
    };
    let props = schema["properties"].as_object_mut()?;
    let mut ty = Map::new();
    ty.insert("const".into(), json!(event_type));
    if let Some(d) = props["event_type"].get("description") {
        ty.insert("description".into(), d.clone());
    }
    props.insert("event_type".into(), Value::Object(ty));
    props.insert("data".into(), data);
    let object = schema.as_object_mut()?;
    let mut out = Map::new();
    out.insert("title".into(), json!(event_type));
    if let Some(s) = summary(event_type) {
        out.insert("description".into(), json!(s));
    }
    out.extend(std::mem::take(object));
    Some(Value::Object(out))
}

/// The served schema of `event_type` (`/schemas/events/{type}.json`): its payload schema
/// with the dialect and its own URL as `$id`.
pub fn served_schema(event_type: &str, id: &str) -> Option<Value> {
    let payload = payload_schema(event_type)?;
    let mut out = Map::new();
    out.insert("$schema".into(), json!(DIALECT));
    out.insert("$id".into(), json!(id));
    out.extend(payload.as_object()?.clone());
    Some(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::EventType;

    #[test]
    fn every_published_type_of_the_table_and_the_snapshot_have_a_schema() {
        let mut want: Vec<&str> = EventType::published().map(EventType::as_str).collect();
        want.push("document.snapshot");
        let mut listed: Vec<&str> = listed(envelope()).collect();
        assert_eq!(listed, want, "the envelope lists every type, in this order");
        let service: Vec<&str> = super::listed(service_envelope()).collect();
        assert_eq!(service, ["audit.checkpoint", "webhook.endpoint_disabled"]);
        listed.extend(service);
        let mut have = event_types();
        have.sort();
        listed.sort();
        assert_eq!(have, listed, "a data schema for every type");
        for unpublished in EventType::ALL.iter().filter(|t| !t.is_published()) {
            assert!(
                data_schema(unpublished.as_str()).is_none(),
                "{unpublished:?}"
            );
        }
    }

    #[test]
    fn a_payload_schema_is_the_envelope_with_its_type_and_data() {
        let schema = payload_schema("document.snapshot").unwrap();
        assert_eq!(
            schema["properties"]["event_type"]["const"],
            "document.snapshot"
        );
        let data = &schema["properties"]["data"];
        assert_eq!(
            data["required"],
            json!(["title", "body", "published_version"])
        );
        assert_eq!(schema["required"], envelope()["required"]);
        assert_eq!(schema["additionalProperties"], false);
        let served = served_schema("document.snapshot", "http://x/s.json").unwrap();
        assert_eq!(served["$id"], "http://x/s.json");
        assert_eq!(served["$schema"], DIALECT);
        assert!(payload_schema("document.created").is_none());
    }

    #[test]
    fn a_service_event_has_the_service_envelope() {
        assert!(is_service_event("audit.checkpoint"));
        assert!(!is_service_event("document.approved"));
        let schema = payload_schema("audit.checkpoint").unwrap();
        let props = schema["properties"].as_object().unwrap();
        assert!(props.get("document_id").is_none(), "no document");
        assert_eq!(props["event_type"]["const"], "audit.checkpoint");
        assert_eq!(schema["required"], service_envelope()["required"]);
        assert_eq!(event_types().last(), Some(&"webhook.endpoint_disabled"));
    }
}
