//! Editing together: versions as entity tags (`ETag`, `If-None-Match` → 304, `If-Match` →
//! 412 under the row lock, 428 when required), and co-editing by the authors of a space
//! with four eyes over everyone who edited the version under review.

use futures_util::future::join_all;
use reqwest::{Response, StatusCode};
use serde_json::{json, Value};

use crate::support::app::{spawn_app, spawn_app_with, AppOptions, TestApp, AUTHOR};
use crate::support::inspect::expect_error;
use kh_review::web::auth::Role;

impl TestApp {
    /// `PUT /documents/{id}` by `token`, with `If-Match: if_match` when given.
    async fn put_doc(
        &self,
        id: &str,
        token: &str,
        if_match: Option<&str>,
        body: Value,
    ) -> Response {
        let mut req = self
            .client
            .put(self.url(&format!("/api/v1/documents/{id}")));
        if let Some(tag) = if_match {
            req = req.header("If-Match", tag);
        }
        req.bearer_auth(token).json(&body).send().await.unwrap()
    }

    /// `GET` of `path` with `If-None-Match: tag`.
    async fn get_if_none_match(&self, path: &str, tag: &str) -> Response {
        let req = self.client.get(self.url(path)).header("If-None-Match", tag);
        req.bearer_auth(self.author()).send().await.unwrap()
    }

    /// `POST` of `path` with `If-Match: tag`.
    async fn post_if_match(&self, path: &str, token: &str, tag: &str) -> Response {
        let req = self.client.post(self.url(path)).header("If-Match", tag);
        req.bearer_auth(token)
            .json(&json!({}))
            .send()
            .await
            .unwrap()
    }
}

fn etag(r: &Response) -> &str {
    r.headers().get("etag").expect("an ETag").to_str().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_edits_with_the_same_if_match_at_once_exactly_one_wins() {
    let app = spawn_app().await;
    let id = app.create_document("Runbook", "v1").await.id.to_string();
    let author = app.author();
    let edits = (0..8).map(|i| {
        let body = json!({"body": format!("edit {i}")});
        app.put_doc(&id, &author, Some("\"1\""), body)
    });
    let mut won = Vec::new();
    for r in join_all(edits).await {
        match r.status() {
            StatusCode::OK => won.push(etag(&r).to_string()),
            _ => {
                let e = expect_error(r, StatusCode::PRECONDITION_FAILED, "VERSION_MISMATCH").await;
                let message = e["message"].as_str().unwrap();
                assert!(
                    message.contains("version 2"),
                    "names the current version: {message}"
                );
            }
        }
    }
    assert_eq!(
        won,
        vec!["\"2\"".to_string()],
        "exactly one edit, at version 2"
    );
    assert_eq!(app.document_version_in_db(&id).await, 2);
    let sql =
        format!("SELECT count(*) FROM audit_log WHERE document_id = '{id}' AND action = 'edit'");
    assert_eq!(app.count(&sql).await, 1, "one edit audited");
    let sql = format!("SELECT count(*) FROM outbox WHERE document_id = '{id}'");
    assert_eq!(
        app.count(&sql).await,
        2,
        "created and one updated, nothing else"
    );
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etags_name_versions_and_if_none_match_saves_the_body() {
    let app = spawn_app().await;
    let r = app
        .post(
            "/api/v1/documents",
            &app.author(),
            json!({"title": "T", "body": "b"}),
        )
        .await;
    assert_eq!((r.status(), etag(&r)), (StatusCode::CREATED, "\"1\""));
    let id = r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let path = format!("/api/v1/documents/{id}");
    let r = app.get(&path, &app.author()).await;
    assert_eq!((r.status(), etag(&r)), (StatusCode::OK, "\"1\""));
    for tag in ["\"1\"", "W/\"1\"", "\"9\", \"1\"", "*"] {
        let r = app.get_if_none_match(&path, tag).await;
        assert_eq!(
            (r.status(), etag(&r)),
            (StatusCode::NOT_MODIFIED, "\"1\""),
            "{tag}"
        );
        assert!(r.bytes().await.unwrap().is_empty(), "a 304 has no body");
    }
    // If-Match compares strongly; a malformed one is 400; none of them change anything.
    let author = app.author();
    let r = app
        .put_doc(&id, &author, Some("W/\"1\""), json!({"body": "x"}))
        .await;
    expect_error(r, StatusCode::PRECONDITION_FAILED, "VERSION_MISMATCH").await;
    let r = app
        .put_doc(&id, &author, Some("1"), json!({"body": "x"}))
        .await;
    expect_error(r, StatusCode::BAD_REQUEST, "VALIDATION_FAILED").await;
    assert_eq!(app.document_version_in_db(&id).await, 1);
    let r = app
        .put_doc(&id, &author, Some("\"0\", \"1\""), json!({"body": "b2"}))
        .await;
    assert_eq!((r.status(), etag(&r)), (StatusCode::OK, "\"2\""));
    let r = app.get_if_none_match(&path, "\"1\"").await;
    assert_eq!((r.status(), etag(&r)), (StatusCode::OK, "\"2\""));
    // Submit, approve and the published revision: each answer tagged.
    let submit = format!("/api/v1/documents/{id}/submit");
    let r = app.post_if_match(&submit, &author, "\"1\"").await;
    expect_error(r, StatusCode::PRECONDITION_FAILED, "VERSION_MISMATCH").await;
    let r = app.post_if_match(&submit, &author, "\"2\"").await;
    assert_eq!((r.status(), etag(&r)), (StatusCode::CREATED, "\"3\""));
    let review = r.json::<Value>().await.unwrap()["review"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let r = app.approve(&review, &app.reviewer()).await;
    assert_eq!((r.status(), etag(&r)), (StatusCode::OK, "\"4\""));
    let published = format!("{path}/published");
    let r = app.get(&published, &app.author()).await;
    assert_eq!((r.status(), etag(&r)), (StatusCode::OK, "\"p4\""));
    let r = app.get_if_none_match(&published, "\"p4\"").await;
    assert_eq!(r.status(), StatusCode::NOT_MODIFIED);
    let r = app.get_if_none_match(&published, "\"4\"").await;
    assert_eq!(
        r.status(),
        StatusCode::OK,
        "the working copy's tag is not the published one's"
    );
    // Archive with a stale If-Match: 412, still approved.
    let archive = format!("/api/v1/documents/{id}/archive");
    let r = app.post_if_match(&archive, &author, "\"3\"").await;
    expect_error(r, StatusCode::PRECONDITION_FAILED, "VERSION_MISMATCH").await;
    let r = app.post_if_match(&archive, &author, "\"4\"").await;
    assert_eq!((r.status(), etag(&r)), (StatusCode::OK, "\"5\""));
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_require_if_match_a_write_without_it_is_428() {
    let app = spawn_app_with(AppOptions {
        configure: Some(Box::new(|s| s.http.require_if_match = true)),
        ..AppOptions::default()
    })
    .await;
    let id = app.create_document("T", "b").await.id.to_string();
    let author = app.author();
    let r = app.put_doc(&id, &author, None, json!({"body": "x"})).await;
    expect_error(
        r,
        StatusCode::PRECONDITION_REQUIRED,
        "PRECONDITION_REQUIRED",
    )
    .await;
    let r = app
        .post(
            &format!("/api/v1/documents/{id}/submit"),
            &author,
            json!({}),
        )
        .await;
    expect_error(
        r,
        StatusCode::PRECONDITION_REQUIRED,
        "PRECONDITION_REQUIRED",
    )
    .await;
    assert_eq!(app.document_version_in_db(&id).await, 1);
    let r = app
        .put_doc(&id, &author, Some("\"1\""), json!({"body": "x"}))
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_spaces_authors_co_edit_and_no_contributor_votes() {
    let app = spawn_app().await;
    let dave = app.token("dave", &[Role::Author, Role::Reviewer]);
    let id = app.create_document("Runbook", "v1").await.id.to_string();
    // A draft never submitted is its author's alone.
    let r = app.put_doc(&id, &dave, None, json!({"body": "mine"})).await;
    expect_error(r, StatusCode::NOT_FOUND, "NOT_FOUND").await;
    let review = app.submitted(&id).await;
    let r = app.reject(&review, &app.reviewer()).await;
    assert_eq!(r.status(), StatusCode::OK);
    // Once submitted, another author of the space edits it and submits it.
    let r = app
        .put_doc(&id, &dave, Some("\"3\""), json!({"body": "v2 by dave"}))
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    let doc: Value = r.json().await.unwrap();
    assert_eq!(doc["contributors"], json!(["dave"]));
    let review = app.submitted_as(&id, &dave).await;
    // Four eyes: dave edited this version; the author wrote it. Dave's queue leaves it out.
    let queue = "/api/v1/reviews?status=PENDING&eligible=me";
    let listed = |v: Value| {
        v["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["id"] == review)
    };
    assert!(!listed(app.get(queue, &dave).await.json().await.unwrap()));
    assert!(listed(
        app.get(queue, &app.reviewer()).await.json().await.unwrap()
    ));
    let r = app.approve(&review, &dave).await;
    expect_error(r, StatusCode::FORBIDDEN, "SELF_REVIEW_FORBIDDEN").await;
    let both = app.token(AUTHOR, &[Role::Author, Role::Reviewer]);
    let r = app.approve(&review, &both).await;
    expect_error(r, StatusCode::FORBIDDEN, "SELF_REVIEW_FORBIDDEN").await;
    let r = app.approve(&review, &app.reviewer()).await;
    assert_eq!(r.status(), StatusCode::OK);
    let approved: Value = r.json().await.unwrap();
    assert_eq!(
        approved["document"]["contributors"],
        json!([]),
        "an approval starts anew"
    );
    // Who edits a revision next is its contributor, dave no more.
    let r = app
        .put_doc(&id, &app.author(), None, json!({"body": "v3"}))
        .await;
    let doc: Value = r.json().await.unwrap();
    assert_eq!(doc["contributors"], json!([AUTHOR]));
    // An archive stays its author's (or an admin's).
    let r = app
        .post(&format!("/api/v1/documents/{id}/archive"), &dave, json!({}))
        .await;
    expect_error(r, StatusCode::FORBIDDEN, "FORBIDDEN").await;
    app.finish().await;
}
