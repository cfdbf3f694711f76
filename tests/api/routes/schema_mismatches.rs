//! Requests the fuzzer (`make fuzz`, every check) found the service judging otherwise than
//! the published schema: each is now refused or accepted as the schema says, and a refusal
//! changes nothing.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::app::{spawn_app, TestApp};
use crate::support::inspect::expect_error;

/// A body sent as it is, JSON already encoded.
async fn send_raw(
    app: &TestApp,
    method: reqwest::Method,
    path: &str,
    body: String,
) -> reqwest::Response {
    app.client
        .request(method, app.url(path))
        .bearer_auth(app.author())
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap()
}

async fn document(app: &TestApp, id: &str) -> Value {
    let r = app
        .get(&format!("/api/v1/documents/{id}"), &app.author())
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    r.json().await.unwrap()
}

/// `{"title": "0", "body": null}` was a 200 (a title edit) though `body` is a string in the
/// schema: left out is fine, null is not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_with_a_null_field_is_refused_naming_it_and_changes_nothing() {
    let app = spawn_app().await;
    let id = app
        .create_document("Runbook", "Restart it.")
        .await
        .id
        .to_string();
    let before = document(&app, &id).await;
    let path = format!("/api/v1/documents/{id}");
    for (body, field) in [
        (json!({"title": "0", "body": null}), "body"),
        (json!({"title": null, "body": "x"}), "title"),
        (json!({"title": null}), "title"),
    ] {
        let r = send_raw(&app, reqwest::Method::PUT, &path, body.to_string()).await;
        let e = expect_error(r, StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED").await;
        let message = e["message"].as_str().unwrap();
        assert!(
            message.contains(&format!("{field} may be left out, but not null")),
            "{body}: {message}"
        );
    }
    assert_eq!(document(&app, &id).await, before, "nothing changed");
    let r = send_raw(
        &app,
        reqwest::Method::PUT,
        &path,
        json!({"title": "0"}).to_string(),
    )
    .await;
    assert_eq!(r.status(), StatusCode::OK, "a field left out is fine");
    app.finish().await;
}

/// Lengths are characters (code points, as `maxLength` counts them) as sent. The longest
/// document the schema allows was a 413 when its characters came as JSON escapes (12 bytes
/// each for one outside the BMP), and a title of 200 characters and a space, over
/// `maxLength`, was accepted once trimmed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lengths_are_characters_as_sent_in_any_encoding() {
    let app = spawn_app().await;
    let escaped = |n: usize| r"\ud83d\ude00".repeat(n);
    let create = |title: String, body: String| {
        let json = format!(r#"{{"title":"{title}","body":"{body}"}}"#);
        send_raw(&app, reqwest::Method::POST, "/api/v1/documents", json)
    };
    let longest = create(escaped(200), escaped(200_000)).await;
    assert_eq!(longest.status(), StatusCode::CREATED);
    let created: Value = longest.json().await.unwrap();
    let read = document(&app, created["id"].as_str().unwrap()).await;
    assert_eq!(read["body"].as_str().unwrap().chars().count(), 200_000);
    assert_eq!(read["title"].as_str().unwrap().chars().count(), 200);

    let r = create(escaped(200), escaped(200_001)).await;
    let e = expect_error(r, StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED").await;
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .starts_with("body: must be at most 200000"),
        "{e}"
    );
    let r = create(format!("{} ", "x".repeat(200)), "text".into()).await;
    let e = expect_error(r, StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED").await;
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .starts_with("title: must be at most 200"),
        "{e}"
    );
    assert_eq!(
        app.count("SELECT count(*) FROM documents").await,
        1,
        "the refusals wrote nothing"
    );
    app.finish().await;
}
