//! A vote locks its review and document in one statement only when that is as good as two
//! (`store/reviews/locking.rs`): it never waits inside that statement, it skips the document
//! first (a skipped document leaves the review unlocked, so the wait that follows keeps the
//! one lock order), and a review row touched since its snapshot is read again. These pin
//! each part, and the invariant the freshness check rests on; and, since a vote may wait
//! here for long, that its claim on its outbox row is measured from its write.

use std::future::Future;
use std::time::Duration;

use kh_review::web::auth::Role;
use reqwest::{Response, StatusCode};
use sqlx::{Connection, PgConnection};

use kh_review::web::test_hooks::SKIP_DISPATCH_HEADER;

use crate::support::app::{spawn_app, spawn_app_with, AppOptions, TestApp};
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
pub(crate) async fn hold_document(app: &TestApp, document: &str) -> (PgConnection, i32) {
    let mut c = PgConnection::connect(app.owner_url()).await.unwrap();
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
pub(crate) async fn someone_waits_for_a_lock(app: &TestApp, holder: i32) {
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

/// Approves `review` as `voter` (a reviewer by its token) in a task of its own.
fn approve_later(app: &TestApp, review: &str, voter: &str) -> tokio::task::JoinHandle<StatusCode> {
    approve_later_as(app, review, app.token(voter, &[Role::Reviewer]))
}

/// Approves `review` with `token` in a task of its own.
pub(crate) fn approve_later_as(
    app: &TestApp,
    review: &str,
    token: String,
) -> tokio::task::JoinHandle<StatusCode> {
    let client = app.client.clone();
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
    let mut writer = PgConnection::connect(app.owner_url()).await.unwrap();
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

/// A request's claim on its outbox row runs from the write, not from the transaction's
/// start: a vote that waited for its row lock longer than `outbox.inline_lease_ms` still
/// commits a claim no dispatcher may take yet (measured from BEGIN, it committed a claim
/// already over, and a dispatcher could publish the event beside the request).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_inline_claim_runs_from_the_write_not_from_the_start_of_its_transaction() {
    let app = spawn_app_with(AppOptions {
        run_dispatcher: false,
        inline_lease_ms: 1000,
        configure: Some(Box::new(|s| {
            s.database.lock_timeout = Duration::from_secs(10);
        })),
        ..Default::default()
    })
    .await;
    let (doc, review) = app.pending_review().await;
    let (mut holder, pid) = hold_document(&app, &doc).await;
    let (client, token) = (app.client.clone(), app.reviewer());
    let url = app.url(&format!("/api/v1/reviews/{review}/approve"));
    let vote = tokio::spawn(async move {
        let r = client
            .post(url)
            .bearer_auth(token)
            .json(&serde_json::json!({}));
        let r = r.header(SKIP_DISPATCH_HEADER, "true").send().await.unwrap();
        r.status()
    });
    someone_waits_for_a_lock(&app, pid).await;
    wait_for(
        "the waiting transaction to outlive the lease",
        Duration::from_secs(10),
        || async {
            let old: Option<bool> = sqlx::query_scalar(
                "SELECT bool_or(clock_timestamp() - xact_start > interval '1500 ms') \
             FROM pg_stat_activity WHERE datname = current_database() \
             AND wait_event_type = 'Lock' AND pid <> $1",
            )
            .bind(pid)
            .fetch_one(&app.pg)
            .await
            .unwrap();
            old.unwrap_or(false).then_some(())
        },
    )
    .await;
    sqlx::query("ROLLBACK").execute(&mut holder).await.unwrap();
    assert_eq!(vote.await.unwrap(), StatusCode::OK);
    let (claimed, decided): (bool, bool) = sqlx::query_as(
        "SELECT o.claimed_until > r.decided_at, r.decided_at IS NOT NULL \
         FROM outbox o JOIN reviews r ON r.document_id = o.document_id \
         WHERE r.id = $1::uuid AND o.event_type = 'document.approved'",
    )
    .bind(&review)
    .fetch_one(&app.pg)
    .await
    .unwrap();
    assert!(decided, "the vote decided the review");
    assert!(
        claimed,
        "the row's claim was over before its transaction committed"
    );
    app.stop().await; // the row stays undelivered on purpose
}

/// The database holds that rule for any writer (a trigger): a vote or claim written,
/// changed or deleted by SQL that leaves the review row alone still rewrites it.
#[tokio::test]
async fn any_write_of_a_vote_or_claim_rewrites_its_review_row_in_the_database() {
    let app = spawn_app().await;
    let (_, review) = app.pending_review().await;
    for (what, sql) in [
        (
            "a claim inserted",
            "INSERT INTO review_claims (review_id, reviewer_id, stage, claimed_at, expires_at) \
             VALUES ($1::uuid, 'by-sql', 0, now(), now() + interval '1 hour')",
        ),
        (
            "a claim changed",
            "UPDATE review_claims SET expires_at = expires_at + interval '1 minute' \
             WHERE review_id = $1::uuid",
        ),
        (
            "a claim deleted",
            "DELETE FROM review_claims WHERE review_id = $1::uuid",
        ),
        (
            "a vote inserted",
            "INSERT INTO review_votes (review_id, voter_id, stage, vote) \
             VALUES ($1::uuid, 'by-sql', 0, 'APPROVE')",
        ),
        (
            "a vote changed",
            "UPDATE review_votes SET comment = 'edited' WHERE review_id = $1::uuid",
        ),
        (
            "a vote deleted",
            "DELETE FROM review_votes WHERE review_id = $1::uuid",
        ),
    ] {
        let before = version_of(&app, &review).await;
        let done = sqlx::query(sql)
            .bind(&review)
            .execute(&app.pg)
            .await
            .unwrap();
        assert_eq!(done.rows_affected(), 1, "{what}");
        assert_ne!(
            version_of(&app, &review).await,
            before,
            "{what}: row left as it was"
        );
    }
    app.finish().await;
}
