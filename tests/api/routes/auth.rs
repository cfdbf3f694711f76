//! The edges of bearer tokens: `nbf`, `aud` and `iss` as identity providers issue them,
//! and tokens that carry no role the service knows.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::app::{expose, spawn_app, spawn_app_with, AppOptions, TestApp, AUTHOR};
use crate::support::inspect::expect_error;
use crate::support::views::Document;

/// A token with the test's secret and these claims on top of a valid author's.
fn token_with(app: &TestApp, extra: Value) -> String {
    let now = chrono::Utc::now().timestamp();
    let mut claims = json!({"sub": AUTHOR, "roles": ["author"], "exp": now + 600});
    claims
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    let secret = expose(&app.settings.auth.jwt_secret);
    let key = jsonwebtoken::EncodingKey::from_secret(secret.as_bytes()).unwrap();
    jsonwebtoken::encode(&jsonwebtoken::Header::default(), &claims, &key).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn not_before_is_checked_and_an_audience_is_accepted_when_none_is_configured() {
    let app = spawn_app().await;
    let doc = app.create_document("Runbook", "Restart.").await;
    let path = format!("/api/v1/documents/{}", doc.id);
    let now = chrono::Utc::now().timestamp();
    let later = token_with(&app, json!({"nbf": now + 3600}));
    let r = app.get(&path, &later).await;
    let v = expect_error(r, StatusCode::UNAUTHORIZED, "UNAUTHORIZED").await;
    assert!(v["message"].as_str().unwrap().contains("nbf"), "{v}");
    let started = token_with(&app, json!({"nbf": now - 60}));
    assert_eq!(app.get(&path, &started).await.status(), StatusCode::OK);
    // As identity providers issue them: an audience, an issuer.
    let idp = token_with(
        &app,
        json!({"aud": "some-api", "iss": "https://idp.example"}),
    );
    assert_eq!(app.get(&path, &idp).await.status(), StatusCode::OK);
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configured_issuer_and_audience_are_required() {
    let app = spawn_app_with(AppOptions {
        configure: Some(Box::new(|s| {
            s.auth.issuer = Some("https://idp.example".into());
            s.auth.audience = Some("kh-review".into());
        })),
        ..AppOptions::default()
    })
    .await;
    let right = json!({"iss": "https://idp.example", "aud": "kh-review"});
    let r = app
        .post(
            "/api/v1/documents",
            &token_with(&app, right),
            json!({"title": "Runbook", "body": "Restart."}),
        )
        .await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let doc: Document = r.json().await.unwrap();
    let path = format!("/api/v1/documents/{}", doc.id);
    for wrong in [
        json!({"iss": "https://idp.example", "aud": "another-api"}),
        json!({"iss": "https://idp.example"}),
        json!({"iss": "https://elsewhere.example", "aud": "kh-review"}),
        json!({"aud": "kh-review"}),
    ] {
        let r = app.get(&path, &token_with(&app, wrong.clone())).await;
        let v = expect_error(r, StatusCode::UNAUTHORIZED, "UNAUTHORIZED").await;
        assert!(!v["message"].as_str().unwrap().is_empty(), "{wrong}");
    }
    let several = json!({"iss": "https://idp.example", "aud": ["another-api", "kh-review"]});
    let r = app.get(&path, &token_with(&app, several)).await;
    assert_eq!(r.status(), StatusCode::OK);
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_without_a_known_role_reads_nothing() {
    let app = spawn_app().await;
    let (doc_id, _) = app.pending_review().await;
    let reads = [
        format!("/api/v1/documents/{doc_id}"),
        format!("/api/v1/documents/{doc_id}/reviews"),
        "/api/v1/reviews".to_string(),
    ];
    for roles in [json!([]), json!(["guest"])] {
        let token = token_with(&app, json!({"sub": "mallory", "roles": roles}));
        for path in &reads {
            let r = app.get(path, &token).await;
            let v = expect_error(r, StatusCode::FORBIDDEN, "FORBIDDEN").await;
            assert!(v.get("body").is_none(), "{path}: {v}");
        }
    }
    // Any one known role reads a document and its history, someone else's too.
    let reviewer = app.reviewer();
    for path in &reads[..2] {
        assert_eq!(app.get(path, &reviewer).await.status(), StatusCode::OK);
    }
    app.finish().await;
}
