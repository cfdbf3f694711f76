//! The schema migrations: applied under sqlx's advisory lock, by the tables' owner
//! (`database.migrate_url`), with no statement or lock timeout.

use std::time::Duration;

use anyhow::Context;
use sqlx::{PgConnection, PgPool};

use crate::store::audit::chain::AuditChain;

/// Applies the migrations in `migrations/` to `pool`'s database, on one of its connections
/// (given back with its session settings as they were). The service itself migrates with
/// [`PgStore::migrate`], on a connection of its own.
pub async fn migrate(pool: &PgPool) -> anyhow::Result<()> {
    let mut conn = pool.acquire().await.context("could not reach PostgreSQL")?;
    let ran = run_migrations(&mut conn, None).await;
    sqlx::query!("RESET lock_timeout")
        .execute(&mut *conn)
        .await?;
    sqlx::query!("RESET statement_timeout")
        .execute(&mut *conn)
        .await?;
    sqlx::query!("RESET idle_in_transaction_session_timeout")
        .execute(&mut *conn)
        .await?;
    ran
}

/// How often an instance asks again for the migration lock while another one migrates.
const MIGRATION_LOCK_POLL: Duration = Duration::from_millis(200);

/// Applies the migrations on `conn` with no `statement_timeout` and no `lock_timeout`: a
/// migration takes as long as it takes, and another instance's migration is waited for
/// however long it runs.
///
/// The migration lock is sqlx's advisory lock (the same key, so older instances, which let
/// sqlx take it, still exclude this one), but taken with `pg_try_advisory_lock` at
/// intervals rather than sqlx's blocking `pg_advisory_lock`: a session blocked in a
/// statement holds a snapshot, which a `CREATE INDEX CONCURRENTLY` of the migrating
/// instance waits for while the blocked one waits for its lock: a deadlock. Between tries
/// a waiting session is idle and holds nothing.
///
/// With `chain`, the audit rows not linked yet are linked next, still under the lock, so
/// instances starting together do it once.
pub(super) async fn run_migrations(
    conn: &mut PgConnection,
    chain: Option<&AuditChain>,
) -> anyhow::Result<()> {
    sqlx::query!(
        "SELECT set_config('lock_timeout', '0', false) AS lock_timeout, \
         set_config('statement_timeout', '0', false) AS statement_timeout, \
         set_config('idle_in_transaction_session_timeout', '0', false) AS idle"
    )
    .fetch_one(&mut *conn)
    .await?;
    let database = sqlx::query_scalar!(r#"SELECT current_database() AS "name!""#)
        .fetch_one(&mut *conn)
        .await?;
    let lock = migration_lock_id(&database);
    let mut logged = false;
    while !sqlx::query_scalar!(r#"SELECT pg_try_advisory_lock($1) AS "taken!""#, lock)
        .fetch_one(&mut *conn)
        .await?
    {
        if !std::mem::replace(&mut logged, true) {
            tracing::info!("another instance is migrating the database: waiting for it");
        }
        tokio::time::sleep(MIGRATION_LOCK_POLL).await;
    }
    let mut migrator = sqlx::migrate!("./migrations");
    migrator.set_locking(false); // held above
                                 // A newer release may have migrated the database already (a rolling upgrade, or a
                                 // rollback of the binary): its migrations only add (expand/contract), so this release
                                 // runs on that schema instead of refusing to start over versions it does not know.
    migrator.set_ignore_missing(true);
    let mut ran = migrator
        .run(&mut *conn)
        .await
        .context("could not apply database migrations");
    if let (Ok(()), Some(chain)) = (&ran, chain) {
        ran = crate::store::audit::linking::link_after_migrations(conn, chain).await;
    }
    sqlx::query!("SELECT pg_advisory_unlock($1)", lock)
        .fetch_one(&mut *conn)
        .await?;
    ran
}

/// The advisory lock key sqlx's PostgreSQL migrator uses for `database` (sqlx-postgres
/// `generate_lock_id`: 0x3d32ad9e times the CRC-32/ISO-HDLC of the name).
pub fn migration_lock_id(database: &str) -> i64 {
    let mut crc = 0xFFFF_FFFFu32;
    for byte in database.bytes() {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            let carry = crc & 1 == 1;
            crc >>= 1;
            if carry {
                crc ^= 0xEDB8_8320;
            }
        }
    }
    0x3d32_ad9e * i64::from(!crc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_migration_lock_is_sqlx_s() {
        // CRC-32/ISO-HDLC of "123456789" is 0xCBF43926 (the catalogue's check value).
        assert_eq!(migration_lock_id("123456789"), 0x3d32_ad9e * 0xCBF4_3926);
    }
}
