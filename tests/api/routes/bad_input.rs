//! Bad input gets a clear 4xx with a stable code, and nothing is written.

use kh_review::web::auth::{sign, Role};
use reqwest::StatusCode;
use secrecy::SecretString;
use serde_json::json;

use crate::support::app::{expose, spawn_app, TestApp, AUTHOR, REVIEWER};
use crate::support::inspect::expect_error;

async fn written(app: &TestApp) -> (i64, i64, i64, i64) {
    (
        app.count("SELECT count(*) FROM documents").await,
        app.count("SELECT count(*) FROM reviews").await,
        app.count("SELECT count(*) FROM outbox").await,
        app.count("SELECT count(*) FROM audit_log").await,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_are_refused_and_change_nothing() {
    let app = spawn_app().await;
    let (doc_id, review_id) = app.pending_review().await;
    let before = written(&app).await;
    bad_bodies(&app).await;
    bad_ids_and_injection(&app, &review_id).await;
    bad_tokens_and_self_review(&app, &doc_id, &review_id).await;
    assert_eq!(
        written(&app).await,
        before,
        "no bad request may write anything"
    );
    // A request id sent by the client is echoed in the header and the error body.
    let r = app
        .client
        .get(app.url("/api/v1/documents/not-a-uuid"))
        .bearer_auth(app.author())
        .header("x-request-id", "trace-abc-123")
        .send()
        .await
        .unwrap();
    let v = expect_error(r, StatusCode::NOT_FOUND, "NOT_FOUND").await;
    assert_eq!(v["request_id"], "trace-abc-123");
    app.finish().await;
}

/// Malformed, mistyped, oversized and non-JSON bodies.
async fn bad_bodies(app: &TestApp) {
    let raw = |path: &str, body: &'static str| {
        app.client
            .post(app.url(path))
            .bearer_auth(app.author())
            .header("content-type", "application/json")
            .body(body)
    };

    // Malformed JSON: 400.
    let r = raw("/api/v1/documents", "{\"title\": \"x\", ")
        .send()
        .await
        .unwrap();
    expect_error(r, StatusCode::BAD_REQUEST, "VALIDATION_FAILED").await;
    // Wrong types, missing and unknown fields: 422.
    for body in [
        json!({"title": 5, "body": "b"}),
        json!({"title": "t"}),
        json!({"title": {"$gt": ""}, "body": "b"}),
        json!({"title": "t", "body": "b", "status": "APPROVED"}),
        json!({"title": "", "body": "b"}),
        json!({"title": "x".repeat(201), "body": "b"}),
        json!([1, 2, 3]),
    ] {
        let r = app
            .post("/api/v1/documents", &app.author(), body.clone())
            .await;
        expect_error(r, StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED").await;
    }
    // Oversized body: 413.
    let huge = "x".repeat(app.settings.server.json_limit_bytes + 1);
    let r = app
        .post(
            "/api/v1/documents",
            &app.author(),
            json!({"title": "t", "body": huge}),
        )
        .await;
    expect_error(r, StatusCode::PAYLOAD_TOO_LARGE, "VALIDATION_FAILED").await;
    // Not JSON at all.
    let r = app
        .client
        .post(app.url("/api/v1/documents"))
        .bearer_auth(app.author())
        .header("content-type", "text/plain")
        .body("title=x")
        .send()
        .await
        .unwrap();
    expect_error(r, StatusCode::UNSUPPORTED_MEDIA_TYPE, "VALIDATION_FAILED").await;
}

/// Unknown and malformed ids, and injection text.
async fn bad_ids_and_injection(app: &TestApp, review_id: &str) {
    // Unknown and malformed ids: 404.
    let unknown = uuid::Uuid::new_v4();
    for path in [
        format!("/api/v1/documents/{unknown}"),
        "/api/v1/documents/not-a-uuid".to_string(),
        "/api/v1/documents/1'%20OR%20'1'='1".to_string(),
        format!("/api/v1/documents/{unknown}/reviews"),
        "/api/v1/nothing-here".to_string(),
    ] {
        let r = app.get(&path, &app.author()).await;
        expect_error(r, StatusCode::NOT_FOUND, "NOT_FOUND").await;
    }
    let r = app.approve(&unknown.to_string(), &app.reviewer()).await;
    expect_error(r, StatusCode::NOT_FOUND, "NOT_FOUND").await;
    let r = app
        .post(
            &format!("/api/v1/documents/{unknown}/submit"),
            &app.author(),
            json!({}),
        )
        .await;
    expect_error(r, StatusCode::NOT_FOUND, "NOT_FOUND").await;
    // Injection text is stored as text, never interpreted (and goes to 422 when invalid).
    let r = app
        .post(
            &format!("/api/v1/reviews/{review_id}/reject"),
            &app.reviewer(),
            json!({"reason": {"$ne": null}}),
        )
        .await;
    expect_error(r, StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED").await;
}

/// Missing, malformed, forged, expired and unsigned tokens; the author deciding.
async fn bad_tokens_and_self_review(app: &TestApp, doc_id: &str, review_id: &str) {
    // Missing, malformed, forged and expired tokens: 401.
    let r = app
        .client
        .get(app.url(&format!("/api/v1/documents/{doc_id}")))
        .send()
        .await
        .unwrap();
    expect_error(r, StatusCode::UNAUTHORIZED, "UNAUTHORIZED").await;
    let r = app
        .client
        .get(app.url(&format!("/api/v1/documents/{doc_id}")))
        .header("authorization", "Basic YWxpY2U6cHc=")
        .send()
        .await
        .unwrap();
    expect_error(r, StatusCode::UNAUTHORIZED, "UNAUTHORIZED").await;
    let forged = sign(
        &SecretString::from("not-the-real-secret-at-all"),
        REVIEWER,
        &[Role::Reviewer],
        600,
    );
    let r = app.approve(review_id, &forged).await;
    expect_error(r, StatusCode::UNAUTHORIZED, "UNAUTHORIZED").await;
    let mut claims = serde_json::Map::new();
    claims.insert("sub".into(), json!(REVIEWER));
    claims.insert("roles".into(), json!(["reviewer"]));
    claims.insert("exp".into(), json!(chrono::Utc::now().timestamp() - 3600));
    let expired = jsonwebtoken::encode(
        &jsonwebtoken::Header::default(),
        &claims,
        &jsonwebtoken::EncodingKey::from_secret(expose(&app.settings.auth.jwt_secret).as_bytes())
            .unwrap(),
    )
    .unwrap();
    let r = app.approve(review_id, &expired).await;
    expect_error(r, StatusCode::UNAUTHORIZED, "UNAUTHORIZED").await;
    let none_alg = "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.eyJzdWIiOiJib2IiLCJyb2xlcyI6WyJyZXZpZXdlciJdLCJleHAiOjk5OTk5OTk5OTl9.";
    let r = app.approve(review_id, none_alg).await;
    expect_error(r, StatusCode::UNAUTHORIZED, "UNAUTHORIZED").await;
    // The author approving their own document.
    let r = app
        .approve(review_id, &app.token(AUTHOR, &[Role::Reviewer]))
        .await;
    expect_error(r, StatusCode::FORBIDDEN, "SELF_REVIEW_FORBIDDEN").await;
}
