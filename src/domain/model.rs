//! The entities as PostgreSQL holds them, and the lock a change runs under. Plain data: the
//! store reads rows into these types and the rules in `rules.rs` judge them.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::state::{DocumentStatus, ReviewStatus};

/// A document. `body` is the source of truth; MongoDB holds a projection of it. (Serialized,
/// a document may leave its body out: it then reads back empty.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Document {
    pub id: Uuid,
    pub title: String,
    #[serde(default)]
    pub body: String,
    pub status: DocumentStatus,
    pub version: i64,
    pub author_id: String,
    pub current_review_id: Option<Uuid>,
    /// The highest fencing token of an outer lock that wrote this document.
    pub fence_token: Option<FencingToken>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A review of one submitted version of a document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Review {
    pub id: Uuid,
    pub document_id: Uuid,
    pub status: ReviewStatus,
    pub document_version: i64,
    pub submitted_by: String,
    pub submitted_at: DateTime<Utc>,
    pub decided_by: Option<String>,
    pub decided_at: Option<DateTime<Utc>>,
    pub comment: Option<String>,
    pub reason: Option<String>,
    pub fence_token: Option<FencingToken>,
}

/// What one transition (submit, approve, reject) wrote.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Transitioned {
    pub document: Document,
    pub review: Review,
}

/// Strictly increasing per lock key across acquisitions; stored on the rows a holder writes
/// so that a former holder can never write over a newer one. Stored as the `int8` it is.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, sqlx::Type, Serialize, Deserialize,
)]
#[sqlx(transparent)]
#[serde(transparent)]
pub struct FencingToken(i64);

impl FencingToken {
    pub fn new(v: i64) -> Self {
        Self(v)
    }
    pub fn value(self) -> i64 {
        self.0
    }
}

/// The outer lock a change runs under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Guard {
    /// The Redis lock is held, with its fencing token.
    Outer(FencingToken),
    /// Redis is unavailable: the row lock alone.
    RowLockOnly,
    /// Changes that never take the outer lock (create, edit).
    Unlocked,
}

impl Guard {
    /// How the audit trail names it.
    pub fn lock_mode(self) -> &'static str {
        match self {
            Guard::Outer(_) => "redis",
            Guard::RowLockOnly => "row_lock_only",
            Guard::Unlocked => "none",
        }
    }

    /// The fencing token a change under this guard writes with, if it has one.
    pub fn fence(self) -> Option<FencingToken> {
        match self {
            Guard::Outer(f) => Some(f),
            Guard::RowLockOnly | Guard::Unlocked => None,
        }
    }
}
