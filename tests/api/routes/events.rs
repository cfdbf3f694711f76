//! The events' own description at the root, open to anyone: `/asyncapi.json` (the document
//! the message checks of `support::events` use, and the one checked in as
//! docs/asyncapi.json, which `make lint` validates) and `/schemas/events/{type}.json` (the
//! URL each message names in `ce-dataschema`); and the CloudEvents headers of a published
//! approval, value by value.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::Value;

use crate::support::app::spawn_app;
use crate::support::events::headers_json;
use crate::support::inspect::expect_error;
use kh_review::config::Settings;
use kh_review::outbox::{asyncapi, schemas};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_asyncapi_document_is_served_to_anyone_and_describes_every_message() {
    let app = spawn_app().await;
    let r = app
        .client
        .get(app.url("/asyncapi.json"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let content_type = r.headers()["content-type"].to_str().unwrap().to_string();
    assert!(
        content_type.starts_with("application/json"),
        "{content_type}"
    );
    let served: Value = r.json().await.unwrap();
    let (exchange, events) = (&app.settings.amqp.exchange, &app.settings.events);
    assert_eq!(served, asyncapi::document(exchange, events));
    assert_eq!(served["asyncapi"], "3.0.0");
    let messages = served["components"]["messages"].as_object().unwrap();
    let mut names: Vec<&str> = messages
        .values()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    names.sort();
    let mut types = schemas::event_types();
    types.sort();
    assert_eq!(names, types, "a message for every type");
    let approved = &served["channels"]["document_approved"]["bindings"]["amqp"];
    assert_eq!(approved["exchange"]["name"], exchange.as_str());
    assert_eq!(approved["exchange"]["type"], "topic");
    assert_eq!(approved["exchange"]["durable"], true);
    let replay = &served["channels"]["replay"]["bindings"]["amqp"];
    assert_eq!(replay["is"], "queue", "a replay goes to one queue");
    let headers = &messages["document_approved"]["headers"]["properties"];
    for h in [
        "ce-id",
        "ce-time",
        "ce-khspace",
        "traceparent",
        "tracestate",
        "kh-replay-id",
    ] {
        assert!(headers.get(h).is_some(), "{h} is described");
    }
    app.finish().await;
}

/// docs/asyncapi.json, which `make lint` validates offline with the AsyncAPI parser, is the
/// document the default configuration serves.
#[test]
fn the_checked_in_asyncapi_document_is_the_one_served_by_default() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config");
    let s = Settings::load_with(&dir, &[("environment", "development")]).unwrap();
    let served = asyncapi::document(&s.amqp.exchange, &s.events);
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/asyncapi.json");
    let file: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert!(
        file == served,
        "docs/asyncapi.json is stale: write it again with `APP__ENVIRONMENT=development cargo run -q -- asyncapi > docs/asyncapi.json`"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_type_s_schema_is_served_at_its_dataschema_url_and_others_are_404() {
    let app = spawn_app().await;
    for ty in schemas::event_types() {
        let r = app
            .client
            .get(app.url(&format!("/schemas/events/{ty}.json")))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK, "{ty}");
        let schema: Value = r.json().await.unwrap();
        let url = app.settings.events.schema_url(ty);
        assert_eq!(schema["$id"], url.as_str());
        assert_eq!(schema, schemas::served_schema(ty, &url).unwrap());
        assert_eq!(schema["properties"]["event_type"]["const"], ty);
    }
    for unknown in ["document.created", "nope", "document.approved.json"] {
        let url = app.url(&format!("/schemas/events/{unknown}.json"));
        let r = app.client.get(url).send().await.unwrap();
        expect_error(r, StatusCode::NOT_FOUND, "NOT_FOUND").await;
    }
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_published_event_carries_its_cloudevent_headers() {
    let app = spawn_app().await;
    let (doc, _) = app.approved_review().await;
    app.outbox_drained(Duration::from_secs(10)).await;
    let events = app.take_events().await;
    let (body, props) = events.last().unwrap();
    assert_eq!(body["event_type"], "document.approved");
    let headers = headers_json(props.headers().as_ref());
    let want = serde_json::json!({
        "ce-specversion": "1.0",
        "ce-id": body["event_id"],
        "ce-source": "/kh-review",
        "ce-type": "document.approved",
        "ce-subject": doc,
        "ce-time": headers["ce-time"],
        "ce-dataschema": "http://127.0.0.1:8080/schemas/events/document.approved.json",
        "ce-khspace": "default",
        // The W3C trace context travels beside them (faults/traces.rs follows it).
        "traceparent": headers["traceparent"],
    });
    assert_eq!(headers, want);
    let traceparent = headers["traceparent"].as_str().unwrap_or_default();
    let parts: Vec<usize> = traceparent.split('-').map(str::len).collect();
    assert_eq!(parts, [2, 32, 16, 2], "{traceparent}");
    let time = chrono::DateTime::parse_from_rfc3339(headers["ce-time"].as_str().unwrap());
    let occurred = chrono::DateTime::parse_from_rfc3339(body["occurred_at"].as_str().unwrap());
    assert_eq!(time.unwrap(), occurred.unwrap());
    assert!(headers["ce-time"].as_str().unwrap().ends_with('Z'), "UTC");
    app.finish().await;
}
