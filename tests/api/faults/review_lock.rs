//! A vote locks its review and document in one statement only when that is as good as two
//! (`store/review_lock.rs`): it never waits inside that statement, it skips the document
//! first (a skipped document leaves the review unlocked, so the wait that follows keeps the
//! one lock order), and a review row touched since its snapshot is read again. These pin
//! each part, and the invariant the freshness check rests on.

use std::future::Future;
use std::time::Duration;

use kh_review::http::auth::Role;
use reqwest::{Response, StatusCode};
use sqlx::{Connection, PgConnection};

use crate::support::app::{expose, spawn_app, TestApp};
use crate::support::inspect::wait_for;

/// The review row's current version (its `xmin`).
async fn version_of(app: &TestApp, review: &str) -> String {
    sqlx::query_scalar("SELECT xmin::text FROM reviews WHERE id = $1::uuid")
        .bind(review)
        .fetch_one(&app.pg)
        .await
        .unwrap()
}

/// Runs `step` and asserts that it succeeded and wrote the review row.
async fn writes_the_row(
    app: &TestApp,
    review: &str,
    what: &str,
    step: impl Future<Output = Response>,
) {
    let before = version_of(app, review).await;
    let r = step.await;
    assert!(r.status().is_success(), "{what}: {}", r.status());
    assert_ne!(
        version_of(app, review).await,
        before,
        "{what} left the review row as it was"
    );
}

#[tokio::test]
async fn whatever_changes_a_reviews_votes_or_claims_writes_its_row() {
    let app = spawn_app().await;
    app.n_of_m("two", 2).await;
    let (_, review) = app.pending_under("two").await;
    let carol = app.token("carol", &[Role::Reviewer]);
    let claim = format!("/api/v1/reviews/{review}/claim");
    let body = serde_json::json!({});
    writes_the_row(
        &app,
        &review,
        "a claim",
        app.post(&claim, &carol, body.clone()),
    )
    .await;
    writes_the_row(
        &app,
        &review,
        "a claim given back",
        app.delete(&claim, &carol),
    )
    .await;
    let vote = app.approve(&review, &carol);
    writes_the_row(&app, &review, "a vote that decides nothing", vote).await;
    app.finish().await;
}

/// Another writer's session holding `document`'s row lock, and its backend's pid.
async fn hold_document(app: &TestApp, document: &str) -> (PgConnection, i32) {
    let mut c = PgConnection::connect(expose(&app.settings.database.url))
        .await
        .unwrap();
    sqlx::query("BEGIN").execute(&mut c).await.unwrap();
    sqlx::query("SELECT 1 FROM documents WHERE id = $1::uuid FOR UPDATE")
        .bind(document)
        .execute(&mut c)
        .await
        .unwrap();
    let pid = sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(&mut c)
        .await
        .unwrap();
    (c, pid)
}

/// Waits until a session of `app`'s database other than `holder` waits for a row lock.
async fn someone_waits_for_a_lock(app: &TestApp, holder: i32) {
    wait_for(
        "the vote to wait for the row lock",
        Duration::from_secs(10),
        || async {
            let waiting: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() \
             AND wait_event_type = 'Lock' AND pid <> $1",
            )
            .bind(holder)
            .fetch_one(&app.pg)
            .await
            .unwrap();
            (waiting > 0).then_some(())
        },
    )
    .await
}

/// Approves `review` as `voter` in a task of its own.
fn approve_later(app: &TestApp, review: &str, voter: &str) -> tokio::task::JoinHandle<StatusCode> {
    let (client, token) = (app.client.clone(), app.token(voter, &[Role::Reviewer]));
    let url = app.url(&format!("/api/v1/reviews/{review}/approve"));
    tokio::spawn(async move {
        let r = client
            .post(url)
            .bearer_auth(token)
            .json(&serde_json::json!({}))
            .send();
        r.await.unwrap().status()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vote_behind_a_held_document_holds_nothing_else_and_sees_what_the_holder_wrote() {
    let app = spawn_app().await;
    // The document held: the vote waits for it, and meanwhile holds no lock on the review
    // (a vote that locked the review first would, and a writer holding the document that
    // then wants the review would deadlock with it).
    let (doc, review) = app.pending_review().await;
    let (mut holder, pid) = hold_document(&app, &doc).await;
    let vote = approve_later(&app, &review, "ravi");
    someone_waits_for_a_lock(&app, pid).await;
    let free: Option<i32> =
        sqlx::query_scalar("SELECT 1 FROM reviews WHERE id = $1::uuid FOR UPDATE SKIP LOCKED")
            .bind(&review)
            .fetch_optional(&app.pg)
            .await
            .unwrap();
    assert_eq!(
        free,
        Some(1),
        "the waiting vote holds the review's row lock"
    );
    sqlx::query("COMMIT").execute(&mut holder).await.unwrap();
    assert_eq!(vote.await.unwrap(), StatusCode::OK);

    // The holder records a vote (with the review row, as every writer of votes does)
    // while the second voter waits: the second voter's vote sees it and decides.
    app.n_of_m("two", 2).await;
    let (doc, review) = app.pending_under("two").await;
    let (mut holder, pid) = hold_document(&app, &doc).await;
    let vote = approve_later(&app, &review, "ravi");
    someone_waits_for_a_lock(&app, pid).await;
    for sql in [
        "INSERT INTO review_votes (review_id, voter_id, stage, vote) VALUES ($1::uuid, 'rita', 0, 'APPROVE')",
        "UPDATE reviews SET stage = stage WHERE id = $1::uuid",
    ] {
        sqlx::query(sql).bind(&review).execute(&mut holder).await.unwrap();
    }
    sqlx::query("COMMIT").execute(&mut holder).await.unwrap();
    assert_eq!(vote.await.unwrap(), StatusCode::OK);
    assert_eq!(
        app.review_status_in_db(&review).await,
        "APPROVED",
        "two approvals of two"
    );
    assert_eq!(app.events_of(&review, "document.approved").await, 1);
    app.finish().await;
}

/// What the freshness check relies on, in PostgreSQL itself: a row locked after a wait for
/// another transaction's update comes back as that update left it, while a sub-select of
/// the same statement still reads the statement's snapshot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_locked_after_a_concurrent_update_differs_from_the_statements_snapshot() {
    let app = spawn_app().await;
    let (_, review) = app.pending_review().await;
    let check = "SELECT r.xmin::text = (SELECT r2.xmin::text FROM reviews r2 WHERE r2.id = r.id) \
                 FROM reviews r WHERE r.id = $1::uuid FOR UPDATE OF r";
    let alone: bool = sqlx::query_scalar(check)
        .bind(&review)
        .fetch_one(&app.pg)
        .await
        .unwrap();
    assert!(alone, "a row nobody touched is the snapshot's");
    let mut writer = PgConnection::connect(expose(&app.settings.database.url))
        .await
        .unwrap();
    let pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(&mut writer)
        .await
        .unwrap();
    sqlx::query("BEGIN").execute(&mut writer).await.unwrap();
    sqlx::query("UPDATE reviews SET stage = stage WHERE id = $1::uuid")
        .bind(&review)
        .execute(&mut writer)
        .await
        .unwrap();
    let (pg, id) = (app.pg.clone(), review.clone());
    let locked = tokio::spawn(async move {
        let fresh: bool = sqlx::query_scalar(check)
            .bind(id)
            .fetch_one(&pg)
            .await
            .unwrap();
        fresh
    });
    someone_waits_for_a_lock(&app, pid).await;
    sqlx::query("COMMIT").execute(&mut writer).await.unwrap();
    assert!(
        !locked.await.unwrap(),
        "the locked row is the writer's, not the snapshot's"
    );
    app.finish().await;
}
