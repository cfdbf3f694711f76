//! The rules of a document's life after its first review: the archive (terminal, taking a
//! pending review with it and the document out of the published set) and comments
//! (append-only, by anyone who may read the document, leaving its version as it is).
//! Revisions need no rule of their own: an edit of an approved document is an edit that
//! moves it to DRAFT (`state.rs`), and the approval of a revision publishes it (`votes.rs`).

use uuid::Uuid;

use super::events::{EventData, OutboxEntry};
use super::inputs::{ArchiveReason, CommentBody};
use super::model::{Document, Guard, LockScope, Reader, Review};
use super::plan::{
    audit, check_fence, transitioned, AuditEntry, DocumentChange, Plan, Publication, Refusal,
    ReviewChange, ReviewUpdate, ReviewWrite,
};
use super::state::{Action, ReviewStatus};

/// Archives `doc` (its author or an admin): ARCHIVED, nothing published any more, and
/// `pending` (the document's pending review, if it has one) withdrawn, its claims ended.
/// With `expected_version`, only the version the caller saw is archived: an archive that
/// lost a race with an approval is refused instead of archiving what it never saw.
pub(super) fn plan_archive(
    doc: &Document,
    pending: Option<&Review>,
    actor: Reader<'_>,
    reason: Option<ArchiveReason>,
    expected_version: Option<i64>,
    guard: Guard,
) -> Result<Plan, Refusal> {
    if doc.author_id != actor.id.as_str() && !actor.admin {
        return Err(Refusal::Forbidden(
            "only the author or an admin may archive a document",
        ));
    }
    check_fence(doc.fence_token, guard, LockScope::Document)?;
    let status = doc.status.apply(Action::Archive)?;
    if let Some(expected) = expected_version.filter(|v| *v != doc.version) {
        return Err(Refusal::VersionMoved {
            expected,
            actual: doc.version,
            status: doc.status,
        });
    }
    let withdrawn = pending
        .filter(|r| r.status == ReviewStatus::Pending && doc.current_review_id == Some(r.id));
    let review = withdrawn.map(|r| {
        ReviewChange::Write(ReviewWrite {
            id: r.id,
            vote: None,
            update: Some(ReviewUpdate {
                status: ReviewStatus::Withdrawn,
                stage: r.stage,
                decided_by: Some(actor.id.as_str().to_string()),
                comment: None,
                reason: None,
                fence_token: r.fence_token,
            }),
            end_claims: true,
        })
    });
    Ok(Plan {
        document: Some(DocumentChange {
            published: Publication::Withdraw,
            ..transitioned(doc, status, doc.current_review_id, guard)
        }),
        review,
        audit: audit("archive", doc.current_review_id, doc, status, guard),
        outbox: OutboxEntry::from(EventData::Archived {
            title: doc.title.clone(),
            archived_by: actor.id.as_str().to_string(),
            reason: reason.map(ArchiveReason::into_string),
            withdrawn_review_id: withdrawn.map(|r| r.id),
        }),
    })
}

/// A comment to insert (the store numbers it on its document).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewComment {
    pub id: Uuid,
    pub document_id: Uuid,
    pub review_id: Option<Uuid>,
    pub author_id: String,
    pub body: String,
}

/// What a comment writes: its row, the audit row, and `document.commented`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommentPlan {
    pub comment: NewComment,
    pub audit: AuditEntry,
    pub outbox: OutboxEntry,
}

/// A comment by `actor` on the locked `doc`, pointing at `review` when given: the review's
/// id and the document it belongs to (`None`: no such review). Anyone who may read the
/// document may comment, in any status but ARCHIVED.
pub fn plan_comment(
    doc: Option<&Document>,
    actor: Reader<'_>,
    id: Uuid,
    body: CommentBody,
    review: Option<(Uuid, Option<Uuid>)>,
) -> Result<CommentPlan, Refusal> {
    let doc = doc
        .filter(|d| d.readable_by(actor))
        .ok_or(Refusal::NotFound)?;
    let status = doc.status.apply(Action::Comment)?;
    let review_id = match review {
        None => None,
        Some((r, Some(of))) if of == doc.id => Some(r),
        Some((r, _)) => return Err(Refusal::ReviewOfAnotherDocument(r)),
    };
    let comment = NewComment {
        id,
        document_id: doc.id,
        review_id,
        author_id: actor.id.as_str().to_string(),
        body: body.into_string(),
    };
    Ok(CommentPlan {
        audit: AuditEntry {
            action: "comment",
            review_id,
            from_status: Some(doc.status),
            to_status: status,
            version: doc.version,
            lock_mode: Guard::Unlocked.lock_mode(),
            fence_token: None,
        },
        outbox: OutboxEntry::from(EventData::Commented {
            title: doc.title.clone(),
            comment_id: id,
            commented_by: comment.author_id.clone(),
            body: comment.body.clone(),
        }),
        comment,
    })
}

#[cfg(test)]
#[path = "lifecycle_tests.rs"]
mod tests;
