//! Comments (append-only, paged, announced) and private drafts (a document never submitted
//! is its author's and the admins' alone, on every route).

use std::time::Duration;

use kh_review::web::auth::Role;
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::app::{spawn_app, TestApp};
use crate::support::inspect::expect_error;

async fn json_of(r: reqwest::Response, status: StatusCode) -> Value {
    let got = r.status();
    let body: Value = r.json().await.unwrap_or(Value::Null);
    assert_eq!(got, status, "{body}");
    body
}

#[tokio::test]
async fn comments_are_appended_paged_oldest_first_and_announced() {
    let app = spawn_app().await;
    let (id, review) = app.pending_review().await;
    let path = format!("/api/v1/documents/{id}/comments");
    let before = app.document_version_in_db(&id).await;
    let mut ids = Vec::new();
    let writers = [
        (app.reviewer(), Some(&review)),
        (app.author(), None),
        (app.reviewer(), None),
    ];
    for (i, (token, round)) in writers.iter().enumerate() {
        let body = json!({"body": format!("comment {}", i + 1), "review_id": round});
        let c = json_of(app.post(&path, token, body).await, StatusCode::CREATED).await;
        assert_eq!(c["seq"], i as i64 + 1);
        ids.push(c["id"].as_str().unwrap().to_string());
    }
    assert_eq!(
        app.document_version_in_db(&id).await,
        before,
        "comments leave the version"
    );
    let page = app.get(&format!("{path}?limit=2"), &app.reviewer()).await;
    let page = json_of(page, StatusCode::OK).await;
    let bodies: Vec<&str> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["body"].as_str().unwrap())
        .collect();
    assert_eq!(bodies, ["comment 1", "comment 2"]);
    assert_eq!(page["items"][0]["review_id"], review.as_str());
    let cursor = page["next_cursor"].as_str().unwrap();
    let rest = app
        .get(&format!("{path}?limit=2&cursor={cursor}"), &app.reviewer())
        .await;
    let rest = json_of(rest, StatusCode::OK).await;
    assert_eq!(rest["items"][0]["id"], ids[2].as_str());
    assert!(rest["next_cursor"].is_null());
    let announced = app
        .count(&format!(
            "SELECT count(*) FROM outbox WHERE document_id = '{id}' \
             AND event_type = 'document.commented' AND routing_key = 'document.commented' \
             AND document_version = {before} AND payload->'data'->>'commented_by' IS NOT NULL"
        ))
        .await;
    assert_eq!(announced, 3);
    app.outbox_drained(Duration::from_secs(10)).await;
    let events = app.take_events().await;
    let commented = events
        .iter()
        .filter(|(e, _)| e["event_type"] == "document.commented")
        .count();
    assert_eq!(commented, 3, "each comment reached the queue");
    app.finish().await;
}

/// Refused, and nothing written: a review of another document, an unknown review, an empty
/// body, bad pages.
#[tokio::test]
async fn bad_comments_and_pages_are_refused_and_write_nothing() {
    let app = spawn_app().await;
    let (id, _) = app.pending_review().await;
    let (_, other_review) = app.pending_review().await;
    let path = format!("/api/v1/documents/{id}/comments");
    let unknown = uuid::Uuid::now_v7().to_string();
    for body in [
        json!({"body": "x", "review_id": other_review}),
        json!({"body": "x", "review_id": unknown}),
        json!({"body": "  "}),
        json!({"body": "x".repeat(10_001)}),
        json!({"body": "x", "extra": 1}),
    ] {
        let r = app.post(&path, &app.reviewer(), body).await;
        expect_error(r, StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED").await;
    }
    for page in [
        format!("{path}?cursor=abc"),
        format!("{path}?cursor=0"),
        format!("{path}?limit=101"),
        format!("/api/v1/documents/{id}/reviews?limit=0"),
        format!("/api/v1/documents/{id}/reviews?cursor=-1"),
    ] {
        let r = app.get(&page, &app.reviewer()).await;
        expect_error(r, StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED").await;
    }
    let count = app
        .count(&format!(
            "SELECT count(*) FROM comments WHERE document_id = '{id}'"
        ))
        .await;
    assert_eq!(count, 0);
    app.finish().await;
}

#[tokio::test]
async fn a_draft_never_submitted_is_its_authors_and_the_admins_alone() {
    let app = spawn_app().await;
    let doc = app.create_document("Private notes", "Not ready.").await;
    let id = doc.id.to_string();
    let carol = app.token("carol", &[Role::Author]);
    let reads = [
        format!("/api/v1/documents/{id}"),
        format!("/api/v1/documents/{id}/reviews"),
        format!("/api/v1/documents/{id}/comments"),
        format!("/console/f/documents/{id}"),
    ];
    for token in [&carol, &app.reviewer()] {
        for path in &reads {
            let r = app.get(path, token).await;
            assert_eq!(r.status(), StatusCode::NOT_FOUND, "{path}");
        }
        writes_are_refused(&app, &id, token).await;
    }
    for token in [app.author(), app.admin()] {
        for path in &reads {
            assert_eq!(
                app.get(path, &token).await.status(),
                StatusCode::OK,
                "{path}"
            );
        }
    }
    let n = app
        .count(&format!(
            "SELECT count(*) FROM comments WHERE document_id = '{id}'"
        ))
        .await;
    assert_eq!(n, 0, "nothing written by the refused");
    assert_eq!(app.document_version_in_db(&id).await, 1, "nothing changed");
    // Submitted once, it is readable by every role, with its reviews and comments.
    app.submitted(&id).await;
    for path in &reads {
        let r = app.get(path, &app.reviewer()).await;
        assert_eq!(r.status(), StatusCode::OK, "{path}");
    }
    app.finish().await;
}

/// Every write of someone else's private draft is refused as if it did not exist, or, for a
/// token without the route's role, by the role check before the document is looked up.
async fn writes_are_refused(app: &TestApp, id: &str, token: &str) {
    let doc = format!("/api/v1/documents/{id}");
    for (r, what) in [
        (
            app.post(&format!("{doc}/comments"), token, json!({"body": "?"}))
                .await,
            "comment",
        ),
        (
            app.post(&format!("{doc}/archive"), token, json!({})).await,
            "archive",
        ),
        (
            app.put(&doc, token, json!({"body": "mine now"})).await,
            "edit",
        ),
        (
            app.post(&format!("{doc}/submit"), token, json!({})).await,
            "submit",
        ),
        (
            app.post(&format!("{doc}/withdraw"), token, json!({})).await,
            "withdraw",
        ),
    ] {
        let status = r.status();
        let e: Value = r.json().await.unwrap();
        match status {
            StatusCode::NOT_FOUND => assert_eq!(e["code"], "NOT_FOUND", "{what}"),
            StatusCode::FORBIDDEN => {
                let message = e["message"].as_str().unwrap();
                assert!(message.contains("role"), "{what}: {e}");
            }
            other => panic!("{what}: {other} {e}"),
        }
    }
}
