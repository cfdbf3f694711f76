//! The admin endpoints of the outbox refuse whoever is not an admin, unknown rows, rows
//! that are not parked and bad queries, each with its stable code, and change nothing then.

use std::time::Duration;

use kh_review::web::auth::Role;
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::faults::parked::{
    act, assert_approval_held_back, parked_list, parked_submission, with_max_attempts, ADMIN,
};
use crate::support::app::{spawn_app_with, TestApp};
use crate::support::inspect::{expect_error, wait_for};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_admins_act_on_parked_rows_and_bad_requests_change_nothing() {
    let app = spawn_app_with(with_max_attempts(1)).await;
    let (doc, id) = parked_submission(&app, 1).await;
    let admin = app.token(ADMIN, &[Role::Admin]);
    let reviewer = app.token("bob", &[Role::Reviewer, Role::Author]);
    for action in ["retry", "skip"] {
        let r = act(&app, id, action, &reviewer).await;
        expect_error(r, StatusCode::FORBIDDEN, "FORBIDDEN").await;
        let r = app
            .client
            .post(app.url(&format!("/api/v1/admin/outbox/{id}/{action}")))
            .send()
            .await
            .unwrap();
        expect_error(r, StatusCode::UNAUTHORIZED, "UNAUTHORIZED").await;
        for unknown in ["999999", "abc"] {
            let path = format!("/api/v1/admin/outbox/{unknown}/{action}");
            let r = app.post(&path, &admin, json!({})).await;
            expect_error(r, StatusCode::NOT_FOUND, "NOT_FOUND").await;
        }
        // The document's creation row was delivered long ago: not parked.
        let done: i64 = sqlx::query_scalar(
            "SELECT id FROM outbox WHERE document_id = $1::uuid AND event_type = 'document.created'",
        )
        .bind(&doc)
        .fetch_one(&app.pg)
        .await
        .unwrap();
        let r = act(&app, done, action, &admin).await;
        expect_error(r, StatusCode::CONFLICT, "INVALID_STATE").await;
    }
    let r = app
        .get("/api/v1/admin/outbox?state=parked", &reviewer)
        .await;
    expect_error(r, StatusCode::FORBIDDEN, "FORBIDDEN").await;
    for bad in [
        "state=stuck",
        "state=",
        "limit=0",
        "limit=101",
        "cursor=x",
        "cursor=-1",
    ] {
        let r = app
            .get(&format!("/api/v1/admin/outbox?{bad}"), &admin)
            .await;
        expect_error(r, StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED").await;
    }
    // The largest cursor the documented pattern allows (19 digits, above i64::MAX) is a
    // position after every row: an empty last page.
    let far = app
        .get(
            "/api/v1/admin/outbox?state=parked&cursor=9999999999999999999",
            &admin,
        )
        .await;
    assert_eq!(far.status(), StatusCode::OK);
    let far: serde_json::Value = far.json().await.unwrap();
    assert_eq!(
        (far["items"].as_array().map(Vec::len), &far["next_cursor"]),
        (Some(0), &serde_json::Value::Null),
        "{far}"
    );
    let items = parked_list(&app).await;
    assert_eq!(items.len(), 1);
    assert_eq!(
        (&items[0]["state"], &items[0]["attempts"]),
        (&json!("parked"), &json!(1))
    );
    let audited = app.count("SELECT count(*) FROM outbox_admin_actions").await;
    assert_eq!(audited, 0, "nothing was done, nothing audited");
    assert_approval_held_back(&app, &doc).await;
    assert_eq!(act(&app, id, "skip", &admin).await.status(), StatusCode::OK);
    app.wait_events(1, Duration::from_secs(10)).await;
    app.finish().await;
}

/// Sends a keyed admin action; returns its status, `Idempotent-Replayed` header and bytes.
async fn keyed(app: &TestApp, path: &str, key: &str, body: &str) -> (StatusCode, bool, Vec<u8>) {
    let admin = app.token(ADMIN, &[Role::Admin]);
    let r = app
        .client
        .post(app.url(path))
        .bearer_auth(admin)
        .header("idempotency-key", key)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let repeated = r.headers().get("idempotent-replayed").is_some();
    (r.status(), repeated, r.bytes().await.unwrap().to_vec())
}

/// "Every POST honours Idempotency-Key": an admin's retry repeated with its key is the first
/// reply again (the same status and bytes) and is done once; the key with another body is
/// refused; a refusal under a key is repeated as well.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_action_sent_again_with_its_key_is_repeated_and_done_once() {
    let app = spawn_app_with(with_max_attempts(1)).await;
    let (_doc, id) = parked_submission(&app, 1).await;
    let retry = format!("/api/v1/admin/outbox/{id}/retry");
    let first = keyed(&app, &retry, "retry-1", "").await;
    assert_eq!((first.0, first.1), (StatusCode::OK, false));
    let row: Value = serde_json::from_slice(&first.2).unwrap();
    assert_eq!((&row["id"], &row["state"]), (&json!(id), &json!("pending")));
    let again = keyed(&app, &retry, "retry-1", "").await;
    assert_eq!((again.0, again.1), (StatusCode::OK, true));
    assert_eq!(
        String::from_utf8_lossy(&again.2),
        String::from_utf8_lossy(&first.2),
        "the repeat is the first reply"
    );
    let other = keyed(&app, &retry, "retry-1", r#"{"x": 1}"#).await;
    assert_eq!(other.0, StatusCode::UNPROCESSABLE_ENTITY);
    let v: Value = serde_json::from_slice(&other.2).unwrap();
    assert_eq!(v["code"], "IDEMPOTENCY_KEY_REUSED");
    let retries = "SELECT count(*) FROM outbox_admin_actions WHERE action = 'retry'";
    assert_eq!(app.count(retries).await, 1, "the retry ran once");

    // A refusal is recorded too: a row that is not parked, then parked again, is still the
    // refusal to a retry of the same request.
    let not_parked = keyed(&app, "/api/v1/admin/outbox/999999/skip", "skip-1", "").await;
    assert_eq!(not_parked.0, StatusCode::NOT_FOUND);
    let repeated = keyed(&app, "/api/v1/admin/outbox/999999/skip", "skip-1", "").await;
    assert_eq!((repeated.0, repeated.1), (StatusCode::NOT_FOUND, true));
    assert_eq!(repeated.2, not_parked.2);

    // The retried row is refused again and parked again; skipping it lets the approval go.
    wait_for("the row parked again", Duration::from_secs(15), || async {
        let items = parked_list(&app).await;
        (items.len() == 1).then_some(())
    })
    .await;
    let admin = app.token(ADMIN, &[Role::Admin]);
    assert_eq!(act(&app, id, "skip", &admin).await.status(), StatusCode::OK);
    app.wait_events(1, Duration::from_secs(10)).await;
    app.finish().await;
}
