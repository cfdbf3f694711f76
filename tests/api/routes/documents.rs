use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::app::{spawn_app, spawn_app_with, AppOptions, TestApp, AUTHOR};
use crate::support::inspect::{expect_error, wait_for};
use crate::support::views::{Document, Items, Review, Transition};
use kh_review_testkit::proxy::{dead_port, Proxy};
use kh_review_testkit::stores::{pg_url, with_db};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_get_edit_and_history() {
    let app = spawn_app().await;
    // Create
    let doc = app
        .create_document("  Onboarding guide ", "Step one. Step two.")
        .await;
    let id = doc.id.to_string();
    assert_eq!(doc.title, "Onboarding guide");
    assert_eq!(doc.status, "DRAFT");
    assert_eq!(doc.version, 1);
    assert_eq!(doc.author_id, AUTHOR);
    assert!(doc.current_review_id.is_none());
    for f in [&doc.created_at, &doc.updated_at] {
        assert!(!f.is_empty(), "{f}");
    }
    // The projection reaches MongoDB, and GET serves body and preview from it.
    wait_for("mongo projection v1", Duration::from_secs(10), || async {
        app.mongo_doc(&id)
            .await
            .filter(|d| d.get_i64("version") == Ok(1))
    })
    .await;
    let r = app
        .get(&format!("/api/v1/documents/{id}"), &app.author())
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    let got: Document = r.json().await.unwrap();
    assert_eq!(got.body.as_deref(), Some("Step one. Step two."));
    assert_eq!(got.preview.as_deref(), Some("Step one. Step two."));
    assert_eq!(got.body_source.as_deref(), Some("mongodb"));

    // Edit
    let r = app
        .client
        .put(app.url(&format!("/api/v1/documents/{id}")))
        .bearer_auth(app.author())
        .json(&json!({"body": "Step one, revised."}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let edited: Document = r.json().await.unwrap();
    assert_eq!(edited.version, 2);
    assert_eq!(edited.title, "Onboarding guide");
    let m = wait_for("mongo projection v2", Duration::from_secs(10), || async {
        app.mongo_doc(&id)
            .await
            .filter(|d| d.get_i64("version") == Ok(2))
    })
    .await;
    assert_eq!(m.get_str("body").unwrap(), "Step one, revised.");

    submit_shows_in_history(&app, &id).await;

    // Edits are refused while pending.
    let r = app
        .client
        .put(app.url(&format!("/api/v1/documents/{id}")))
        .bearer_auth(app.author())
        .json(&json!({"title": "Sneaky"}))
        .send()
        .await
        .unwrap();
    expect_error(r, StatusCode::CONFLICT, "INVALID_STATE").await;
    app.finish().await;
}

/// History is empty, then holds the submitted review.
async fn submit_shows_in_history(app: &TestApp, id: &str) {
    let r = app
        .get(&format!("/api/v1/documents/{id}/reviews"), &app.author())
        .await;
    let h: Items<Review> = r.json().await.unwrap();
    assert_eq!(h.items.len(), 0);
    let r = app
        .post(
            &format!("/api/v1/documents/{id}/submit"),
            &app.author(),
            json!({}),
        )
        .await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let t: Transition = r.json().await.unwrap();
    assert_eq!(t.document.status, "PENDING_REVIEW");
    assert_eq!(t.document.version, 3);
    assert_eq!(t.review.status, "PENDING");
    assert_eq!(t.review.document_version, 3);
    assert_eq!(t.review.submitted_by, AUTHOR);
    assert_eq!(t.document.current_review_id, Some(t.review.id));
    let r = app
        .get(&format!("/api/v1/documents/{id}/reviews"), &app.author())
        .await;
    let h: Items<Review> = r.json().await.unwrap();
    assert_eq!(h.items[0].id, t.review.id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pending_reviews_are_listed_with_a_cursor() {
    let app = spawn_app().await;
    let mut ids = Vec::new();
    for _ in 0..3 {
        ids.push(app.pending_review().await.1);
    }
    let r = app
        .get("/api/v1/reviews?status=PENDING&limit=2", &app.reviewer())
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    let p1: Value = r.json().await.unwrap();
    let cursor = p1["next_cursor"]
        .as_str()
        .expect("a next cursor")
        .to_string();
    let r = app
        .get(
            &format!("/api/v1/reviews?status=PENDING&limit=2&cursor={cursor}"),
            &app.reviewer(),
        )
        .await;
    let p2: Value = r.json().await.unwrap();
    assert!(p2["next_cursor"].is_null());
    let listed: Vec<String> = p1["items"]
        .as_array()
        .unwrap()
        .iter()
        .chain(p2["items"].as_array().unwrap())
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(listed, ids, "oldest first, each once");
    // Authors may not list the review queue.
    let r = app.get("/api/v1/reviews", &app.author()).await;
    expect_error(r, StatusCode::FORBIDDEN, "FORBIDDEN").await;
    let r = app
        .get("/api/v1/reviews?status=NOPE", &app.reviewer())
        .await;
    expect_error(r, StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED").await;
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_and_readiness() {
    let app = spawn_app().await;
    let r = app.client.get(app.url("/healthz")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let r = app.client.get(app.url("/readyz")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["status"], "ready", "{v}");
    for dep in ["postgresql", "redis", "mongodb", "rabbitmq"] {
        assert_eq!(v["checks"][dep]["status"], "up", "{dep}: {v}");
    }
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_down_gives_503_and_readyz_not_ready() {
    let port = dead_port();
    let app = spawn_app_with(AppOptions {
        database_url: Some(format!("postgres://kh:kh@127.0.0.1:{port}/nowhere")),
        ..Default::default()
    })
    .await;
    let r = app
        .post(
            "/api/v1/documents",
            &app.author(),
            json!({"title": "t", "body": "b"}),
        )
        .await;
    let v = expect_error(r, StatusCode::SERVICE_UNAVAILABLE, "DEPENDENCY_UNAVAILABLE").await;
    assert!(
        !v.to_string().contains("127.0.0.1"),
        "no connection details leak: {v}"
    );
    assert_eq!(
        v["message"], "PostgreSQL is unavailable; try again shortly",
        "the 503 names the dependency"
    );
    let r = app.client.get(app.url("/readyz")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["checks"]["postgresql"]["status"], "down");
    app.stop().await;
}

/// The database stops answering in the middle of a transition (a partition: connections
/// stay open, nothing comes back). The request ends with 503, not a hang, and nothing was
/// committed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partitioned_database_mid_transaction_gives_503_not_a_hang() {
    let owner = spawn_app().await; // the stores, reached directly
    let (proxy, via_proxy) = Proxy::in_front_of(&pg_url()).await;
    let db_url = with_db(&via_proxy, &owner.shared.db_name);
    let app = spawn_app_with(AppOptions {
        database_url: Some(db_url),
        share_with: Some(owner.shared.clone()),
        ..Default::default()
    })
    .await;
    let review = owner.pending_reviews_in_db(1).await.remove(0);
    let started = std::time::Instant::now();
    let req = app
        .client
        .post(app.url(&format!("/api/v1/reviews/{review}/approve")))
        .bearer_auth(app.reviewer())
        .header(
            kh_review::web::test_hooks::PAUSE_BEFORE_COMMIT_HEADER,
            "1000",
        )
        .json(&json!({}))
        .send();
    let partition = async {
        // The request holds its transaction open (paused before COMMIT): partition now.
        wait_for("the request to be inside its transaction", Duration::from_secs(10), || async {
            let n: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND state = 'idle in transaction'",
            )
            .bind(&owner.shared.db_name)
            .fetch_one(&owner.pg)
            .await
            .unwrap();
            (n > 0).then_some(())
        })
        .await;
        proxy.freeze();
    };
    let (r, ()) = tokio::join!(req, partition);
    expect_error(
        r.unwrap(),
        StatusCode::SERVICE_UNAVAILABLE,
        "DEPENDENCY_UNAVAILABLE",
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "bounded by the transaction timeout"
    );
    proxy.cut(); // the server sees the connections close and rolls back
    let status = owner.review_status_in_db(&review).await;
    assert_eq!(status, "PENDING", "nothing committed");
    app.stop().await;
    owner.finish().await;
}
