//! What the API returns: the JSON shapes of documents, reviews and transitions, kept apart
//! from the entities they show. Every handler renders its result with these, after the
//! locks are released, and an idempotent replay renders the recorded result the same way.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::domain::{
    preview_of, Archived, Document, Policy, PostedComment, Review, Stage, Transitioned, VoteKind,
};

/// A document. `body`, `preview` and `body_source` come with GET, create and edit.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(as = Document)]
pub struct DocumentView {
    pub id: Uuid,
    pub title: String,
    /// DRAFT, PENDING_REVIEW, APPROVED, REJECTED, ARCHIVED or EXPIRED (nothing published)
    #[schema(example = "DRAFT")]
    pub status: String,
    pub version: i64,
    pub author_id: String,
    /// The key of the space it is in, for life.
    #[schema(example = "default")]
    pub space: String,
    pub current_review_id: Option<Uuid>,
    /// The review policy its next review follows.
    #[schema(example = "default")]
    pub policy: String,
    /// The version its last approval published (`GET /documents/{id}/published` serves it);
    /// null before the first approval and after an archive. Less than `version` while a
    /// revision is in progress.
    pub published_version: Option<i64>,
    /// Everyone who edited it since its last approval (its author among them if they did),
    /// in the order of their first edit. None of them may vote on the version under review.
    pub contributors: Vec<String>,
    /// When it is next due for re-verification (null: none, or one is open until its `due_at`).
    pub verify_by: Option<DateTime<Utc>>,
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
            space: d.space.clone(),
            current_review_id: d.current_review_id,
            policy: d.policy.clone(),
            published_version: d.published_version,
            contributors: d.contributors.clone(),
            verify_by: d.verify_by,
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

/// An approval in a stage.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ApprovalView {
    pub reviewer_id: String,
    pub at: DateTime<Utc>,
    pub comment: Option<String>,
}

/// A stage of the review's policy version, with the approvals cast in it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct StageView {
    pub name: String,
    pub required_approvals: u8,
    /// Who may vote in it (JWT `groups`); empty: any reviewer.
    pub eligible_groups: Vec<String>,
    pub approvals: Vec<ApprovalView>,
}

/// A live claim: a seat held until `expires_at`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ClaimView {
    pub reviewer_id: String,
    pub claimed_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
}

/// A review of one submitted version of a document.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(as = Review)]
pub struct ReviewView {
    pub id: Uuid,
    pub document_id: Uuid,
    /// PENDING, APPROVED, REJECTED or WITHDRAWN
    #[schema(example = "PENDING")]
    pub status: String,
    /// `publish` (a submit opened it) or `reverify` (the re-verification of the published
    /// version: approved, it stays published; rejected or not approved by `due_at`, expired).
    #[schema(example = "publish", pattern = "^(publish|reverify)$")]
    pub kind: &'static str,
    pub document_version: i64,
    pub policy: String,
    pub policy_version: i32,
    /// Index of the current stage in `stages` (the last one once decided).
    pub stage: i32,
    pub stages: Vec<StageView>,
    /// Live claims on the current stage, earliest expiry first.
    pub claims: Vec<ClaimView>,
    /// Approvals the current stage still needs (its seats, free or held).
    pub seats: i64,
    pub due_at: Option<DateTime<Utc>>,
    /// Still pending and past `due_at`.
    pub overdue: bool,
    pub submitted_by: String,
    pub submitted_at: DateTime<Utc>,
    pub decided_by: Option<String>,
    pub decided_at: Option<DateTime<Utc>>,
    pub comment: Option<String>,
    pub reason: Option<String>,
    /// Reviewers who rejected (at most one: a reject ends the review).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rejected_by: Vec<String>,
    /// The document's title, in lists of reviews (`GET /api/v1/reviews`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub document_title: Option<String>,
}

fn stage_view(r: &Review, index: usize, stage: &Stage) -> StageView {
    StageView {
        name: stage.name.clone(),
        required_approvals: stage.required_approvals,
        eligible_groups: stage.eligible_groups.clone(),
        approvals: r
            .votes
            .iter()
            .filter(|v| v.stage as usize == index && v.kind == VoteKind::Approve)
            .map(|v| ApprovalView {
                reviewer_id: v.voter_id.clone(),
                at: v.at,
                comment: v.comment.clone(),
            })
            .collect(),
    }
}

impl From<&Review> for ReviewView {
    fn from(r: &Review) -> Self {
        let now = Utc::now();
        let pending = r.status == crate::domain::ReviewStatus::Pending;
        let claims = if pending {
            crate::domain::votes::live_claims(r, now)
                .into_iter()
                .map(|c| ClaimView {
                    reviewer_id: c.reviewer_id.clone(),
                    claimed_at: c.claimed_at,
                    expires_at: c.expires_at,
                })
                .collect()
        } else {
            Vec::new()
        };
        Self {
            id: r.id,
            document_id: r.document_id,
            status: r.status.as_str().to_string(),
            kind: r.kind.as_str(),
            document_version: r.document_version,
            policy: r.policy.clone(),
            policy_version: r.policy_version,
            stage: r.stage,
            stages: r
                .stages
                .iter()
                .enumerate()
                .map(|(i, s)| stage_view(r, i, s))
                .collect(),
            claims,
            seats: if pending {
                crate::domain::votes::seats(r) as i64
            } else {
                0
            },
            due_at: r.due_at,
            overdue: r.overdue_at(now),
            submitted_by: r.submitted_by.clone(),
            submitted_at: r.submitted_at,
            decided_by: r.decided_by.clone(),
            decided_at: r.decided_at,
            comment: r.comment.clone(),
            reason: r.reason.clone(),
            rejected_by: r
                .votes
                .iter()
                .filter(|v| v.kind == VoteKind::Reject)
                .map(|v| v.voter_id.clone())
                .collect(),
            document_title: None,
        }
    }
}

/// A review policy: its current version.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(as = Policy)]
pub struct PolicyView {
    pub name: String,
    pub version: i32,
    pub stages: Vec<StageOfPolicy>,
    pub due_after_secs: Option<i32>,
    pub claim_ttl_secs: i32,
    /// An approval under this version is due for re-verification this long after it
    /// (null: never).
    pub reverify_after_secs: Option<i32>,
    /// How long a re-verification may stay undecided before its document expires.
    pub reverify_grace_secs: Option<i32>,
    pub updated_at: DateTime<Utc>,
}

/// A stage as a policy states it.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StageOfPolicy {
    #[schema(schema_with = super::fields::stage_name)]
    pub name: String,
    #[schema(minimum = 1, maximum = 5)]
    #[serde(deserialize_with = "approvals")]
    pub required_approvals: u8,
    #[serde(default)]
    #[schema(schema_with = super::fields::groups)]
    pub eligible_groups: Vec<String>,
}

/// 1 to 255 as a whole number (`2` or `2.0`); the rules check 1 to 5.
fn approvals<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u8, D::Error> {
    let n = serde_json::Number::deserialize(d)?;
    super::body::whole(&n)
        .and_then(|v| u8::try_from(v).ok())
        .ok_or_else(|| serde::de::Error::custom("required_approvals must be 1 to 5"))
}

impl From<&Policy> for PolicyView {
    fn from(p: &Policy) -> Self {
        Self {
            name: p.name.clone(),
            version: p.version,
            stages: p
                .stages
                .iter()
                .map(|s| StageOfPolicy {
                    name: s.name.clone(),
                    required_approvals: s.required_approvals,
                    eligible_groups: s.eligible_groups.clone(),
                })
                .collect(),
            due_after_secs: p.due_after_secs,
            claim_ttl_secs: p.claim_ttl_secs,
            reverify_after_secs: p.reverify_after_secs,
            reverify_grace_secs: p.reverify_grace_secs,
            updated_at: p.updated_at,
        }
    }
}

/// Every policy, by name.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct PolicyList {
    pub items: Vec<PolicyView>,
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
    pub next_cursor: Option<String>,
}

/// The published revision of a document.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct PublishedView {
    /// The document's id.
    pub id: Uuid,
    /// The published version.
    pub version: i64,
    pub title: String,
    pub body: String,
    pub preview: String,
    /// "mongodb" when the projection holds this revision, "postgresql" otherwise.
    pub body_source: &'static str,
    /// The document's status now (DRAFT or PENDING_REVIEW while a revision is in progress).
    pub status: String,
    /// The document's version now: its working copy's.
    pub working_version: i64,
}

/// A comment on a document; `seq` counts from 1 per document, oldest first.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CommentView {
    pub id: Uuid,
    pub document_id: Uuid,
    pub seq: i64,
    /// The review round it is about, if any.
    pub review_id: Option<Uuid>,
    pub author_id: String,
    pub body: String,
    pub created_at: DateTime<Utc>,
}

impl From<&PostedComment> for CommentView {
    fn from(c: &PostedComment) -> Self {
        Self {
            id: c.id,
            document_id: c.document_id,
            seq: c.seq,
            review_id: c.review_id,
            author_id: c.author_id.clone(),
            body: c.body.clone(),
            created_at: c.created_at,
        }
    }
}

/// A page of comments, oldest first; pass `next_cursor` as `cursor` for the next one.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CommentPage {
    pub items: Vec<CommentView>,
    pub next_cursor: Option<String>,
}

/// What an archive answers: the document, and the pending review it withdrew (or null).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ArchiveView {
    pub document: DocumentView,
    pub review: Option<ReviewView>,
}

impl ArchiveView {
    pub fn of(a: &Archived) -> Self {
        Self {
            document: DocumentView::from(&a.document),
            review: a.review.as_ref().map(ReviewView::from),
        }
    }
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
