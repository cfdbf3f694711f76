//! The events of spaces: every event names its document's space in its body (`space`) and
//! its header (`ce-khspace`), live and replayed (a history replay gives a row stored without
//! a space its document's); a document never submitted publishes nothing (its comments and
//! archive move the projection and are audited); a replay's `spaces` filter sends those
//! spaces' events or snapshots only, and a malformed key is 422 with nothing written.
//! Every message read here is checked against `/asyncapi.json` (`support::events`).

use std::time::Duration;

use lapin::BasicProperties;
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::app::spawn_app;
use crate::support::app::{TestApp, AUTHOR, REVIEWER};
use crate::support::events::{conforming, headers_json};
use crate::support::inspect::expect_error;

/// The space `key`, with the test's author and reviewer as its author and reviewer: a
/// fixture written by SQL, as the spaces API would leave it.
async fn space(app: &TestApp, key: &str) {
    sqlx::query("INSERT INTO spaces (key, name) VALUES ($1, $1)")
        .bind(key)
        .execute(&app.pg)
        .await
        .unwrap();
    for (who, role) in [(AUTHOR, "author"), (REVIEWER, "reviewer")] {
        sqlx::query(
            "INSERT INTO space_members (space_id, subject, roles) VALUES ($1, $2, ARRAY[$3])",
        )
        .bind(key)
        .bind(format!("user:{who}"))
        .bind(role)
        .execute(&app.pg)
        .await
        .unwrap();
    }
}

/// A document of the author's in `space`, submitted and approved: its id.
async fn approved_in(app: &TestApp, space: &str) -> String {
    let body = json!({"title": format!("In {space}"), "body": "Words.", "space": space});
    let r = app.post("/api/v1/documents", &app.author(), body).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let doc: Value = r.json().await.unwrap();
    assert_eq!(doc["space"], space);
    let id = doc["id"].as_str().unwrap().to_string();
    let review = app.submitted(&id).await;
    let r = app.approve(&review, &app.reviewer()).await;
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap());
    id
}

/// The author's comment `body` on the document `id`.
async fn comment(app: &TestApp, id: uuid::Uuid, body: &str) -> reqwest::Response {
    let path = format!("/api/v1/documents/{id}/comments");
    app.post(&path, &app.author(), json!({"body": body})).await
}

/// The `ce-khspace` header of a message.
fn khspace(props: &BasicProperties) -> Value {
    headers_json(props.headers().as_ref())["ce-khspace"].clone()
}

/// Every message now on `queue`, each checked against `/asyncapi.json`.
async fn checked(app: &TestApp, queue: &str) -> Vec<(Value, BasicProperties)> {
    let messages = app.drain(queue).await;
    let to_bytes = |b: &Value| serde_json::to_vec(b).unwrap();
    let check = |m: &crate::event_replays::Message| {
        let body = conforming(&app.settings, &to_bytes(&m.body), &m.properties);
        (body, m.properties.clone())
    };
    messages.iter().map(check).collect()
}

/// Runs a replay of `body` (its target queue added) to a queue of the test's own until it
/// is done: the replay as it ended, and the messages it sent.
async fn replayed(
    app: &TestApp,
    name: &str,
    mut body: Value,
) -> (Value, Vec<(Value, BasicProperties)>) {
    let queue = app.consumer_queue(name).await;
    body["target_queue"] = json!(queue);
    let id = app.started_replay(body).await;
    let replay = app.replay_ends(&id, "done", Duration::from_secs(20)).await;
    let messages = checked(app, &queue).await;
    app.delete_queue(&queue).await;
    (replay, messages)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_names_its_document_s_space_in_its_body_and_its_header() {
    let app = spawn_app().await;
    space(&app, "hr").await;
    let hr = approved_in(&app, "hr").await;
    let (default, _) = app.approved_review().await;
    app.outbox_drained(Duration::from_secs(10)).await;
    let events = app.take_events().await;
    assert_eq!(events.len(), 4, "a submit and an approval each");
    for (body, props) in &events {
        let want = if body["document_id"] == hr.as_str() {
            "hr"
        } else {
            assert_eq!(body["document_id"], default.as_str());
            "default"
        };
        assert_eq!(body["space"], want, "{body}");
        assert_eq!(khspace(props), want, "{body}");
    }
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_document_never_submitted_publishes_nothing_until_its_first_submit() {
    let app = spawn_app().await;
    let draft = app.create_document("Private notes", "Not ready.").await.id;
    let gone = app.create_document("Abandoned", "Never mind.").await.id;
    assert_eq!(
        comment(&app, draft, "a secret").await.status(),
        StatusCode::CREATED
    );
    assert_eq!(
        comment(&app, gone, "dropping it").await.status(),
        StatusCode::CREATED
    );
    let path = format!("/api/v1/documents/{gone}/archive");
    let r = app.post(&path, &app.author(), json!({})).await;
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap());
    app.outbox_drained(Duration::from_secs(10)).await;
    assert_eq!(
        app.take_events().await.len(),
        0,
        "nothing reached a queue bound to #"
    );
    let projected = app.mongo_doc(&gone.to_string()).await.unwrap();
    assert_eq!(projected.get_str("status").unwrap(), "ARCHIVED");
    let rows = app
        .count(&format!(
            "SELECT count(*) FROM outbox WHERE document_id IN ('{draft}', '{gone}') \
             AND event_type IN ('document.commented', 'document.archived') \
             AND routing_key IS NULL AND published_at IS NULL AND done_at IS NOT NULL"
        ))
        .await;
    assert_eq!(rows, 3, "each written, projection only");
    let audited = app
        .count(&format!(
            "SELECT count(*) FROM audit_log WHERE document_id IN ('{draft}', '{gone}') \
             AND action IN ('comment', 'archive')"
        ))
        .await;
    assert_eq!(audited, 3, "each audited");
    // Submitted once, its comments are published as every document's.
    app.submitted(&draft.to_string()).await;
    assert_eq!(
        comment(&app, draft, "now public").await.status(),
        StatusCode::CREATED
    );
    app.outbox_drained(Duration::from_secs(10)).await;
    let events = app.take_events().await;
    let types: Vec<&str> = events
        .iter()
        .map(|(e, _)| e["event_type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["document.submitted", "document.commented"]);
    assert_eq!(events[1].0["data"]["body"], "now public");
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_history_replay_gives_a_row_stored_without_a_space_its_document_s() {
    let app = spawn_app().await;
    space(&app, "hr").await;
    let hr = approved_in(&app, "hr").await;
    // A private draft archived; an older release published such an archive.
    let draft = app.create_document("Private", "Words.").await.id;
    let r = app
        .post(
            &format!("/api/v1/documents/{draft}/archive"),
            &app.author(),
            json!({}),
        )
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    app.outbox_drained(Duration::from_secs(10)).await;
    let _ = app.take_events().await;
    // Rows as a release before spaces wrote them: no `space` in their bodies.
    sqlx::query("UPDATE outbox SET payload = payload - 'space' WHERE document_id = $1::uuid")
        .bind(&hr)
        .execute(&app.pg)
        .await
        .unwrap();
    sqlx::query(
        "UPDATE outbox SET routing_key = event_type, published_at = done_at \
         WHERE document_id = $1 AND event_type = 'document.archived'",
    )
    .bind(draft)
    .execute(&app.pg)
    .await
    .unwrap();
    let ids = json!([hr, draft]);
    let body = json!({"mode": "history", "document_ids": ids});
    let (replay, messages) = replayed(&app, "old-rows", body).await;
    assert_eq!(replay["total"], 2, "{replay}");
    let types: Vec<&str> = messages
        .iter()
        .map(|(e, _)| e["event_type"].as_str().unwrap())
        .collect();
    assert_eq!(
        types,
        ["document.submitted", "document.approved"],
        "never the draft's"
    );
    for (body, props) in &messages {
        assert_eq!(body["document_id"], hr.as_str());
        assert_eq!(body["space"], "hr", "{body}");
        assert_eq!(khspace(props), "hr");
    }
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_of_some_spaces_sends_theirs_alone_and_keeps_its_filter() {
    let app = spawn_app().await;
    for key in ["hr", "eng"] {
        space(&app, key).await;
    }
    let hr = approved_in(&app, "hr").await;
    approved_in(&app, "eng").await;
    app.approved_review().await;
    app.outbox_drained(Duration::from_secs(10)).await;
    let _ = app.take_events().await;
    let body = json!({"mode": "history", "spaces": ["hr"]});
    let (replay, history) = replayed(&app, "hr-history", body).await;
    assert_eq!(replay["filters"]["spaces"], json!(["hr"]), "{replay}");
    assert_eq!((replay["total"].as_i64(), history.len()), (Some(2), 2));
    let body = json!({"mode": "snapshot", "spaces": ["hr", "hr"]});
    let (replay, snapshots) = replayed(&app, "hr-snapshot", body).await;
    assert_eq!(replay["filters"]["spaces"], json!(["hr"]), "{replay}");
    assert_eq!(snapshots.len(), 1);
    assert_eq!(snapshots[0].0["event_type"], "document.snapshot");
    for (body, props) in history.iter().chain(&snapshots) {
        assert_eq!(body["document_id"], hr.as_str(), "{body}");
        assert_eq!(
            (&body["space"], khspace(props)),
            (&json!("hr"), json!("hr"))
        );
    }
    let stored = app
        .count("SELECT count(*) FROM replays WHERE spaces = ARRAY['hr']")
        .await;
    assert_eq!(
        stored, 2,
        "kept with the replay: a resumed one sends the same"
    );
    // A well-formed key no space has matches nothing.
    let body = json!({"mode": "snapshot", "spaces": ["nowhere"]});
    let (replay, none) = replayed(&app, "nowhere", body).await;
    assert_eq!((replay["total"].as_i64(), none.len()), (Some(0), 0));
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_space_key_is_refused_and_starts_no_replay() {
    let app = spawn_app().await;
    let queue = app.consumer_queue("refused").await;
    for spaces in [
        json!(["Bad Key"]),
        json!(["hr", ""]),
        json!([]),
        json!("hr"),
    ] {
        let body = json!({"mode": "history", "target_queue": queue, "spaces": spaces});
        let r = app.post("/api/v1/admin/replays", &app.admin(), body).await;
        let e = expect_error(r, StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED").await;
        let message = e["message"].as_str().unwrap_or_default();
        let named = message.contains("spaces") || !spaces.is_array();
        assert!(named, "{spaces}: {e}");
    }
    assert_eq!(app.count("SELECT count(*) FROM replays").await, 0);
    app.delete_queue(&queue).await;
    // The OpenAPI description says so, and shows the filter on a replay.
    let schemas = &app.public_json("/openapi.json").await["components"]["schemas"];
    let asked = &schemas["StartReplay"]["properties"]["spaces"];
    assert_eq!(
        asked["items"]["pattern"], "^[a-z0-9][a-z0-9-]{0,62}$",
        "{asked}"
    );
    assert!(schemas["ReplayFilters"]["properties"]["spaces"].is_object());
    app.finish().await;
}
