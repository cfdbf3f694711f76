//! The event schemas of `docs/events.md` are those of their one source,
//! `docs/schemas/events.json` (which the service compiles in, serves and describes in
//! `/asyncapi.json`): the page's envelope block and each type's `data` row are read from
//! the page and compared with the source, so the page cannot drift from the events. The
//! consumer tests check the events the service published against the source's schemas
//! ([`as_documented`]), besides the check every read message gets (`support::events`).
//! And the table of event types (`domain::events`) is the source's and the page's: a
//! type added to it without its schema, or without its routing key on the page, fails here.

use serde_json::Value;

use kh_review::domain::replay::SNAPSHOT_EVENT_TYPE;
use kh_review::domain::EventType;
use kh_review::outbox::schemas;

fn page() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/events.md");
    std::fs::read_to_string(path).unwrap()
}

/// The envelope's schema as the page shows it: the first JSON block of its "Schema" section.
fn envelope_on_page() -> Value {
    let page = page();
    let from = page
        .find("## Schema")
        .expect("docs/events.md has a Schema section");
    let start = from + page[from..].find("```json\n").unwrap() + "```json\n".len();
    let end = start + page[start..].find("```").unwrap();
    serde_json::from_str(&page[start..end]).expect("the envelope's schema is JSON")
}

/// The service events' envelope as the page shows it: the JSON block of its "Service
/// events" section.
fn service_envelope_on_page() -> Value {
    let page = page();
    let from = page
        .find("### Service events")
        .expect("docs/events.md has a Service events section");
    let start = from + page[from..].find("```json\n").unwrap() + "```json\n".len();
    let end = start + page[start..].find("```").unwrap();
    serde_json::from_str(&page[start..end]).expect("the service envelope's schema is JSON")
}

/// The `data` schema of `event_type` as the page shows it: its row of the page's table.
fn data_on_page(event_type: &str) -> Value {
    let page = page();
    let row = format!("| `{event_type}` | `");
    let line = page.lines().find(|l| l.starts_with(&row));
    let line = line.unwrap_or_else(|| panic!("docs/events.md has no data row for {event_type}"));
    let json = line[row.len()..]
        .trim_end()
        .trim_end_matches('|')
        .trim_end();
    serde_json::from_str(json.trim_end_matches('`'))
        .unwrap_or_else(|e| panic!("the data schema of {event_type} is not JSON: {e}"))
}

/// Fails unless `event` matches the schema of its type in the source (the envelope with
/// that type's `data`), checked by a JSON Schema validator, formats included.
pub fn as_documented(event: &Value) {
    let ty = event["event_type"].as_str().unwrap_or_default();
    let schema = schemas::payload_schema(ty);
    let schema = schema.unwrap_or_else(|| panic!("no schema for the type of {event}"));
    let validator = jsonschema::options()
        .should_validate_formats(true)
        .build(&schema)
        .unwrap();
    let errors: Vec<String> = validator
        .iter_errors(event)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{ty}: {errors:?}\n{event}");
}

#[test]
fn the_page_shows_the_schemas_of_the_source() {
    assert_eq!(
        envelope_on_page(),
        *schemas::envelope(),
        "the envelope block of docs/events.md is docs/schemas/events.json's"
    );
    assert_eq!(
        service_envelope_on_page(),
        *schemas::service_envelope(),
        "the service envelope block of docs/events.md is docs/schemas/events.json's"
    );
    for ty in schemas::event_types() {
        assert_eq!(
            data_on_page(ty),
            *schemas::data_schema(ty).unwrap(),
            "the data row of {ty} in docs/events.md is docs/schemas/events.json's"
        );
    }
}

/// The wire names an envelope of the source lists.
fn listed(envelope: &Value) -> Vec<&str> {
    let listed = envelope["properties"]["event_type"]["enum"].as_array();
    listed
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

#[test]
fn every_type_of_the_table_has_its_schema_and_its_routing_key_on_the_page() {
    let published: Vec<&str> = EventType::published().map(EventType::as_str).collect();
    let mut enveloped = listed(schemas::envelope());
    assert_eq!(
        enveloped.pop(),
        Some(SNAPSHOT_EVENT_TYPE),
        "the envelope of docs/schemas/events.json lists document.snapshot last"
    );
    assert_eq!(
        enveloped, published,
        "the envelope of docs/schemas/events.json lists the published types of the table \
         (domain::events), in its order"
    );
    for ty in EventType::ALL {
        let data = schemas::data_schema(ty.as_str());
        assert_eq!(
            data.is_some(),
            ty.is_published(),
            "docs/schemas/events.json has a data schema for {ty:?} if and only if it is published"
        );
        let Some(data) = data else { continue };
        let mut members: Vec<&str> = data["properties"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let mut fields = ty.data_fields().to_vec();
        members.sort();
        fields.sort();
        assert_eq!(
            members, fields,
            "the data of {ty:?}: the table's fields are the schema's"
        );
    }
    let page = page();
    let keys = page.lines().find(|l| l.starts_with("| routing keys |"));
    let keys = keys.expect("docs/events.md has a routing keys row");
    let service = listed(schemas::service_envelope());
    for ty in published
        .iter()
        .chain(&service)
        .chain([&SNAPSHOT_EVENT_TYPE])
    {
        assert!(
            keys.contains(&format!("`{ty}`")),
            "the routing keys row of docs/events.md names {ty}"
        );
    }
}

#[test]
fn the_source_refuses_what_the_page_says_is_wrong() {
    let event = serde_json::json!({
        "event_id": "01a22691-9b41-71d5-9d4f-c91a4368d22a", "event_type": "document.approved",
        "occurred_at": "2026-11-29T09:10:06.398771Z", "document_id": "01a22691-9a62-7610-835c-a0977ab5a7bc",
        "space": "default", "review_id": "01a22691-9ad2-728e-b933-b1a469e2c973", "document_version": 3, "actor_id": "bob",
        "data": {"title": "Runbook", "comment": null, "replaced_version": null}
    });
    as_documented(&event);
    let mut wrong = Vec::new();
    for (pointer, value) in [
        ("/data/extra", serde_json::json!(1)),
        ("/document_version", serde_json::json!(0)),
        ("/event_id", serde_json::json!("not-a-uuid")),
        ("/occurred_at", serde_json::json!("yesterday")),
        ("/data/title", serde_json::json!(7)),
        ("/space", serde_json::json!("Bad Key")),
    ] {
        let mut bad = event.clone();
        let (parent, key) = pointer.rsplit_once('/').unwrap();
        bad.pointer_mut(if parent.is_empty() { "" } else { parent })
            .unwrap()
            .as_object_mut()
            .unwrap()
            .insert(key.to_string(), value);
        let refused = std::panic::catch_unwind(|| as_documented(&bad)).is_err();
        if !refused {
            wrong.push(pointer);
        }
    }
    let mut spaceless = event.clone();
    spaceless.as_object_mut().unwrap().remove("space");
    if std::panic::catch_unwind(|| as_documented(&spaceless)).is_ok() {
        wrong.push("no /space");
    }
    assert!(wrong.is_empty(), "accepted: {wrong:?}");
}
