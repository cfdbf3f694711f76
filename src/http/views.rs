//! What the API returns: the JSON shapes of documents and reviews.

use chrono::{DateTime, Utc};
use serde::Serialize;
use uuid::Uuid;

use crate::store::{DocumentRow, ReviewRow};

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

impl From<&DocumentRow> for DocumentView {
    fn from(d: &DocumentRow) -> Self {
        Self {
            id: d.id,
            title: d.title.clone(),
            status: d.status.clone(),
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

/// The document and review after a transition.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(as = Transition)]
pub struct TransitionView {
    pub document: DocumentView,
    pub review: ReviewRow,
}

/// A page of reviews; pass `next_cursor` as `cursor` for the next one.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ReviewPage {
    pub items: Vec<ReviewRow>,
    pub next_cursor: Option<String>,
}

/// Every review of a document, oldest first.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ReviewHistory {
    pub items: Vec<ReviewRow>,
}
