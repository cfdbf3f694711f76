//! The replay API's answers: 409 `REPLAY_RUNNING` for a second replay to a queue, cancel
//! (which stops it within a batch and frees the queue), 422 for a queue that does not
//! exist or a request out of its range (nothing written), 422 `REPLAY_TARGET_NOT_ALLOWED`
//! for a queue `replay.allowed_target_queues` does not allow, 403 for non-admins, 404.

use std::time::Duration;

use kh_review::web::auth::Role;
use reqwest::StatusCode;
use serde_json::json;

use crate::support::app::{spawn_app, spawn_app_with, AppOptions};
use crate::support::inspect::{expect_error, poll_until};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_replay_per_queue_and_a_cancel_stops_it_within_a_batch() {
    let app = spawn_app_with(AppOptions {
        // One event a batch, four a second: a replay of a few events runs for seconds.
        configure: Some(Box::new(|s| s.replay.max_per_sec = 4)),
        ..Default::default()
    })
    .await;
    for _ in 0..4 {
        app.approved_review().await;
    }
    app.outbox_drained(Duration::from_secs(10)).await;
    let queue = app.consumer_queue("slow").await;
    let body = json!({"mode": "history", "target_queue": queue, "types": ["document.approved", "document.submitted"]});
    let id = app.started_replay(body.clone()).await;
    let r = app
        .post("/api/v1/admin/replays", &app.admin(), body.clone())
        .await;
    let refused = expect_error(r, StatusCode::CONFLICT, "REPLAY_RUNNING").await;
    assert!(
        refused["message"].as_str().unwrap().contains(&queue),
        "{refused}"
    );
    let snapshot = json!({"mode": "snapshot", "target_queue": queue});
    let r = app
        .post("/api/v1/admin/replays", &app.admin(), snapshot)
        .await;
    expect_error(r, StatusCode::CONFLICT, "REPLAY_RUNNING").await;

    let path = format!("/api/v1/admin/replays/{id}");
    let r = app.delete(&path, &app.admin()).await;
    assert_eq!(r.status(), StatusCode::OK);
    let cancelled: serde_json::Value = r.json().await.unwrap();
    assert_eq!(cancelled["state"], "cancelled", "{cancelled}");
    assert!(cancelled["finished_at"].is_string());
    let sent = cancelled["sent"].as_i64().unwrap();
    assert!(sent < 8, "cancelled before the end: {cancelled}");
    // Within a batch: at most the one in flight gets out after the cancel, though the
    // replay would have sent every remaining event in the time watched here.
    let got = std::cell::Cell::new(0);
    let more = poll_until(Duration::from_millis(2500), || async {
        got.set(got.get() + app.drain(&queue).await.len() as i64);
        (got.get() > sent + 1).then_some(())
    });
    assert!(
        more.await.is_none(),
        "{} messages after {sent} sent",
        got.get()
    );
    let again = app.delete(&path, &app.admin()).await;
    assert_eq!(again.status(), StatusCode::OK, "a cancel is answered again");
    let state = app.replay_state(&id).await;
    assert_eq!(
        (state["state"].clone(), state["sent"].clone()),
        (json!("cancelled"), json!(sent))
    );
    // The queue is free for the next replay.
    let next = app.started_replay(body).await;
    let done = app
        .replay_ends(&next, "done", Duration::from_secs(20))
        .await;
    assert_eq!(done["sent"], 8, "{done}");
    let r = app
        .delete(&format!("/api/v1/admin/replays/{next}"), &app.admin())
        .await;
    expect_error(r, StatusCode::CONFLICT, "INVALID_STATE").await;
    let list = app.get("/api/v1/admin/replays", &app.admin()).await;
    let list: serde_json::Value = list.json().await.unwrap();
    assert_eq!(list["items"][0]["id"], next.as_str(), "{list}");
    app.delete_queue(&queue).await;
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_queue_bad_input_and_non_admins_are_refused_and_write_nothing() {
    let app = spawn_app().await;
    let missing = format!("{}.nobody-declared-this", app.shared.exchange);
    let (status, body) = app
        .ask_replay(json!({"mode": "history", "target_queue": missing}))
        .await;
    assert_eq!(
        (status, body["code"].clone()),
        (StatusCode::UNPROCESSABLE_ENTITY, json!("VALIDATION_FAILED")),
        "{body}"
    );
    assert!(
        body["message"].as_str().unwrap().contains("does not exist"),
        "{body}"
    );
    let queue = app.consumer_queue("api").await;
    let bad = [
        json!({"mode": "everything", "target_queue": queue}),
        json!({"mode": "history"}),
        json!({"mode": "history", "target_queue": ""}),
        json!({"mode": "history", "target_queue": queue, "types": ["document.created"]}),
        json!({"mode": "history", "target_queue": queue, "types": []}),
        json!({"mode": "history", "target_queue": queue, "from": "2026-12-02T00:00:00Z", "to": "2026-12-01T00:00:00Z"}),
        json!({"mode": "snapshot", "target_queue": queue, "types": ["document.approved"]}),
        json!({"mode": "history", "target_queue": queue, "document_ids": ["not-a-uuid"]}),
        json!({"mode": "history", "target_queue": queue, "extra": 1}),
    ];
    for b in bad {
        let (status, body) = app.ask_replay(b.clone()).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{b} -> {body}");
        assert_eq!(body["code"], "VALIDATION_FAILED", "{b} -> {body}");
    }
    let reviewer = app.token("bob", &[Role::Reviewer, Role::Author]);
    let ok = json!({"mode": "snapshot", "target_queue": queue});
    let r = app.post("/api/v1/admin/replays", &reviewer, ok).await;
    expect_error(r, StatusCode::FORBIDDEN, "FORBIDDEN").await;
    let r = app.get("/api/v1/admin/replays", &reviewer).await;
    expect_error(r, StatusCode::FORBIDDEN, "FORBIDDEN").await;
    assert_eq!(
        app.count("SELECT count(*) FROM replays").await,
        0,
        "nothing written"
    );
    let unknown = format!("/api/v1/admin/replays/{}", uuid::Uuid::now_v7());
    expect_error(
        app.get(&unknown, &app.admin()).await,
        StatusCode::NOT_FOUND,
        "NOT_FOUND",
    )
    .await;
    expect_error(
        app.delete(&unknown, &app.admin()).await,
        StatusCode::NOT_FOUND,
        "NOT_FOUND",
    )
    .await;
    let r = app
        .get("/api/v1/admin/replays/not-an-id", &app.admin())
        .await;
    expect_error(r, StatusCode::NOT_FOUND, "NOT_FOUND").await;
    app.delete_queue(&queue).await;
    app.finish().await;
}

/// Another application's queue on the same vhost: it exists, and its name is outside `kh.*`.
async fn foreign_queue(app: &crate::support::app::TestApp) -> String {
    let name = format!("billing.{}", app.shared.exchange);
    app.declare_queue(name).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_to_an_existing_queue_not_allowed_is_refused_and_sends_nothing() {
    let app = spawn_app().await;
    app.approved_review().await;
    app.outbox_drained(Duration::from_secs(10)).await;
    let foreign = foreign_queue(&app).await;
    for mode in ["history", "snapshot"] {
        let (status, body) = app
            .ask_replay(json!({"mode": mode, "target_queue": foreign}))
            .await;
        assert_eq!(
            (status, body["code"].clone()),
            (
                StatusCode::UNPROCESSABLE_ENTITY,
                json!("REPLAY_TARGET_NOT_ALLOWED")
            ),
            "{body}"
        );
        assert!(
            body["message"].as_str().unwrap().contains(&foreign),
            "{body}"
        );
    }
    assert_eq!(
        app.count("SELECT count(*) FROM replays").await,
        0,
        "nothing written"
    );
    // A queue the default allows (kh.*) still gets its replay.
    let queue = app.consumer_queue("allowed").await;
    let id = app
        .started_replay(json!({"mode": "snapshot", "target_queue": queue}))
        .await;
    let done = app.replay_ends(&id, "done", Duration::from_secs(20)).await;
    assert_eq!(done["sent"], 1, "{done}");
    assert_eq!(app.drain(&queue).await.len(), 1);
    assert!(
        app.drain(&foreign).await.is_empty(),
        "nothing reached the refused queue"
    );
    app.delete_queue(&foreign).await;
    app.delete_queue(&queue).await;
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_allowed_target_queues_setting_replaces_the_default() {
    let app = spawn_app_with(AppOptions {
        configure: Some(Box::new(|s| {
            s.replay.allowed_target_queues = vec![format!("billing.{}", s.amqp.exchange)]
        })),
        ..Default::default()
    })
    .await;
    app.approved_review().await;
    app.outbox_drained(Duration::from_secs(10)).await;
    let ours = app.consumer_queue("ours").await;
    let (status, body) = app
        .ask_replay(json!({"mode": "snapshot", "target_queue": ours}))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["code"], "REPLAY_TARGET_NOT_ALLOWED", "{body}");
    let named = foreign_queue(&app).await;
    let id = app
        .started_replay(json!({"mode": "snapshot", "target_queue": named}))
        .await;
    app.replay_ends(&id, "done", Duration::from_secs(20)).await;
    assert_eq!(app.drain(&named).await.len(), 1);
    assert!(app.drain(&ours).await.is_empty());
    app.delete_queue(&named).await;
    app.delete_queue(&ours).await;
    app.finish().await;
}

/// The archive queue (`amqp.bind_queue`) is the record of what was published: never a
/// replay's target, though its name matches the allowed patterns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_archive_queue_is_never_a_replay_target() {
    let app = spawn_app_with(AppOptions {
        configure: Some(Box::new(|s| {
            s.amqp.bind_queue = format!("{}.archive", s.amqp.exchange)
        })),
        ..Default::default()
    })
    .await;
    let archive = app.settings.amqp.bind_queue.clone();
    assert!(
        archive.starts_with("kh."),
        "{archive} is in the default kh.*"
    );
    app.approved_review().await;
    app.outbox_drained(Duration::from_secs(10)).await;
    let archived = app.drain(&archive).await.len();
    let (status, body) = app
        .ask_replay(json!({"mode": "snapshot", "target_queue": archive}))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["code"], "REPLAY_TARGET_NOT_ALLOWED", "{body}");
    assert_eq!(app.count("SELECT count(*) FROM replays").await, 0);
    assert_eq!(archived, 2, "the submit and the approval, archived once");
    app.delete_queue(&archive).await;
    app.finish().await;
}
