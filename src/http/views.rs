//! What the API returns: the JSON shapes of documents, reviews and transitions, kept apart
//! from the entities they show. Every handler renders its result with these, after the
//! locks are released, and an idempotent replay renders the recorded result the same way.

use chrono::{DateTime, Utc};
use serde::Serialize;
use uuid::Uuid;

use crate::domain::{preview_of, Document, Review, Transitioned};

/// A document. `body`, `preview` and `body_source` come with GET, create and edit.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(as = Document)]
pub struct DocumentView {
    pub id: Uuid,
    pub title: String,
    /// DRAFT, PENDING_REVIEW, APPROVED or REJECTED
    #[schema(example = "DRAFT")]
    pub status: String,
    pub version: i64,
    pub author_id: String,
    pub current_review_id: Option<Uuid>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preview: Option<String>,
    /// Where body and preview came from: "mongodb" when the projection holds this version,
    /// "postgresql" when it lags or is unreachable.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body_source: Option<&'static str>,
}

impl From<&Document> for DocumentView {
    fn from(d: &Document) -> Self {
        Self {
            id: d.id,
            title: d.title.clone(),
            status: d.status.as_str().to_string(),
            version: d.version,
            author_id: d.author_id.clone(),
            current_review_id: d.current_review_id,
            created_at: d.created_at,
            updated_at: d.updated_at,
            body: None,
            preview: None,
            body_source: None,
        }
    }
}

impl DocumentView {
    /// The view with body and preview, as create and edit answer (from PostgreSQL).
    pub fn with_body(d: &Document) -> Self {
        Self {
            preview: Some(preview_of(&d.body)),
            body: Some(d.body.clone()),
            ..Self::from(d)
        }
    }
}

/// A review of one submitted version of a document.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(as = Review)]
pub struct ReviewView {
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
    /// The document's title, in lists of reviews (`GET /api/v1/reviews`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub document_title: Option<String>,
}

impl From<&Review> for ReviewView {
    fn from(r: &Review) -> Self {
        Self {
            id: r.id,
            document_id: r.document_id,
            status: r.status.as_str().to_string(),
            document_version: r.document_version,
            submitted_by: r.submitted_by.clone(),
            submitted_at: r.submitted_at,
            decided_by: r.decided_by.clone(),
            decided_at: r.decided_at,
            comment: r.comment.clone(),
            reason: r.reason.clone(),
            document_title: None,
        }
    }
}

/// The document and review after a transition.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(as = Transition)]
pub struct TransitionView {
    pub document: DocumentView,
    pub review: ReviewView,
}

/// A page of reviews; pass `next_cursor` as `cursor` for the next one.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ReviewPage {
    pub items: Vec<ReviewView>,
    pub next_cursor: Option<String>,
}

/// A page of the caller's documents, newest first, without bodies; pass `next_cursor` as
/// `cursor` for the next one.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct DocumentPage {
    pub items: Vec<DocumentView>,
    pub next_cursor: Option<String>,
}

/// Every review of a document, oldest first.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ReviewHistory {
    pub items: Vec<ReviewView>,
}

impl TransitionView {
    /// What submit, approve and reject answer.
    pub fn of(t: &Transitioned) -> Self {
        Self {
            document: DocumentView::from(&t.document),
            review: ReviewView::from(&t.review),
        }
    }
}
