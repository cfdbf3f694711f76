//! What an `Idempotency-Key` repeats: the first reply itself, byte for byte, for a create, a
//! submit and a decision (a success is recorded as its typed result and rendered again as it
//! was the first time); and a reply recorded as it was sent (a success recorded by an older
//! release) repeated as it was stored.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::app::{spawn_app, TestApp};

/// Sends the same keyed POST twice; returns both replies' status, `Idempotent-Replayed` header and bytes.
async fn twice(
    app: &TestApp,
    path: &str,
    token: &str,
    key: &str,
    body: &Value,
) -> [(StatusCode, bool, Vec<u8>); 2] {
    let send = || async {
        let res = app
            .client
            .post(app.url(path))
            .bearer_auth(token)
            .header("idempotency-key", key)
            .json(body)
            .send()
            .await
            .unwrap();
        let repeated = res.headers().get("idempotent-replayed").is_some();
        (res.status(), repeated, res.bytes().await.unwrap().to_vec())
    };
    let first = send().await;
    let second = send().await;
    [first, second]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeat_is_the_first_reply_byte_for_byte() {
    let app = spawn_app().await;
    let body = json!({"title": "Runbook", "body": "Restart the indexer.\nThen check it."});
    let [first, again] = twice(&app, "/api/v1/documents", &app.author(), "c-1", &body).await;
    assert_eq!((first.0, first.1), (StatusCode::CREATED, false));
    assert_eq!((again.0, again.1), (StatusCode::CREATED, true));
    assert_eq!(
        String::from_utf8_lossy(&again.2),
        String::from_utf8_lossy(&first.2),
        "a create's repeat"
    );
    let doc: Value = serde_json::from_slice(&first.2).unwrap();
    let id = doc["id"].as_str().unwrap();

    let submit = format!("/api/v1/documents/{id}/submit");
    let [first, again] = twice(&app, &submit, &app.author(), "s-1", &json!({})).await;
    assert_eq!(
        (first.0, again.0, again.1),
        (StatusCode::CREATED, StatusCode::CREATED, true)
    );
    assert_eq!(again.2, first.2, "a submit's repeat");
    let review: Value = serde_json::from_slice(&first.2).unwrap();
    let review_id = review["review"]["id"].as_str().unwrap();

    let approve = format!("/api/v1/reviews/{review_id}/approve");
    let comment = json!({"comment": "Looks right."});
    let [first, again] = twice(&app, &approve, &app.reviewer(), "a-1", &comment).await;
    assert_eq!(
        (first.0, again.0, again.1),
        (StatusCode::OK, StatusCode::OK, true)
    );
    assert_eq!(again.2, first.2, "a decision's repeat");
    let decided: Value = serde_json::from_slice(&first.2).unwrap();
    assert_eq!(decided["document"]["status"], "APPROVED");
    assert_eq!(decided["review"]["comment"], "Looks right.");
    assert_eq!(
        app.count("SELECT count(*) FROM audit_log").await,
        3,
        "create, submit and approve ran once each"
    );
    app.finish().await;
}

/// A success an older release recorded is its reply as it was sent (state DONE): a retry
/// still gets exactly that reply, with its status.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_recorded_as_sent_is_repeated_as_it_was() {
    let app = spawn_app().await;
    let (_, review_id) = app.pending_review().await;
    let path = format!("/api/v1/reviews/{review_id}/approve");
    let body = json!({});
    let [first, _] = twice(&app, &path, &app.reviewer(), "old-1", &body).await;
    assert_eq!(first.0, StatusCode::OK);
    let sent = json!({"document": {"id": "as-an-older-release-sent-it"}, "review": {}});
    let rows = sqlx::query(
        "UPDATE idempotency_keys SET state = 'DONE', result = NULL, response_status = 200, \
         response_body = $1 WHERE key = 'old-1'",
    )
    .bind(&sent)
    .execute(&app.pg)
    .await
    .unwrap()
    .rows_affected();
    assert_eq!(rows, 1, "the approval's record");
    let [repeated, _] = twice(&app, &path, &app.reviewer(), "old-1", &body).await;
    assert_eq!((repeated.0, repeated.1), (StatusCode::OK, true));
    assert_eq!(serde_json::from_slice::<Value>(&repeated.2).unwrap(), sent);
    app.finish().await;
}
