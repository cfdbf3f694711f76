//! The review queue's cursor never skips a review: the queue is ordered by a value assigned
//! at COMMIT (`queue_seq`), so a review committed after a reader paged past a position comes
//! after it, even when its submit started earlier (it waited on a row lock).

use std::collections::HashSet;
use std::time::{Duration, Instant};

use futures_util::future::join_all;
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::app::{spawn_app, spawn_app_with, AppOptions, TestApp};
use crate::support::inspect::{expect_error, wait_for};

/// Submits `doc`; returns its review id and when the 201 arrived (after its COMMIT).
async fn submit(app: &TestApp, doc: &str) -> (String, Instant) {
    let r = app
        .post(
            &format!("/api/v1/documents/{doc}/submit"),
            &app.author(),
            json!({}),
        )
        .await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let v: Value = r.json().await.unwrap();
    (
        v["review"]["id"].as_str().unwrap().to_string(),
        Instant::now(),
    )
}

/// One page of two pending reviews after `cursor`: their ids and the next cursor.
async fn page(app: &TestApp, cursor: Option<&str>) -> (Vec<String>, Option<String>) {
    let after = cursor.map(|c| format!("&cursor={c}")).unwrap_or_default();
    let r = app
        .get(
            &format!("/api/v1/reviews?status=PENDING&limit=2{after}"),
            &app.reviewer(),
        )
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    let v: Value = r.json().await.unwrap();
    let ids = v["items"].as_array().unwrap().iter();
    let ids = ids.map(|r| r["id"].as_str().unwrap().to_string()).collect();
    (ids, v["next_cursor"].as_str().map(str::to_string))
}

async fn submitted_at(app: &TestApp, review: &str) -> chrono::DateTime<chrono::Utc> {
    sqlx::query_scalar("SELECT submitted_at FROM reviews WHERE id = $1::uuid")
        .bind(review)
        .fetch_one(&app.pg)
        .await
        .unwrap()
}

/// Waits until a statement of the app waits on a row lock.
async fn waiting_on_a_row_lock(app: &TestApp) {
    let waiting = || async {
        let n: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = $1 \
             AND wait_event_type = 'Lock' AND query LIKE '%FOR UPDATE%'",
        )
        .bind(&app.shared.db_name)
        .fetch_one(&app.pg)
        .await
        .unwrap();
        (n > 0).then_some(())
    };
    wait_for(
        "a submit to wait on the row lock",
        Duration::from_secs(10),
        waiting,
    )
    .await;
}

/// Waits until `doc` has a committed review.
async fn reviewed(app: &TestApp, doc: &str) {
    let committed = || async {
        let n: i64 =
            sqlx::query_scalar("SELECT count(*) FROM reviews WHERE document_id = $1::uuid")
                .bind(doc)
                .fetch_one(&app.pg)
                .await
                .unwrap();
        (n > 0).then_some(())
    };
    wait_for(
        "the waiting submit to commit",
        Duration::from_secs(10),
        committed,
    )
    .await;
}

/// A walk through the queue while submits commit: the first page is read while a submit
/// that started earlier waits on its document's row lock; that submit then commits (with
/// the older `submitted_at`), more submits run during the rest of the walk. The walk sees
/// each review once, and every review committed before its last page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cursor_walk_during_submits_sees_every_review_once() {
    let app = spawn_app_with(AppOptions {
        configure: Some(Box::new(|s| {
            s.database.lock_timeout = Duration::from_secs(10)
        })),
        ..Default::default()
    })
    .await;
    let mut docs = Vec::new();
    for _ in 0..10 {
        docs.push(app.create_document("Queued", "Body.").await.id.to_string());
    }
    let mut holder = app.pg.begin().await.unwrap();
    sqlx::query("SELECT 1 FROM documents WHERE id = $1::uuid FOR UPDATE")
        .bind(&docs[0])
        .execute(&mut *holder)
        .await
        .unwrap();
    let waiter = submit(&app, &docs[0]);
    let walk = async {
        waiting_on_a_row_lock(&app).await;
        let mut early = Vec::new();
        for doc in &docs[1..5] {
            early.push(submit(&app, doc).await.0);
        }
        let (mut seen, mut cursor) = page(&app, None).await;
        holder.commit().await.unwrap(); // the waiting submit goes on and commits
        reviewed(&app, &docs[0]).await;
        let later = join_all(docs[5..].iter().map(|d| submit(&app, d)));
        let rest = async {
            let mut last_read = Instant::now();
            while let Some(c) = cursor.take() {
                last_read = Instant::now();
                let (ids, next) = page(&app, Some(&c)).await;
                seen.extend(ids);
                cursor = next;
            }
            last_read
        };
        let (later, last_read) = tokio::join!(later, rest);
        (early, seen, later, last_read)
    };
    let ((waited, _), (early, seen, later, last_read)) = tokio::join!(waiter, walk);

    let unique: HashSet<&String> = seen.iter().collect();
    assert_eq!(unique.len(), seen.len(), "no review twice: {seen:?}");
    // The case the old order (submitted_at, id) got wrong: the waiting submit's timestamp
    // is older than those of reviews the first page had already passed.
    assert!(submitted_at(&app, &waited).await < submitted_at(&app, &early[0]).await);
    // Committed before the walk went on: each must be in it.
    for review in early.iter().chain([&waited]) {
        assert!(unique.contains(review), "{review} skipped; walk: {seen:?}");
    }
    // Committed during the walk: those committed before its last page must be in it.
    for (review, _) in later.iter().filter(|(_, at)| *at < last_read) {
        assert!(unique.contains(review), "{review} skipped; walk: {seen:?}");
    }
    // A cursor that names no review is refused, not read as the end of the queue.
    let nowhere = uuid::Uuid::new_v4().simple();
    let r = app
        .get(
            &format!("/api/v1/reviews?cursor={nowhere}"),
            &app.reviewer(),
        )
        .await;
    expect_error(r, StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED").await;
    println!(
        "walk saw {} reviews; {} of the 5 later submits committed before its last page",
        seen.len(),
        later.iter().filter(|(_, at)| *at < last_read).count()
    );
    app.finish().await;
}

/// A cursor the queue issues matches the pattern `/openapi.json` publishes for its `cursor`
/// parameter, so a client that checks its requests against the description can send it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_issued_cursor_matches_its_published_pattern() {
    let app = spawn_app().await;
    for _ in 0..3 {
        app.pending_review().await;
    }
    let (_, cursor) = page(&app, None).await;
    let cursor = cursor.expect("a second page");
    let spec: Value = app.public_json("/openapi.json").await;
    let params = spec["paths"]["/api/v1/reviews"]["get"]["parameters"]
        .as_array()
        .unwrap();
    let param = params.iter().find(|p| p["name"] == "cursor").unwrap();
    let pattern = param["schema"]["pattern"].as_str().unwrap();
    let re = regex::Regex::new(pattern).unwrap();
    assert!(re.is_match(&cursor), "{cursor} does not match {pattern}");
    let (ids, _) = page(&app, Some(&cursor)).await;
    assert_eq!(ids.len(), 1, "the cursor leads to the last review");
    app.finish().await;
}
