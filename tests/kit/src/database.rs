//! Fresh PostgreSQL databases on the server at `pg_url()`: a migrated template made once per
//! process, copies of it named per test, empty ones, and dropping them after.

use std::future::Future;
use std::time::{Duration, Instant};

// The statements built here name databases, which cannot be bound: every name is made in this
// file (a prefix, the tag filtered to letters and digits, a UUID) or read from pg_database
// by that prefix, so AssertSqlSafe marks them.
use sqlx::{AssertSqlSafe, Connection as _, PgPool};
use tokio::sync::{Mutex, OnceCell};
use uuid::Uuid;

use crate::stores::{env_or, pg_admin, pg_url, with_db};

/// `KH_TEST_TAG` (letters and digits, empty by default) keeps the databases of test runs
/// from different checkouts apart on one server: each tag has its own template and only
/// clears its own leftovers.
pub fn tag() -> String {
    env_or("KH_TEST_TAG", "")
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect::<String>()
        .to_lowercase()
}

/// A new name for a test's database, `kh_t_<tag>_<uuid>`: one a run that dies leaves behind
/// is dropped by the next run's template (see [`migrated_template`]).
pub fn test_database_name() -> String {
    format!("kh_t_{}_{}", tag(), Uuid::new_v4().simple())
}

/// Creates the database `name`, empty or as a copy of `template`; returns its URL.
pub async fn create_database(name: &str, template: Option<&str>) -> anyhow::Result<String> {
    let mut admin = pg_admin().await?;
    let created = match template {
        None => sqlx::query(AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&mut admin)
            .await
            .map(|_| ()),
        Some(tpl) => {
            // PostgreSQL refuses to copy a template that another CREATE DATABASE is copying
            // at the same moment, so the copies of this process take turns.
            let _turn = TEMPLATE_COPY.lock().await;
            sqlx::query(AssertSqlSafe(format!(
                "CREATE DATABASE {name} TEMPLATE {tpl}"
            )))
            .execute(&mut admin)
            .await
            .map(|_| ())
        }
    };
    created.map_err(|e| anyhow::anyhow!("could not create database {name}: {e}"))?;
    admin.close().await?;
    Ok(with_db(&pg_url(), name))
}

/// How long [`drop_database`] waits for an autovacuum worker to leave the database.
const AUTOVACUUM_GRACE: Duration = Duration::from_secs(30);

/// Drops the database `name` if it exists, ending its sessions. An autovacuum worker that
/// is working on it (a database just filled, as the volume test's or the benchmark's)
/// belongs to no role, and a role that is no superuser may not end it: `WITH (FORCE)` then
/// refuses (42501), so the drop is tried again until the worker is done.
pub async fn drop_database(name: &str) -> anyhow::Result<()> {
    let mut admin = pg_admin().await?;
    let deadline = Instant::now() + AUTOVACUUM_GRACE;
    loop {
        let dropped = sqlx::query(AssertSqlSafe(format!(
            "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
        )))
        .execute(&mut admin)
        .await;
        match dropped {
            Err(sqlx::Error::Database(e))
                if e.code().as_deref() == Some("42501") && Instant::now() < deadline =>
            {
                let left = deadline.saturating_duration_since(Instant::now());
                tokio::time::sleep(left.min(Duration::from_millis(200))).await;
            }
            done => {
                done.map_err(|e| anyhow::anyhow!("could not drop database {name}: {e}"))?;
                break;
            }
        }
    }
    admin.close().await?;
    Ok(())
}

static TEMPLATE: OnceCell<String> = OnceCell::const_new();
static TEMPLATE_COPY: Mutex<()> = Mutex::const_new(());

/// The migrated template of this process's tests, `kh_review_test_template<tag>`, made on
/// first use (and then `migrate` applied to it): any earlier one is dropped, and so are the
/// test databases of this tag that earlier runs left behind (none of their sessions is
/// open).
pub async fn migrated_template<F, Fut>(migrate: F) -> anyhow::Result<&'static str>
where
    F: FnOnce(PgPool) -> Fut,
    Fut: Future<Output = anyhow::Result<()>>,
{
    let name = TEMPLATE
        .get_or_try_init(|| async {
            let name = format!("kh_review_test_template{}", tag());
            drop_database(&name).await?;
            create_database(&name, None).await?;
            drop_leftovers().await?;
            let pool = PgPool::connect(&with_db(&pg_url(), &name)).await?;
            migrate(pool.clone()).await?;
            pool.close().await;
            anyhow::Ok(name)
        })
        .await?;
    Ok(name)
}

/// Test databases of this tag left by runs that died before their teardown.
async fn drop_leftovers() -> anyhow::Result<()> {
    let mut admin = pg_admin().await?;
    let stale: Vec<String> = sqlx::query_scalar(
        "SELECT datname FROM pg_database WHERE datname LIKE $1 \
         AND NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.datname = pg_database.datname)",
    )
    .bind(format!("kh\\_t\\_{}\\_%", tag()))
    .fetch_all(&mut admin)
    .await?;
    for db in stale {
        let _ = sqlx::query(AssertSqlSafe(format!("DROP DATABASE IF EXISTS {db}")))
            .execute(&mut admin)
            .await;
    }
    admin.close().await?;
    Ok(())
}

/// A fresh test database copied from the migrated template (see [`migrated_template`],
/// which `migrate` makes on first use); returns its name. Drop it with [`drop_database`].
pub async fn fresh_database<F, Fut>(migrate: F) -> anyhow::Result<String>
where
    F: FnOnce(PgPool) -> Fut,
    Fut: Future<Output = anyhow::Result<()>>,
{
    let template = migrated_template(migrate).await?;
    let name = test_database_name();
    create_database(&name, Some(template)).await?;
    Ok(name)
}
