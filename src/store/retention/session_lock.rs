//! Background work that one instance at a time does (the purge, the audit checkpoints):
//! a session of its own holding a session-level advisory lock in the two-key space (class
//! 7002; the outbox's takes use the one-key space), taken without waiting. The lock is
//! released with the session, however its instance ends.

use sqlx::{Connection, PgConnection};

use crate::store::error::StoreError;
use crate::store::pg::{PgStore, Statement};

/// The purge lock (`Retention`).
pub const PURGE_LOCK: (i32, i32) = (7002, 1);
/// The checkpoint lock: held by the instance writing a checkpoint round.
pub const CHECKPOINT_LOCK: (i32, i32) = (7002, 2);

/// A session of its own holding an advisory lock; the lock goes with the session
/// ([`LockedSession::close`], or the connection's end).
pub struct LockedSession {
    pub(crate) conn: PgConnection,
}

impl PgStore {
    /// Opens a session with the pool's settings (its `statement_timeout` and `lock_timeout`
    /// included) and takes `lock` there without waiting: None when another session holds
    /// it (another instance is doing that work).
    pub async fn locked_session(
        &self,
        lock: (i32, i32),
    ) -> Result<Option<LockedSession>, StoreError> {
        let opts = (*self.pool.connect_options()).clone();
        let dial = self.pool.options().get_acquire_timeout();
        let mut conn = tokio::time::timeout(dial, PgConnection::connect_with(&opts))
            .await
            .map_err(|_| StoreError::TimedOut(dial))?
            .map_err(StoreError::from)?;
        if self.background {
            // The whole session is background work's (`store::scope`).
            sqlx::query!("SELECT set_config('kh.background', 'on', false)")
                .fetch_one(&mut conn)
                .bounded(self)
                .await?;
        }
        let held = sqlx::query_scalar!(
            r#"SELECT pg_try_advisory_lock($1, $2) AS "held!""#,
            lock.0,
            lock.1
        )
        .fetch_one(&mut conn)
        .bounded(self)
        .await;
        match held {
            Ok(true) => Ok(Some(LockedSession { conn })),
            Ok(false) => {
                let _ = conn.close().await;
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }
}

impl LockedSession {
    /// Ends the session, which releases the lock.
    pub async fn close(self) {
        let _ = self.conn.close().await;
    }
}
