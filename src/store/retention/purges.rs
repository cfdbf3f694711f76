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

use super::session_lock::PURGE_LOCK;

use crate::store::error::StoreError;
use crate::store::pg::{PgStore, Statement};

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
    /// The purge lock on a session of its own, taken without waiting: None when another
    /// session holds it (another instance is purging).
    pub async fn purge_session(&self) -> Result<Option<PurgeSession>, StoreError> {
        Ok(self
            .locked_session(PURGE_LOCK)
            .await?
            .map(|s| PurgeSession {
                store: self.clone(),
                conn: s.conn,
            }))
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

    /// Deletes at most `limit` webhook deliveries delivered or failed (none pending) made
    /// more than `keep` ago, the oldest first; returns how many.
    pub async fn delete_old_deliveries(
        &mut self,
        keep: Duration,
        limit: i64,
    ) -> Result<u64, StoreError> {
        Ok(sqlx::query!(
            "DELETE FROM webhook_deliveries WHERE id = ANY(ARRAY( \
               SELECT id FROM webhook_deliveries WHERE state <> 'pending' \
                 AND created_at < now() - make_interval(secs => $1) \
               ORDER BY created_at LIMIT $2))",
            keep.as_secs_f64(),
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
