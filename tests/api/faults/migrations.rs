//! Migrations run on a connection of their own, without the pool's `statement_timeout`:
//! three instances started at once against a fresh database all come up, each waiting for
//! the migration lock (sqlx's advisory lock) however long another holds it, none
//! deadlocking with another's `CREATE INDEX CONCURRENTLY`, and each migration is applied
//! once. An instance of an older release starts on a schema a newer release migrated.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::Value;
use sqlx::{Connection, PgConnection};

use crate::support::app::{spawn_app, spawn_app_with, AppOptions};
use crate::support::binary::Build;
use crate::support::inspect::{each_migration_applied_once, wait_for};
use kh_review_testkit::database::{create_database, drop_database, test_database_name};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_instances_started_at_once_on_a_fresh_database_all_come_up() {
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
            "every instance to ask for the migration lock",
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
                (waiting == 3).then_some(())
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
    // All start at once (a failed start panics in spawn_app_with).
    let (a, b, c, ()) = tokio::join!(
        spawn_app_with(options()),
        spawn_app_with(options()),
        spawn_app_with(options()),
        release
    );
    for app in [&a, &b, &c] {
        let r = app.client.get(app.url("/readyz")).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["checks"]["postgresql"]["status"], "up", "{v}");
    }
    each_migration_applied_once(&mut holder, &Build::this().migrations).await;
    holder.close().await.unwrap();
    for app in [a, b, c] {
        app.stop().await;
    }
    // A session the instances closed may still be exiting (or autovacuum working there): the
    // kit's drop waits for them, within a deadline.
    drop_database(&fresh).await.unwrap();
    owner.finish().await;
}

/// A rolling upgrade's other half: a newer release migrated the database (a version this
/// build does not have), and an instance of this build starts on it (a restart during the
/// upgrade, or a rollback of the binary) instead of refusing the unknown version.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_starts_on_a_schema_a_newer_release_migrated() {
    let owner = spawn_app().await;
    // The newer release's migration, as sqlx records it (it only adds: expand/contract).
    sqlx::query("CREATE TABLE from_a_newer_release (id bigint)")
        .execute(&owner.pg)
        .await
        .unwrap();
    sqlx::query(
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
         VALUES (29991231000000, 'from a newer release', true, '\\x00'::bytea, 1)",
    )
    .execute(&owner.pg)
    .await
    .unwrap();
    // On the same database, migrating at start (as every instance does by default).
    let older = spawn_app_with(AppOptions {
        share_with: Some(owner.shared.clone()),
        ..Default::default()
    })
    .await; // panics when the start is refused
    assert!(older.settings.database.migrate_on_start);
    older.approved_review().await;
    older.stop().await;
    owner.finish().await;
}
