//! What can go wrong talking to PostgreSQL. These are infrastructure failures only: a
//! change the rules refuse is a [`crate::domain::Refusal`], never a `StoreError`; a write
//! answers either as a [`WriteError`].

use std::time::Duration;

use crate::domain::Refusal;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The row lock was not granted within `lock_timeout` (or a deadlock or serialization
    /// failure was detected): another transaction holds the rows. Retryable.
    #[error("the row is locked by another transaction")]
    RowLocked,
    #[error("database unavailable")]
    Unavailable(#[source] sqlx::Error),
    /// The session is read-only (SQLSTATE 25006: a demoted primary behind a proxy, or
    /// `default_transaction_read_only`): no write can succeed on it. Retryable, on another
    /// connection; the store closes the connections that may be such sessions.
    #[error("database session is read-only")]
    ReadOnly(#[source] sqlx::Error),
    /// The database stopped answering mid-transaction (for example a network partition:
    /// the server-side statement_timeout cannot fire then). The transaction is rolled back.
    #[error("database did not answer within {0:?}")]
    TimedOut(Duration),
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

impl StoreError {
    /// The same failure for a second receiver of it (the callers of one shared scan): the
    /// same variant, so it answers the same status, with the cause kept as text (a driver
    /// error cannot be cloned).
    pub fn copy(&self) -> Self {
        match self {
            StoreError::RowLocked => StoreError::RowLocked,
            StoreError::TimedOut(d) => StoreError::TimedOut(*d),
            StoreError::Unavailable(e) => {
                StoreError::Unavailable(sqlx::Error::Io(std::io::Error::other(e.to_string())))
            }
            StoreError::ReadOnly(e) => StoreError::ReadOnly(sqlx::Error::Protocol(e.to_string())),
            StoreError::Unexpected(e) => StoreError::Unexpected(anyhow::anyhow!("{e:#}")),
        }
    }
}

impl From<sqlx::Error> for StoreError {
    fn from(e: sqlx::Error) -> Self {
        match &e {
            sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::Io(_)
            | sqlx::Error::Tls(_)
            | sqlx::Error::Protocol(_)
            | sqlx::Error::WorkerCrashed => StoreError::Unavailable(e),
            sqlx::Error::Database(db) => match db.code().as_deref() {
                // lock_not_available (lock_timeout), deadlock, serialization failure
                Some("55P03") | Some("40P01") | Some("40001") => StoreError::RowLocked,
                // read_only_sql_transaction
                Some("25006") => StoreError::ReadOnly(e),
                // cannot_connect_now, admin_shutdown, crash_shutdown, too_many_connections,
                // query_canceled (statement_timeout), and every connection_exception (08xxx)
                Some("57P03") | Some("57P01") | Some("57P02") | Some("53300") | Some("57014") => {
                    StoreError::Unavailable(e)
                }
                Some(code) if code.starts_with("08") => StoreError::Unavailable(e),
                _ => StoreError::Unexpected(anyhow::Error::new(e).context("database error")),
            },
            _ => StoreError::Unexpected(anyhow::Error::new(e).context("database error")),
        }
    }
}

/// What a failure tells the store about its connections: whether a session answered that
/// it is read-only. `PgStore::bounded` asks it of the error a transaction ends with.
pub trait StoreFailure {
    fn read_only(&self) -> bool;
}

impl StoreFailure for StoreError {
    fn read_only(&self) -> bool {
        matches!(self, StoreError::ReadOnly(_))
    }
}

impl StoreFailure for WriteError {
    fn read_only(&self) -> bool {
        matches!(self, WriteError::Store(e) if e.read_only())
    }
}

/// Why a write was not done: the rules refused it (nothing was written), or PostgreSQL
/// failed (the transaction is rolled back).
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error(transparent)]
    Refused(#[from] Refusal),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<anyhow::Error> for WriteError {
    fn from(e: anyhow::Error) -> Self {
        WriteError::Store(e.into())
    }
}

impl From<sqlx::Error> for WriteError {
    fn from(e: sqlx::Error) -> Self {
        WriteError::Store(e.into())
    }
}

/// Whether `e` is a violation of the named constraint (or unique index).
pub(crate) fn violates(e: &sqlx::Error, constraint: &str) -> bool {
    matches!(e, sqlx::Error::Database(db) if db.constraint() == Some(constraint))
}
