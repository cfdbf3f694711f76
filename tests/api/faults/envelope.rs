//! The CloudEvents headers of a message are rebuilt from its outbox row on every try, so
//! an event parked (refused by the broker until an admin retried it) goes out with the same
//! headers as one published at once: the same names, each value taken from the row (its
//! `ce-time` the time of the change, not of the retry).

use std::time::Duration;

use kh_review::web::auth::Role;
use reqwest::StatusCode;
use serde_json::{json, Value};

use super::parked::{
    act, assert_approval_held_back, parked_submission, route_everything, with_max_attempts, ADMIN,
};
use crate::support::app::{spawn_app_with, TestApp};
use crate::support::events::headers_json;

/// The headers the row's event must carry, from the row as PostgreSQL holds it.
async fn expected_headers(app: &TestApp, event_id: &str) -> Value {
    let (ty, doc, occurred, space): (String, String, String, String) = sqlx::query_as(
        "SELECT event_type, document_id::text, payload->>'occurred_at', payload->>'space' \
         FROM outbox WHERE event_id = $1::uuid",
    )
    .bind(event_id)
    .fetch_one(&app.pg)
    .await
    .unwrap();
    json!({
        "ce-specversion": "1.0",
        "ce-id": event_id,
        "ce-source": app.settings.events.source,
        "ce-type": ty,
        "ce-subject": doc,
        "ce-time": occurred,
        "ce-dataschema": app.settings.events.schema_url(&ty),
        "ce-khspace": space,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cloudevent_headers_survive_a_parking_and_an_admin_retry() {
    let app = spawn_app_with(with_max_attempts(2)).await;
    let (doc, id) = parked_submission(&app, 2).await;
    assert_approval_held_back(&app, &doc).await;
    let parked_at: chrono::DateTime<chrono::Utc> =
        sqlx::query_scalar("SELECT parked_at FROM outbox WHERE id = $1")
            .bind(id)
            .fetch_one(&app.pg)
            .await
            .unwrap();
    route_everything(&app).await;
    let r = act(&app, id, "retry", &app.token(ADMIN, &[Role::Admin])).await;
    assert_eq!(r.status(), StatusCode::OK);
    app.outbox_drained(Duration::from_secs(10)).await;
    let events = app.take_events().await;
    let types: Vec<&str> = events
        .iter()
        .map(|(e, _)| e["event_type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["document.submitted", "document.approved"]);
    let mut names = Vec::new();
    for (body, props) in &events {
        let headers = headers_json(props.headers().as_ref());
        let want = expected_headers(&app, body["event_id"].as_str().unwrap()).await;
        let (got_time, want_time) = (headers["ce-time"].as_str(), want["ce-time"].as_str());
        let instant = |t: Option<&str>| chrono::DateTime::parse_from_rfc3339(t.unwrap()).unwrap();
        assert_eq!(
            instant(got_time),
            instant(want_time),
            "{}",
            body["event_type"]
        );
        if body["event_type"] == "document.submitted" {
            let before = instant(got_time) < parked_at;
            assert!(before, "ce-time is the submit's, not the retry's");
        }
        let mut rest = headers.as_object().unwrap().clone();
        let mut wanted = want.as_object().unwrap().clone();
        rest.remove("ce-time");
        wanted.remove("ce-time");
        // The trace context goes with them (its span id is each attempt's PRODUCER span).
        let trace = rest.remove("traceparent");
        let trace_id =
            |t: &serde_json::Value| t.as_str().unwrap().split('-').nth(1).map(str::to_string);
        assert!(
            trace.as_ref().is_some_and(|t| trace_id(t).is_some()),
            "{}: {trace:?}",
            body["event_type"]
        );
        assert_eq!(rest, wanted, "{}", body["event_type"]);
        let mut keys: Vec<String> = headers.as_object().unwrap().keys().cloned().collect();
        keys.sort();
        names.push(keys);
    }
    assert_eq!(
        names[0], names[1],
        "the retried event has the headers of one sent at once"
    );
    app.finish().await;
}
