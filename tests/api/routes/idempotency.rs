//! Idempotency-Key: repeat, reuse with another request, in flight, scoping, takeover of a
//! key whose request never finished, and a client that disconnects mid-request.

use std::time::Duration;

use kh_review::web::auth::Role;
use kh_review::web::test_hooks::PAUSE_BEFORE_COMMIT_HEADER;
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::app::{keyed, spawn_app, AUTHOR, REVIEWER2};
use crate::support::inspect::{expect_error, wait_for};
use crate::support::views::Document;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_key_repeats_the_same_response_and_runs_once() {
    let app = spawn_app().await;
    let (_, review_id) = app.pending_review().await;
    let path = format!("/api/v1/reviews/{review_id}/approve");
    let first = keyed(
        &app,
        &path,
        &app.reviewer(),
        "click-1",
        json!({"comment": "ok"}),
    )
    .send()
    .await
    .unwrap();
    assert_eq!(first.status(), StatusCode::OK);
    assert!(first.headers().get("idempotent-replayed").is_none());
    let first_body: Value = first.json().await.unwrap();
    // Same request, keys in another order: the same fingerprint.
    let again = keyed(
        &app,
        &path,
        &app.reviewer(),
        "click-1",
        json!({"comment": "ok"}),
    )
    .send()
    .await
    .unwrap();
    assert_eq!(again.status(), StatusCode::OK);
    assert_eq!(again.headers().get("idempotent-replayed").unwrap(), "true");
    assert_eq!(again.json::<Value>().await.unwrap(), first_body);
    assert_eq!(
        app.count("SELECT count(*) FROM audit_log WHERE action = 'approve'")
            .await,
        1
    );
    // Another body with the same key: refused, nothing runs.
    let other = keyed(
        &app,
        &path,
        &app.reviewer(),
        "click-1",
        json!({"comment": "different"}),
    )
    .send()
    .await
    .unwrap();
    expect_error(
        other,
        StatusCode::UNPROCESSABLE_ENTITY,
        "IDEMPOTENCY_KEY_REUSED",
    )
    .await;
    // The same key from another caller is that caller's own key: it runs (and finds the
    // review decided), never repeating someone else's response.
    let carol = app.token(REVIEWER2, &[Role::Reviewer]);
    let r = keyed(&app, &path, &carol, "click-1", json!({"comment": "ok"}))
        .send()
        .await
        .unwrap();
    assert!(r.headers().get("idempotent-replayed").is_none());
    expect_error(r, StatusCode::CONFLICT, "INVALID_STATE").await;
    // A malformed key is refused.
    let r = keyed(&app, &path, &app.reviewer(), "has space", json!({}))
        .send()
        .await
        .unwrap();
    expect_error(r, StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED").await;
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_requests_with_one_key_at_once_run_once() {
    let app = spawn_app().await;
    let (_, review_id) = app.pending_review().await;
    let path = format!("/api/v1/reviews/{review_id}/approve");
    let slow = keyed(&app, &path, &app.reviewer(), "dbl", json!({}))
        .header(PAUSE_BEFORE_COMMIT_HEADER, "700")
        .send();
    let quick = async {
        wait_for(
            "the first request to hold the key",
            Duration::from_secs(5),
            || async {
                (app.count("SELECT count(*) FROM idempotency_keys").await == 1).then_some(())
            },
        )
        .await;
        keyed(&app, &path, &app.reviewer(), "dbl", json!({}))
            .send()
            .await
            .unwrap()
    };
    let (slow, quick) = tokio::join!(slow, quick);
    assert_eq!(slow.unwrap().status(), StatusCode::OK);
    let v = expect_error(quick, StatusCode::CONFLICT, "IDEMPOTENCY_IN_FLIGHT").await;
    assert!(v["message"].as_str().unwrap().contains("still running"));
    let repeat = keyed(&app, &path, &app.reviewer(), "dbl", json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(repeat.status(), StatusCode::OK);
    assert_eq!(repeat.headers().get("idempotent-replayed").unwrap(), "true");
    assert_eq!(
        app.count("SELECT count(*) FROM audit_log WHERE action = 'approve'")
            .await,
        1
    );
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_whose_request_never_finished_is_taken_over_and_expired_keys_are_free() {
    let app = spawn_app().await;
    let doc = app.create_document("t", "b").await;
    let id = doc.id;
    let path = format!("/api/v1/documents/{id}/submit");
    // A record left IN_FLIGHT by an instance that died, its in-flight time long past.
    sqlx::query(
        "INSERT INTO idempotency_keys (owner_id, key, fingerprint, state, locked_until, expires_at, claim) \
         VALUES ($1, 'orphan', 'whatever', 'IN_FLIGHT', now() - interval '1 minute', now() + interval '1 day', gen_random_uuid())",
    )
    .bind(AUTHOR)
    .execute(&app.pg)
    .await
    .unwrap();
    // Different fingerprint: still refused (the key is the caller's promise of one request).
    let r = keyed(&app, &path, &app.author(), "orphan", json!({}))
        .send()
        .await
        .unwrap();
    expect_error(
        r,
        StatusCode::UNPROCESSABLE_ENTITY,
        "IDEMPOTENCY_KEY_REUSED",
    )
    .await;
    let fp: String =
        sqlx::query_scalar("SELECT fingerprint FROM idempotency_keys WHERE key = 'orphan'")
            .fetch_one(&app.pg)
            .await
            .unwrap();
    assert_eq!(fp, "whatever");
    sqlx::query("UPDATE idempotency_keys SET fingerprint = $1 WHERE key = 'orphan'")
        .bind(kh_review_fingerprint(&path, b"{}"))
        .execute(&app.pg)
        .await
        .unwrap();
    let r = keyed(&app, &path, &app.author(), "orphan", json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.status(),
        StatusCode::CREATED,
        "the orphaned key is taken over and runs"
    );
    // An expired record does not block its key, even with another request.
    sqlx::query(
        "UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE key = 'orphan'",
    )
    .execute(&app.pg)
    .await
    .unwrap();
    let doc2 = app.create_document("t2", "b2").await;
    let path2 = format!("/api/v1/documents/{}/submit", doc2.id);
    let r = keyed(&app, &path2, &app.author(), "orphan", json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::CREATED);
    app.finish().await;
}

/// The fingerprint the service computes for a POST with a JSON body.
fn kh_review_fingerprint(path: &str, body: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    let canonical = serde_json::to_vec(&serde_json::from_slice::<Value>(body).unwrap()).unwrap();
    let mut h = Sha256::new();
    h.update("POST");
    h.update(b"\n");
    h.update(path);
    h.update(b"\n");
    h.update(&canonical);
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_disconnects_still_gets_its_decision_on_retry() {
    let app = spawn_app().await;
    let (doc_id, review_id) = app.pending_review().await;
    let path = format!("/api/v1/reviews/{review_id}/approve");
    let impatient = reqwest::Client::builder()
        .timeout(Duration::from_millis(200))
        .build()
        .unwrap();
    let dropped = impatient
        .post(app.url(&path))
        .bearer_auth(app.reviewer())
        .header("idempotency-key", "gone")
        .header(PAUSE_BEFORE_COMMIT_HEADER, "800")
        .json(&json!({}))
        .send()
        .await;
    assert!(dropped.is_err(), "the client gave up before the answer");
    let repeat = wait_for(
        "the retry to get the decision",
        Duration::from_secs(10),
        || async {
            let r = keyed(&app, &path, &app.reviewer(), "gone", json!({}))
                .send()
                .await
                .unwrap();
            (r.status() != StatusCode::CONFLICT).then_some(r)
        },
    )
    .await;
    assert_eq!(repeat.status(), StatusCode::OK);
    assert_eq!(repeat.headers().get("idempotent-replayed").unwrap(), "true");
    let v: Value = repeat.json().await.unwrap();
    assert_eq!(v["document"]["status"], "APPROVED");
    assert_eq!(v["document"]["id"], doc_id.as_str());
    assert!(
        app.lock_keys_left().await.is_empty(),
        "the lock was released"
    );
    app.finish().await;
}

/// The COMMIT succeeded but the client never heard (the reply was lost): the retry with the
/// same key repeats the committed response, because the response was recorded in the same
/// transaction as the change. Without a key, the same retry would find the review decided.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_reply_after_commit_is_repeated_not_run_again() {
    let app = spawn_app().await;
    let (_, review_id) = app.pending_review().await;
    let path = format!("/api/v1/reviews/{review_id}/approve");
    let lost = keyed(&app, &path, &app.reviewer(), "lost-reply", json!({}))
        .header(kh_review::web::test_hooks::FAIL_AFTER_COMMIT_HEADER, "true")
        .send()
        .await
        .unwrap();
    expect_error(
        lost,
        StatusCode::SERVICE_UNAVAILABLE,
        "DEPENDENCY_UNAVAILABLE",
    )
    .await;
    let retry = keyed(&app, &path, &app.reviewer(), "lost-reply", json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(retry.status(), StatusCode::OK);
    assert_eq!(retry.headers().get("idempotent-replayed").unwrap(), "true");
    let v: Value = retry.json().await.unwrap();
    assert_eq!(v["document"]["status"], "APPROVED");
    assert_eq!(
        app.count("SELECT count(*) FROM audit_log WHERE action = 'approve'")
            .await,
        1
    );
    // The same for a create: one document, whatever the client saw.
    let lost = keyed(
        &app,
        "/api/v1/documents",
        &app.author(),
        "lost-create",
        json!({"title": "t", "body": "b"}),
    )
    .header(kh_review::web::test_hooks::FAIL_AFTER_COMMIT_HEADER, "true")
    .send()
    .await
    .unwrap();
    expect_error(
        lost,
        StatusCode::SERVICE_UNAVAILABLE,
        "DEPENDENCY_UNAVAILABLE",
    )
    .await;
    let before = app.count("SELECT count(*) FROM documents").await;
    let retry = keyed(
        &app,
        "/api/v1/documents",
        &app.author(),
        "lost-create",
        json!({"title": "t", "body": "b"}),
    )
    .send()
    .await
    .unwrap();
    assert_eq!(retry.status(), StatusCode::CREATED);
    assert_eq!(
        app.count("SELECT count(*) FROM documents").await,
        before,
        "no second document"
    );
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_with_its_json_keys_in_another_order_is_the_same_request() {
    let app = spawn_app().await;
    let first = keyed(
        &app,
        "/api/v1/documents",
        &app.author(),
        "create-1",
        json!({"title": "Runbook", "body": "Restart the indexer."}),
    )
    .send()
    .await
    .unwrap();
    assert_eq!(first.status(), StatusCode::CREATED);
    let created: Document = first.json().await.unwrap();
    // The same fields, the keys in the other order, sent as written.
    let reordered = r#"{ "body": "Restart the indexer.", "title": "Runbook" }"#;
    let retry = keyed(
        &app,
        "/api/v1/documents",
        &app.author(),
        "create-1",
        json!({}),
    )
    .body(reordered)
    .send()
    .await
    .unwrap();
    assert_eq!(retry.status(), StatusCode::CREATED);
    assert_eq!(retry.headers().get("idempotent-replayed").unwrap(), "true");
    assert_eq!(retry.json::<Document>().await.unwrap(), created);
    assert_eq!(app.count("SELECT count(*) FROM documents").await, 1);
    app.finish().await;
}

/// Key order counts at no depth: a refusal is repeated to its body with nested keys reordered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_with_nested_keys_in_another_order_repeats_the_same_reply() {
    let app = spawn_app().await;
    let send = |body: &'static str| {
        keyed(
            &app,
            "/api/v1/documents",
            &app.author(),
            "nested-1",
            json!({}),
        )
        .body(body)
        .send()
    };
    let first = send(r#"{"title": {"lang": "en", "text": "Runbook"}, "body": "Restart."}"#)
        .await
        .unwrap();
    let refusal = expect_error(first, StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED").await;
    let retry = send(r#"{"body": "Restart.", "title": {"text": "Runbook", "lang": "en"}}"#)
        .await
        .unwrap();
    assert_eq!(retry.headers().get("idempotent-replayed").unwrap(), "true");
    assert_eq!(retry.status(), StatusCode::UNPROCESSABLE_ENTITY);
    // The recorded reply, as it was (with the first request's request_id).
    assert_eq!(retry.json::<Value>().await.unwrap(), refusal);
    // Another value at the same depth is another request.
    let other = send(r#"{"body": "Restart.", "title": {"text": "Runbook", "lang": "de"}}"#)
        .await
        .unwrap();
    let reused = "IDEMPOTENCY_KEY_REUSED";
    expect_error(other, StatusCode::UNPROCESSABLE_ENTITY, reused).await;
    assert_eq!(app.count("SELECT count(*) FROM documents").await, 0);
    app.finish().await;
}
