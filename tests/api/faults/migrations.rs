//! Migrations run on a connection of their own, without the pool's `statement_timeout`: two
//! instances started at once against a fresh database both come up, each waiting for the
//! migration lock (sqlx's advisory lock) however long another holds it, and neither
//! deadlocking with the other's `CREATE INDEX CONCURRENTLY`.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::Value;
use sqlx::{Connection, PgConnection};

use crate::support::app::{spawn_app, spawn_app_with, AppOptions};
use crate::support::inspect::wait_for;
use kh_review_testkit::database::{create_database, test_database_name};
use kh_review_testkit::stores::pg_url;

async fn admin() -> PgConnection {
    PgConnection::connect(&pg_url()).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_started_at_once_on_a_fresh_database_both_come_up() {
    let owner = spawn_app().await; // the other stores, and a clean-up
                                   // A new, empty database, named like the tests' own (so a run that dies leaves it to the
                                   // next run's clean-up).
    let fresh = test_database_name();
    let url = create_database(&fresh, None).await.unwrap();
    // Another instance's long migration, as the two instances see it: sqlx's lock, held.
    let mut holder = PgConnection::connect(&url).await.unwrap();
    let lock = kh_review::store::migration_lock_id(&fresh);
    sqlx::query("SELECT pg_advisory_lock($1)")
        .bind(lock)
        .execute(&mut holder)
        .await
        .unwrap();
    let statement_timeout = Duration::from_secs(1);
    let options = || AppOptions {
        database_url: Some(url.clone()),
        share_with: Some(owner.shared.clone()),
        configure: Some(Box::new(move |s| {
            s.database.migrate_on_start = true;
            s.database.statement_timeout = statement_timeout;
        })),
        ..Default::default()
    };
    let release = async {
        wait_for(
            "both instances to ask for the migration lock",
            Duration::from_secs(20),
            || async {
                // Each has asked for the lock (and asks again at intervals).
                let waiting: i64 = sqlx::query_scalar(
                    "SELECT count(*) FROM pg_stat_activity \
                     WHERE datname = $1 AND query LIKE '%pg_try_advisory_lock%'",
                )
                .bind(&fresh)
                .fetch_one(&owner.pg)
                .await
                .unwrap();
                (waiting == 2).then_some(())
            },
        )
        .await;
        // The point of the test: they wait longer than a pooled session's statement_timeout.
        tokio::time::sleep(statement_timeout * 2).await;
        sqlx::query("SELECT pg_advisory_unlock($1)")
            .bind(lock)
            .execute(&mut holder)
            .await
            .unwrap();
    };
    // Both start at once (a failed start panics in spawn_app_with).
    let (a, b, ()) = tokio::join!(
        spawn_app_with(options()),
        spawn_app_with(options()),
        release
    );
    for app in [&a, &b] {
        let r = app.client.get(app.url("/readyz")).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["checks"]["postgresql"]["status"], "up", "{v}");
    }
    let files = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/migrations"))
        .unwrap()
        .count() as i64;
    let applied: i64 = sqlx::query_scalar("SELECT count(*) FROM _sqlx_migrations WHERE success")
        .fetch_one(&mut holder)
        .await
        .unwrap();
    assert_eq!(applied, files, "every migration applied, once");
    holder.close().await.unwrap();
    a.stop().await;
    b.stop().await;
    let drop = sqlx::AssertSqlSafe(format!("DROP DATABASE {fresh} WITH (FORCE)"));
    sqlx::query(drop).execute(&mut admin().await).await.unwrap();
    owner.finish().await;
}
