//! The rules of every change to a document, in one pure function: [`plan`] takes the rows
//! the store has locked, the actor, the command and the lock it runs under, and returns
//! either what to write ([`Plan`]) or why not ([`Refusal`]). No I/O happens here; the store
//! loads the rows, calls [`plan`], and writes the plan in the same transaction.
//!
//! The order of the checks is part of the contract: a holder whose lock moved on is told so
//! before anything else is judged, and the author of a document learns it may not review it
//! before learning the review is already decided.

use uuid::Uuid;

use super::events::{EventData, EventType, OutboxEntry};
use super::inputs::{Comment, DocumentBody, DocumentTitle, RejectReason, UserId};
use super::model::{Document, FencingToken, Guard, Review};
use super::state::{Action, DocumentStatus, InvalidTransition, ReviewStatus};

/// A reviewer's decision. An approval carries an optional comment, a rejection a reason:
/// an approval with a reason cannot be written down.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Approve(Option<Comment>),
    Reject(RejectReason),
}

impl Decision {
    pub fn action(&self) -> Action {
        match self {
            Decision::Approve(_) => Action::Approve,
            Decision::Reject(_) => Action::Reject,
        }
    }
}

/// What the actor asks of a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// New title and/or body (at least one; the HTTP layer checks that).
    Edit {
        title: Option<DocumentTitle>,
        body: Option<DocumentBody>,
    },
    /// Open a new review, with this id, for the document's next version.
    Submit { new_review_id: Uuid },
    /// Decide the locked review.
    Decide(Decision),
}

/// The rows the store locked for the command (`None`: no such row).
#[derive(Debug, Clone, Default)]
pub struct Locked {
    pub document: Option<Document>,
    /// The review being decided; always `None` for edits and submits.
    pub review: Option<Review>,
}

/// Why a command may not happen. Nothing was written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("no such document or review")]
    NotFound,
    #[error("{0}")]
    Forbidden(&'static str),
    #[error("the author of a document may not review it")]
    SelfReview,
    #[error(transparent)]
    InvalidState(#[from] InvalidTransition),
    #[error("the review is already {}", .0.as_str())]
    ReviewNotPending(ReviewStatus),
    #[error("the review is not the document's current review")]
    NotCurrentReview,
    #[error("the document already has a pending review")]
    AlreadyPending,
    /// A newer holder of the outer lock wrote the document: this holder's lock moved on.
    #[error("the outer lock moved on to a newer holder")]
    StaleFence,
}

/// The new state of the document row. `None` title or body: unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocumentChange {
    pub id: Uuid,
    pub title: Option<DocumentTitle>,
    pub body: Option<DocumentBody>,
    pub status: DocumentStatus,
    pub version: i64,
    pub current_review_id: Option<Uuid>,
    pub fence_token: Option<FencingToken>,
}

/// A new pending review, opened by a submit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenReview {
    pub id: Uuid,
    pub document_version: i64,
    pub submitted_by: String,
    pub fence_token: Option<FencingToken>,
}

/// The decision written on a pending review.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecideReview {
    pub id: Uuid,
    pub status: ReviewStatus,
    pub decided_by: String,
    pub comment: Option<String>,
    pub reason: Option<String>,
    pub fence_token: Option<FencingToken>,
}

/// The review row a command writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReviewChange {
    Open(OpenReview),
    Decide(DecideReview),
}

/// The audit row of a change (actor and request id are added by the store).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditEntry {
    pub action: &'static str,
    pub review_id: Option<Uuid>,
    pub from_status: Option<DocumentStatus>,
    pub to_status: DocumentStatus,
    pub version: i64,
    pub lock_mode: &'static str,
    pub fence_token: Option<FencingToken>,
}

/// Everything one change writes, in one transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub document: DocumentChange,
    pub review: Option<ReviewChange>,
    pub audit: AuditEntry,
    pub outbox: OutboxEntry,
}

/// A new document: DRAFT, version 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewDocument {
    pub id: Uuid,
    pub title: DocumentTitle,
    pub body: DocumentBody,
    pub status: DocumentStatus,
    pub version: i64,
    pub audit: AuditEntry,
    pub outbox: OutboxEntry,
}

/// The plan of a create. Anyone with the author role may create; there is nothing to refuse.
pub fn plan_create(id: Uuid, title: DocumentTitle, body: DocumentBody) -> NewDocument {
    let status = DocumentStatus::Draft;
    NewDocument {
        id,
        title,
        body,
        status,
        version: 1,
        audit: AuditEntry {
            action: "create",
            review_id: None,
            from_status: None,
            to_status: status,
            version: 1,
            lock_mode: Guard::Unlocked.lock_mode(),
            fence_token: None,
        },
        outbox: OutboxEntry {
            event: EventType::Created,
            data: EventData::Empty {},
        },
    }
}

/// Judges `command` by `actor` on the `locked` rows under `guard`: what to write, or why not.
pub fn plan(
    locked: &Locked,
    actor: &UserId,
    command: Command,
    guard: Guard,
) -> Result<Plan, Refusal> {
    let doc = locked.document.as_ref().ok_or(Refusal::NotFound)?;
    match command {
        Command::Edit { title, body } => plan_edit(doc, actor, title, body),
        Command::Submit { new_review_id } => plan_submit(doc, actor, new_review_id, guard),
        Command::Decide(decision) => {
            let review = locked.review.as_ref().ok_or(Refusal::NotFound)?;
            plan_decision(doc, review, actor, decision, guard)
        }
    }
}

fn plan_edit(
    doc: &Document,
    actor: &UserId,
    title: Option<DocumentTitle>,
    body: Option<DocumentBody>,
) -> Result<Plan, Refusal> {
    if doc.author_id != actor.as_str() {
        return Err(Refusal::Forbidden("only the author may edit a document"));
    }
    let status = doc.status.apply(Action::Edit)?;
    let version = doc.version + 1;
    Ok(Plan {
        document: DocumentChange {
            id: doc.id,
            title,
            body,
            status,
            version,
            current_review_id: doc.current_review_id,
            fence_token: doc.fence_token,
        },
        review: None,
        audit: audit("edit", None, doc, status, Guard::Unlocked),
        outbox: OutboxEntry {
            event: EventType::Updated,
            data: EventData::Empty {},
        },
    })
}

fn plan_submit(
    doc: &Document,
    actor: &UserId,
    review_id: Uuid,
    guard: Guard,
) -> Result<Plan, Refusal> {
    if doc.author_id != actor.as_str() {
        return Err(Refusal::Forbidden("only the author may submit a document"));
    }
    let status = doc.status.apply(Action::Submit)?;
    check_fence(doc, guard)?;
    let version = doc.version + 1;
    Ok(Plan {
        document: transitioned(doc, status, Some(review_id), guard),
        review: Some(ReviewChange::Open(OpenReview {
            id: review_id,
            document_version: version,
            submitted_by: actor.as_str().to_string(),
            fence_token: guard.fence(),
        })),
        audit: audit("submit", Some(review_id), doc, status, guard),
        outbox: OutboxEntry {
            event: EventType::Submitted,
            data: EventData::Submitted {
                title: doc.title.clone(),
                submitted_by: actor.as_str().to_string(),
            },
        },
    })
}

fn plan_decision(
    doc: &Document,
    review: &Review,
    actor: &UserId,
    decision: Decision,
    guard: Guard,
) -> Result<Plan, Refusal> {
    check_fence(doc, guard)?;
    if doc.author_id == actor.as_str() {
        return Err(Refusal::SelfReview);
    }
    let action = decision.action();
    let decided = review
        .status
        .apply(action)
        .ok_or(Refusal::ReviewNotPending(review.status))?;
    let status = doc.status.apply(action)?;
    if doc.current_review_id != Some(review.id) {
        return Err(Refusal::NotCurrentReview);
    }
    let (comment, reason, event, data) = match decision {
        Decision::Approve(comment) => {
            let comment = comment.map(Comment::into_string).filter(|c| !c.is_empty());
            let data = EventData::Approved {
                title: doc.title.clone(),
                comment: comment.clone(),
            };
            (comment, None, EventType::Approved, data)
        }
        Decision::Reject(reason) => {
            let reason = reason.into_string();
            let data = EventData::Rejected {
                title: doc.title.clone(),
                reason: reason.clone(),
            };
            (None, Some(reason), EventType::Rejected, data)
        }
    };
    Ok(Plan {
        document: transitioned(doc, status, doc.current_review_id, guard),
        review: Some(ReviewChange::Decide(DecideReview {
            id: review.id,
            status: decided,
            decided_by: actor.as_str().to_string(),
            comment,
            reason,
            fence_token: guard.fence(),
        })),
        audit: audit(action.as_str(), Some(review.id), doc, status, guard),
        outbox: OutboxEntry { event, data },
    })
}

/// A holder whose fencing token is older than the one stored lost its lock to a newer holder.
fn check_fence(doc: &Document, guard: Guard) -> Result<(), Refusal> {
    match (doc.fence_token, guard.fence()) {
        (Some(stored), Some(mine)) if mine < stored => Err(Refusal::StaleFence),
        _ => Ok(()),
    }
}

/// The document after a transition: next status and version, the highest fence seen.
fn transitioned(
    doc: &Document,
    status: DocumentStatus,
    current_review_id: Option<Uuid>,
    guard: Guard,
) -> DocumentChange {
    DocumentChange {
        id: doc.id,
        title: None,
        body: None,
        status,
        version: doc.version + 1,
        current_review_id,
        fence_token: doc.fence_token.max(guard.fence()),
    }
}

fn audit(
    action: &'static str,
    review_id: Option<Uuid>,
    before: &Document,
    to_status: DocumentStatus,
    guard: Guard,
) -> AuditEntry {
    AuditEntry {
        action,
        review_id,
        from_status: Some(before.status),
        to_status,
        version: before.version + 1,
        lock_mode: guard.lock_mode(),
        fence_token: guard.fence(),
    }
}

#[cfg(test)]
#[path = "rules_tests.rs"]
mod tests;
