//! Persistence. `pg` holds every SQL statement of the service (PostgreSQL is the only source
//! of truth); `mongo` is the MongoDB projection. Handlers never issue SQL themselves.

pub mod idempotency;
pub mod mongo;
pub mod outbox;
pub mod pg;
mod steps;

use chrono::{DateTime, Utc};
use serde::Serialize;
use uuid::Uuid;

use crate::domain::InvalidTransition;

/// A document row. `body` is the source of truth; MongoDB holds a projection of it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct DocumentRow {
    pub id: Uuid,
    pub title: String,
    pub body: String,
    pub status: String,
    pub version: i64,
    pub author_id: String,
    pub current_review_id: Option<Uuid>,
    pub fence_token: Option<i64>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A review of one submitted version of a document.
#[derive(Debug, Clone, Serialize, sqlx::FromRow, utoipa::ToSchema)]
#[schema(as = Review)]
pub struct ReviewRow {
    pub id: Uuid,
    pub document_id: Uuid,
    /// PENDING, APPROVED or REJECTED
    #[schema(example = "PENDING")]
    pub status: String,
    pub document_version: i64,
    pub submitted_by: String,
    pub submitted_at: DateTime<Utc>,
    pub decided_by: Option<String>,
    pub decided_at: Option<DateTime<Utc>>,
    pub comment: Option<String>,
    pub reason: Option<String>,
    #[serde(skip)]
    #[schema(ignore)]
    pub fence_token: Option<i64>,
}

/// Why a write did not happen. The first group are expected outcomes a client can act on.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("not found")]
    NotFound,
    #[error("{0}")]
    Forbidden(&'static str),
    #[error("the author of a document may not review it")]
    SelfReview,
    #[error(transparent)]
    InvalidState(#[from] InvalidTransition),
    #[error("review is already {0}")]
    ReviewDecided(String),
    #[error("the outer lock was lost before commit")]
    LockLost,
    #[error("the idempotency key was taken over by a retry")]
    KeyTakenOver,
    #[error("the row is locked by another transaction")]
    RowLocked,
    #[error("database unavailable")]
    Unavailable(#[source] sqlx::Error),
    /// The database stopped answering mid-transaction (for example a network partition:
    /// the server-side statement_timeout cannot fire then). The transaction is rolled back.
    #[error("database did not answer within {0:?}")]
    TimedOut(std::time::Duration),
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

impl From<sqlx::Error> for StoreError {
    fn from(e: sqlx::Error) -> Self {
        match &e {
            sqlx::Error::RowNotFound => StoreError::NotFound,
            sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::Io(_)
            | sqlx::Error::Tls(_)
            | sqlx::Error::Protocol(_)
            | sqlx::Error::WorkerCrashed => StoreError::Unavailable(e),
            sqlx::Error::Database(db) => match db.code().as_deref() {
                // lock_not_available (lock_timeout), deadlock, serialization failure
                Some("55P03") | Some("40P01") | Some("40001") => StoreError::RowLocked,
                // cannot_connect_now, admin_shutdown, crash_shutdown, too_many_connections,
                // query_canceled (statement_timeout), and every connection_exception (08xxx)
                Some("57P03") | Some("57P01") | Some("57P02") | Some("53300") | Some("57014") => {
                    StoreError::Unavailable(e)
                }
                Some(code) if code.starts_with("08") => StoreError::Unavailable(e),
                _ if db.constraint() == Some("reviews_one_pending_per_document") => {
                    StoreError::ReviewDecided("pending for this document".into())
                }
                _ => StoreError::Unexpected(anyhow::Error::new(e).context("database error")),
            },
            _ => StoreError::Unexpected(anyhow::Error::new(e).context("database error")),
        }
    }
}
