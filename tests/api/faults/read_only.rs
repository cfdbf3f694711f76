//! PostgreSQL answers that the session is read-only (SQLSTATE 25006, as a demoted primary
//! behind a proxy does): the client gets the 503 of PostgreSQL being unavailable, nothing
//! changes, and no connection opened before that answer is handed out again, so the next
//! requests succeed on fresh sessions once writes are possible again.

use std::time::Duration;

use reqwest::StatusCode;
use sqlx::PgPool;
use uuid::Uuid;

use crate::support::app::{spawn_app, spawn_app_with, AppOptions};
use crate::support::inspect::{expect_error, wait_for};
use kh_review_testkit::stores::{pg_admin, pg_url, with_db};
use sqlx::Connection;

/// The pids and start times (as epoch seconds) of the sessions named `application`.
async fn sessions(pg: &PgPool, application: &str) -> Vec<(i32, f64)> {
    sqlx::query_as(
        "SELECT pid, EXTRACT(EPOCH FROM backend_start)::float8 FROM pg_stat_activity \
         WHERE application_name = $1",
    )
    .bind(application)
    .fetch_all(pg)
    .await
    .unwrap()
}

/// Sets (`on`) or resets the default of new sessions of `db`, from the server's own
/// database (whose sessions it does not touch).
async fn read_only_default(db: &str, on: bool) {
    let mut admin = pg_admin().await.unwrap();
    let sql = if on {
        format!("ALTER DATABASE \"{db}\" SET default_transaction_read_only = on")
    } else {
        format!("ALTER DATABASE \"{db}\" RESET default_transaction_read_only")
    };
    // `db` is the test kit's own database name (letters, digits, underscores).
    sqlx::query(sqlx::AssertSqlSafe(sql))
        .execute(&mut admin)
        .await
        .unwrap();
    let _ = admin.close().await;
}

/// The test's database turns read-only for new sessions; an instance that opens its
/// sessions then answers an approval with `503 DEPENDENCY_UNAVAILABLE` and changes
/// nothing. Writes are allowed again: its next approval succeeds, on a session opened
/// after that (today's code keeps the read-only session in the pool and answers `500`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_session_is_a_503_and_its_connection_is_not_reused() {
    let owner = spawn_app().await;
    let (doc_id, review_id) = owner.pending_review().await;
    let db = owner.shared.db_name.clone();
    let before = owner.count("SELECT count(*) FROM audit_log").await;
    read_only_default(&db, true).await;
    // Its sessions are named, to find them in pg_stat_activity; all opened from now on.
    let application = format!("kh-read-only-{}", Uuid::new_v4().simple());
    let url = format!("{}?application_name={application}", with_db(&pg_url(), &db));
    let app = spawn_app_with(AppOptions {
        database_url: Some(url),
        share_with: Some(owner.shared.clone()),
        run_dispatcher: false,
        ..Default::default()
    })
    .await;
    let r = app.approve(&review_id, &app.reviewer()).await;
    assert_eq!(
        r.headers().get("retry-after").map(|v| v.to_str().unwrap()),
        Some("2")
    );
    let v = expect_error(r, StatusCode::SERVICE_UNAVAILABLE, "DEPENDENCY_UNAVAILABLE").await;
    assert_eq!(v["message"], "PostgreSQL is unavailable; try again shortly");
    let status = owner.review_status_in_db(&review_id).await;
    assert_eq!(status, "PENDING", "nothing changed");
    assert_eq!(owner.count("SELECT count(*) FROM audit_log").await, before);
    let read_only = sessions(&owner.pg, &application).await;
    // Taken before the reset: a session the instance's background work opens between the
    // reset and a clock read after it is writable and may stay in its pool. One opened
    // between this clock read and the reset is read-only, and refused when it is made.
    let writable_since: f64 =
        sqlx::query_scalar("SELECT EXTRACT(EPOCH FROM clock_timestamp())::float8")
            .fetch_one(&owner.pg)
            .await
            .unwrap();
    read_only_default(&db, false).await;
    let r = app.approve(&review_id, &app.reviewer()).await;
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap());
    // The instance's sessions now are all new ones: none that answered read-only (nor any
    // opened before the database was writable again) is left in its pool.
    wait_for(
        "the read-only sessions to be closed",
        Duration::from_secs(5),
        || async {
            let now = sessions(&owner.pg, &application).await;
            let fresh = now.iter().all(|(pid, started)| {
                *started > writable_since && !read_only.iter().any(|(old, _)| old == pid)
            });
            (fresh && !now.is_empty()).then_some(())
        },
    )
    .await;
    app.stop().await;
    owner.outbox_drained(Duration::from_secs(15)).await;
    let version = owner.document_version_in_db(&doc_id).await;
    assert_eq!(version, 3, "one approval");
    owner.finish().await;
}
