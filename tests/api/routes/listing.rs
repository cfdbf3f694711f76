//! The lists the console reads, as the JSON API serves them: an author's own documents by
//! status, the queue with its documents' titles, and the delivery figures for admins.

use std::time::Duration;

use kh_review::web::auth::Role;
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::app::{spawn_app, spawn_app_with, AppOptions, TestApp};
use crate::support::inspect::expect_error;
use kh_review_testkit::proxy::dead_port;

async fn ids(app: &TestApp, path: &str, token: &str) -> (Vec<String>, Option<String>) {
    let r = app.get(path, token).await;
    assert_eq!(r.status(), StatusCode::OK, "{path}");
    let v: Value = r.json().await.unwrap();
    let items = v["items"].as_array().unwrap();
    assert!(
        items.iter().all(|d| d.get("body").is_none()),
        "no bodies in lists: {v}"
    );
    let ids = items
        .iter()
        .map(|d| d["id"].as_str().unwrap().to_string())
        .collect();
    (ids, v["next_cursor"].as_str().map(str::to_string))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_author_lists_their_own_documents_newest_first_by_status() {
    let app = spawn_app().await;
    let mut mine = Vec::new();
    for i in 0..3 {
        mine.push(
            app.create_document(&format!("Mine {i}"), "text")
                .await
                .id
                .to_string(),
        );
    }
    let dave = app.token("dave", &[Role::Author]);
    let r = app
        .post(
            "/api/v1/documents",
            &dave,
            json!({"title": "His", "body": "b"}),
        )
        .await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let submitted = &mine[1];
    let r = app
        .post(
            &format!("/api/v1/documents/{submitted}/submit"),
            &app.author(),
            json!({}),
        )
        .await;
    assert_eq!(r.status(), StatusCode::CREATED);

    let newest_first: Vec<String> = mine.iter().rev().cloned().collect();
    let (all, next) = ids(&app, "/api/v1/documents", &app.author()).await;
    assert_eq!(all, newest_first, "only alice's, newest first");
    assert_eq!(next, None);
    let (drafts, _) = ids(&app, "/api/v1/documents?status=DRAFT", &app.author()).await;
    assert_eq!(drafts, vec![mine[2].clone(), mine[0].clone()]);
    let (pending, _) = ids(
        &app,
        "/api/v1/documents?status=PENDING_REVIEW",
        &app.author(),
    )
    .await;
    assert_eq!(pending, vec![submitted.clone()]);

    // A walk one at a time sees each once, in order.
    let (mut walked, mut cursor) = (Vec::new(), None::<String>);
    loop {
        let path = match &cursor {
            None => "/api/v1/documents?limit=1".to_string(),
            Some(c) => format!("/api/v1/documents?limit=1&cursor={c}"),
        };
        let (page, next) = ids(&app, &path, &app.author()).await;
        walked.extend(page);
        match next {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    assert_eq!(walked, newest_first);

    for bad in ["status=NOPE", "limit=0", "limit=101", "cursor=xyz"] {
        let r = app
            .get(&format!("/api/v1/documents?{bad}"), &app.author())
            .await;
        expect_error(r, StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED").await;
    }
    let r = app.get("/api/v1/documents", &app.reviewer()).await;
    expect_error(r, StatusCode::FORBIDDEN, "FORBIDDEN").await;
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_queue_names_each_review_s_document() {
    let app = spawn_app().await;
    let (doc, review) = app.pending_review().await;
    let r = app.get("/api/v1/reviews", &app.reviewer()).await;
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["items"][0]["id"], review.as_str());
    assert_eq!(v["items"][0]["document_id"], doc.as_str());
    assert_eq!(v["items"][0]["document_title"], "Quarterly report", "{v}");
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delivery_figures_count_what_waits_and_what_went_out() {
    let app = spawn_app_with(AppOptions {
        run_dispatcher: false,
        amqp_url: Some(format!("amqp://guest:guest@127.0.0.1:{}/%2f", dead_port())),
        amqp_timeout_ms: 300,
        ..Default::default()
    })
    .await;
    let admin = app.token("root", &[Role::Admin]);
    let stats = || async {
        let r = app.get("/api/v1/admin/outbox/stats", &admin).await;
        assert_eq!(r.status(), StatusCode::OK);
        r.json::<Value>().await.unwrap()
    };
    // The broker is down: the submit's event waits (the creation's only feeds MongoDB).
    app.pending_review().await;
    let s = stats().await;
    let waiting = app.undelivered().await;
    assert!(waiting >= 1, "the submitted event waits");
    assert_eq!(s["undelivered"], waiting, "{s}");
    assert!(
        s["oldest_undelivered_age_seconds"].as_f64().unwrap() > 0.0,
        "{s}"
    );
    let rows = app.count("SELECT count(*) FROM outbox").await;
    assert_eq!(s["delivered_last_minute"], rows - waiting, "{s}");
    assert_eq!(s["parked"], 0, "{s}");
    let r = app.get("/api/v1/admin/outbox/stats", &app.reviewer()).await;
    expect_error(r, StatusCode::FORBIDDEN, "FORBIDDEN").await;
    app.stop().await;

    // With a broker, what went out in the last minute is counted.
    let app = spawn_app().await;
    app.pending_review().await;
    app.outbox_drained(Duration::from_secs(10)).await;
    let admin = app.token("root", &[Role::Admin]);
    let r = app.get("/api/v1/admin/outbox/stats", &admin).await;
    let s: Value = r.json().await.unwrap();
    assert_eq!(s["undelivered"], 0, "{s}");
    assert_eq!(s["oldest_undelivered_age_seconds"], 0.0, "{s}");
    assert_eq!(s["delivered_last_minute"], 2, "{s}");
    app.finish().await;
}
