//! The rule of comments: append-only, by anyone who may read the document, leaving its
//! version as it is.

use uuid::Uuid;

use super::events::{EventData, OutboxEntry};
use super::inputs::CommentBody;
use super::model::{Document, Guard, Reader};
use super::plan::{AuditEntry, Refusal};
use super::state::Action;

/// A comment to insert (the store numbers it on its document).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewComment {
    pub id: Uuid,
    pub document_id: Uuid,
    pub review_id: Option<Uuid>,
    pub author_id: String,
    pub body: String,
}

/// What a comment writes: its row, the audit row, and `document.commented` (published once
/// the document was ever submitted: a private draft's comments are audited only).
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
        })
        .about(doc),
        comment,
    })
}

#[cfg(test)]
mod tests;
