//! Retention statements: delivered outbox rows past their retention and expired
//! idempotency records, deleted in bounded batches on a session of their own that holds
//! the purge lock, so that one instance purges at a time.
//!
//! Each batch is one short statement that finds its rows through an index in the order of
//! that index (`outbox_done_at`, `idempotency_keys_expiry`) and deletes them by key, so a
//! backlog of any size is worked off within `statement_timeout`, batch after batch. Never
//! deletes an undelivered row: a parked row has no `done_at`.

use std::time::Duration;

use sqlx::{Connection, PgConnection};

use super::error::StoreError;
use super::pg::{PgStore, Statement};

/// The purge lock: a session-level advisory lock in its two-key space (class 7002, object
/// 1), apart from the one-key locks of the outbox's takes. Held by the session that
/// purges, and so released when that session ends, whatever becomes of its instance.
pub const PURGE_LOCK: (i32, i32) = (7002, 1);

/// Whether `e` is a statement cancelled by `statement_timeout` (SQLSTATE 57014): a batch too
/// large for the moment (a loaded server), which a smaller one may pass.
pub fn cancelled_by_statement_timeout(e: &StoreError) -> bool {
    matches!(e, StoreError::Unavailable(sqlx::Error::Database(db)) if db.code().as_deref() == Some("57014"))
}

/// A session of its own holding the purge lock. The lock is released with the session
/// ([`PurgeSession::close`], or the connection's end).
pub struct PurgeSession {
    store: PgStore,
    conn: PgConnection,
}

impl PgStore {
    /// Opens a session with the pool's settings (its `statement_timeout` and `lock_timeout`
    /// included) and takes the purge lock there without waiting: None when another session
    /// holds it (another instance is purging).
    pub async fn purge_session(&self) -> Result<Option<PurgeSession>, StoreError> {
        let opts = (*self.pool.connect_options()).clone();
        let dial = self.pool.options().get_acquire_timeout();
        let mut conn = tokio::time::timeout(dial, PgConnection::connect_with(&opts))
            .await
            .map_err(|_| StoreError::TimedOut(dial))?
            .map_err(StoreError::from)?;
        let held = sqlx::query_scalar!(
            r#"SELECT pg_try_advisory_lock($1, $2) AS "held!""#,
            PURGE_LOCK.0,
            PURGE_LOCK.1
        )
        .fetch_one(&mut conn)
        .bounded(self)
        .await;
        match held {
            Ok(true) => Ok(Some(PurgeSession {
                store: self.clone(),
                conn,
            })),
            Ok(false) => {
                let _ = conn.close().await;
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }
}

impl PurgeSession {
    /// Deletes at most `limit` delivered rows (or skipped ones) done more than `keep` ago,
    /// the oldest first; returns how many.
    pub async fn delete_delivered(
        &mut self,
        keep: Duration,
        limit: i64,
    ) -> Result<u64, StoreError> {
        Ok(sqlx::query!(
            "DELETE FROM outbox WHERE id = ANY(ARRAY( \
               SELECT id FROM outbox WHERE done_at IS NOT NULL \
                 AND done_at < now() - make_interval(secs => $1) \
               ORDER BY done_at LIMIT $2))",
            keep.as_secs_f64(),
            limit
        )
        .execute(&mut self.conn)
        .bounded(&self.store)
        .await?
        .rows_affected())
    }

    /// Deletes at most `limit` expired idempotency records, the oldest first; returns how
    /// many.
    pub async fn delete_expired_keys(&mut self, limit: i64) -> Result<u64, StoreError> {
        Ok(sqlx::query!(
            "DELETE FROM idempotency_keys WHERE ctid = ANY(ARRAY( \
               SELECT ctid FROM idempotency_keys WHERE expires_at < now() \
               ORDER BY expires_at LIMIT $1))",
            limit
        )
        .execute(&mut self.conn)
        .bounded(&self.store)
        .await?
        .rows_affected())
    }

    /// Ends the session, which releases the purge lock.
    pub async fn close(self) {
        let _ = self.conn.close().await;
    }
}
