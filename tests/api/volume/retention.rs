//! Retention: a backlog of 50,000 expired outbox rows and idempotency records is purged in
//! batches under a `statement_timeout` that one unbatched DELETE of it cannot meet, while
//! recent, undelivered and parked rows stay; and two purgers never run at once (the purge
//! lock is held, seen in `pg_locks`, and the second round is skipped).

use std::time::Duration;

use kh_review::store::{PgStore, PURGE_LOCK};
use kh_review::usecases::{PurgeRound, Retention, RetentionSettings};
use sqlx::PgPool;
use tokio_util::sync::CancellationToken;

use crate::support::app::{spawn_app_with, AppOptions, TestApp};
use crate::support::inspect::wait_for;

/// The expired backlog: delivered rows and idempotency records, each table this many.
const EXPIRED: i64 = 50_000;
/// Rows per purge statement: a hundredth of the backlog.
const BATCH: i64 = 500;
/// The purger's `statement_timeout` is this fraction of what one unbatched DELETE of the
/// backlog takes here, measured first: that DELETE cannot meet it, and a batch (a
/// hundredth of it, plus what a session's first statement costs) meets it many times
/// over, however fast or loaded the machine is.
const TIMEOUT_SHARE: u32 = 4;

/// The one unbatched DELETE of every expired row the purger used to run.
const UNBATCHED: &str =
    "DELETE FROM outbox WHERE done_at IS NOT NULL AND done_at < now() - interval '168 hours'";

/// `n` delivered rows of `document`, done `hours_ago`.
async fn delivered(pg: &PgPool, document: &str, n: i64, hours_ago: i64) {
    sqlx::query(
        "INSERT INTO outbox (event_id, document_id, document_version, event_type, routing_key, \
                             payload, projected_at, published_at, done_at) \
         SELECT gen_random_uuid(), $1::uuid, 2, 'document.submitted', 'document.submitted', \
                jsonb_build_object('n', g, 'pad', repeat('x', 200)), t, t, t \
         FROM generate_series(1, $2) g, LATERAL (SELECT now() - make_interval(hours => $3::int)) AS x(t)",
    )
    .bind(document)
    .bind(n)
    .bind(hours_ago)
    .execute(pg)
    .await
    .unwrap();
}

/// `n` idempotency records that expired an hour ago.
async fn expired_keys(pg: &PgPool, n: i64) {
    sqlx::query(
        "INSERT INTO idempotency_keys (owner_id, key, fingerprint, state, response_status, \
                                       response_body, claim, created_at, locked_until, expires_at) \
         SELECT 'owner-' || (g % 50), 'key-' || g || '-' || gen_random_uuid(), 'f', 'DONE', 200, \
                '{}'::jsonb, gen_random_uuid(), now() - interval '25 hours', \
                now() - interval '25 hours', now() - interval '1 hour' \
         FROM generate_series(1, $1) g",
    )
    .bind(n)
    .execute(pg)
    .await
    .unwrap();
}

/// A store like the app's purger's (background work's), with the `statement_timeout`
/// `bound`.
fn short_store(app: &TestApp, bound: Duration) -> PgStore {
    let mut db = app.settings.database.clone();
    db.statement_timeout = bound;
    PgStore::from_settings(&db).unwrap().background()
}

fn retention(store: PgStore, pause: Duration) -> Retention {
    let keep = Duration::from_secs(168 * 3600);
    Retention::new(
        store,
        RetentionSettings {
            keep,
            every: Duration::from_secs(3600),
            batch: BATCH,
            pause,
        },
    )
}

/// A parked row of `document`, created long before the retention: never purged.
async fn parked(pg: &PgPool, document: &str) {
    sqlx::query(
        "INSERT INTO outbox (event_id, document_id, document_version, event_type, routing_key, \
                             payload, created_at, attempts, next_attempt_at, parked_at, parked_reason) \
         VALUES (gen_random_uuid(), $1::uuid, 3, 'document.approved', 'document.approved', '{}', \
                 now() - interval '300 hours', 60, 'infinity', now() - interval '299 hours', 'test')",
    )
    .bind(document)
    .execute(pg)
    .await
    .unwrap();
}

/// How long the one unbatched DELETE takes here (rolled back).
async fn unbatched_delete_takes(pg: &PgPool) -> Duration {
    let mut tx = pg.begin().await.unwrap();
    let started = std::time::Instant::now();
    let deleted = sqlx::query(UNBATCHED).execute(&mut *tx).await.unwrap();
    let took = started.elapsed();
    assert_eq!(deleted.rows_affected(), EXPIRED as u64);
    tx.rollback().await.unwrap();
    took
}

/// The same DELETE under `statement_timeout` `bound`: it is cancelled.
async fn unbatched_delete_times_out(pg: &PgPool, bound: Duration) {
    let mut tx = pg.begin().await.unwrap();
    let set = format!("SET LOCAL statement_timeout = '{}ms'", bound.as_millis());
    sqlx::raw_sql(sqlx::AssertSqlSafe(set))
        .execute(&mut *tx)
        .await
        .unwrap();
    let one = sqlx::query(UNBATCHED).execute(&mut *tx).await;
    let code = match &one {
        Err(sqlx::Error::Database(e)) => e.code().map(|c| c.to_string()),
        other => panic!("the unbatched DELETE should time out after {bound:?}, got {other:?}"),
    };
    assert_eq!(code.as_deref(), Some("57014"), "query_canceled: {one:?}");
    tx.rollback().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_backlog_is_purged_in_batches_within_the_statement_timeout() {
    let app = spawn_app_with(AppOptions {
        run_dispatcher: false,
        ..Default::default()
    })
    .await;
    let doc = app.create_document("Kept", "body").await.id.to_string();
    delivered(&app.pg, &doc, EXPIRED, 200).await;
    delivered(&app.pg, &doc, 30, 1).await;
    parked(&app.pg, &doc).await;
    expired_keys(&app.pg, EXPIRED).await;
    sqlx::query("VACUUM ANALYZE outbox, idempotency_keys")
        .execute(&app.pg)
        .await
        .unwrap();
    // The faster of two runs (the first warms the cache).
    let full = unbatched_delete_takes(&app.pg)
        .await
        .min(unbatched_delete_takes(&app.pg).await);
    let bound = (full / TIMEOUT_SHARE).max(Duration::from_millis(2));
    println!("one unbatched DELETE of {EXPIRED} rows: {full:?}; the purger's statement_timeout: {bound:?}");
    unbatched_delete_times_out(&app.pg, bound).await;

    let purger = retention(short_store(&app, bound), Duration::from_millis(5));
    let round = purger.run_once(&CancellationToken::new()).await.unwrap();
    let PurgeRound::Ran {
        outbox_rows,
        idempotency_records,
        batches,
        ..
    } = round
    else {
        panic!("the only purger was skipped: {round:?}");
    };
    assert_eq!(
        (outbox_rows, idempotency_records),
        (EXPIRED as u64, EXPIRED as u64)
    );
    assert!(batches >= 2 * (EXPIRED / BATCH) as u64, "{batches} batches");
    let left = "SELECT count(*) FROM outbox WHERE done_at < now() - interval '168 hours'";
    assert_eq!(app.count(left).await, 0);
    let recent =
        "SELECT count(*) FROM outbox WHERE payload ? 'pad' AND done_at > now() - interval '2 hours'";
    assert_eq!(
        app.count(recent).await,
        30,
        "rows within the retention stay"
    );
    let parked_left = "SELECT count(*) FROM outbox WHERE parked_at IS NOT NULL AND done_at IS NULL";
    assert_eq!(
        app.count(parked_left).await,
        1,
        "a parked row is never purged"
    );
    assert_eq!(app.count("SELECT count(*) FROM idempotency_keys").await, 0);
    // The teardown counts undelivered rows: the parked one was the test's own.
    sqlx::query("DELETE FROM outbox WHERE parked_at IS NOT NULL")
        .execute(&app.pg)
        .await
        .unwrap();
    app.finish().await;
}

/// Whether a session holds the purge lock of the test's database now (the apps of other
/// tests, running meanwhile, hold theirs in their own databases).
async fn purge_lock_held(pg: &PgPool) -> bool {
    let held: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted \
         AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) \
         AND classid = $1::int::oid AND objid = $2::int::oid AND objsubid = 2",
    )
    .bind(PURGE_LOCK.0)
    .bind(PURGE_LOCK.1)
    .fetch_one(pg)
    .await
    .unwrap();
    held > 0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_purgers_never_run_at_once() {
    let app = spawn_app_with(AppOptions {
        run_dispatcher: false,
        // The app's own purger stays out of the way: the test's two are the ones compared.
        configure: Some(Box::new(|s| {
            s.outbox.purge_interval = Duration::from_secs(3600)
        })),
        ..Default::default()
    })
    .await;
    let doc = app.create_document("Purged", "body").await.id.to_string();
    delivered(&app.pg, &doc, 10 * BATCH, 200).await;
    // Two instances' purgers; the first pauses between its batches long enough to be seen.
    let bound = Duration::from_secs(5);
    let first = retention(short_store(&app, bound), Duration::from_millis(200));
    let second = retention(short_store(&app, bound), Duration::from_millis(5));
    assert!(!purge_lock_held(&app.pg).await);
    let running = tokio::spawn(async move { first.run_once(&CancellationToken::new()).await });
    wait_for(
        "the first purger to hold the purge lock",
        Duration::from_secs(10),
        || async { purge_lock_held(&app.pg).await.then_some(()) },
    )
    .await;
    let meanwhile = second.run_once(&CancellationToken::new()).await.unwrap();
    assert_eq!(
        meanwhile,
        PurgeRound::Skipped,
        "the lock is held: no second purger"
    );
    let done = running.await.unwrap().unwrap();
    assert!(
        matches!(done, PurgeRound::Ran { outbox_rows, .. } if outbox_rows == 10 * BATCH as u64),
        "{done:?}"
    );
    // Released with its session: the server drops the lock as that session ends.
    wait_for("the purge lock to go", Duration::from_secs(10), || async {
        (!purge_lock_held(&app.pg).await).then_some(())
    })
    .await;
    // Free again: the second purger runs its round (nothing left to delete).
    let after = second.run_once(&CancellationToken::new()).await.unwrap();
    assert!(
        matches!(after, PurgeRound::Ran { outbox_rows: 0, .. }),
        "{after:?}"
    );
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_service_purges_in_the_background_and_counts_what_it_deleted() {
    let app = spawn_app_with(AppOptions {
        run_dispatcher: false,
        configure: Some(Box::new(|s| {
            s.outbox.purge_interval = Duration::from_millis(200);
            s.outbox.purge_batch = 300;
        })),
        ..Default::default()
    })
    .await;
    let doc = app.create_document("Purged", "body").await.id.to_string();
    delivered(&app.pg, &doc, 1_000, 200).await;
    expired_keys(&app.pg, 700).await;
    let purged = |table: &'static str| format!(r#"kh_retention_purged_total{{table="{table}"}}"#);
    wait_for(
        "the purger to delete the expired rows",
        Duration::from_secs(20),
        || async {
            let outbox = app.metric(&purged("outbox")).await;
            let keys = app.metric(&purged("idempotency_keys")).await;
            (outbox == Some(1_000.0) && keys == Some(700.0)).then_some(())
        },
    )
    .await;
    let left = "SELECT count(*) FROM outbox WHERE done_at < now() - interval '168 hours'";
    assert_eq!(app.count(left).await, 0);
    assert_eq!(app.count("SELECT count(*) FROM idempotency_keys").await, 0);
    // A round is counted once it has closed its session, after its last batch was counted:
    // waited for, not read at once.
    let ran = r#"kh_retention_rounds_total{outcome="ran"}"#;
    wait_for(
        "the round counted as ran",
        Duration::from_secs(10),
        || async { (app.metric(ran).await.unwrap_or(0.0) >= 1.0).then_some(()) },
    )
    .await;
    app.finish().await;
}
