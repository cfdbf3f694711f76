//! The rule of the archive: terminal, taking a pending review with it and the document out
//! of the published set. Revisions need no rule of their own: an edit of an approved
//! document is an edit that moves it to DRAFT (`state.rs`), and the approval of a revision
//! publishes it (`votes.rs`); their tests are here, beside the archive's.

use super::events::{EventData, OutboxEntry};
use super::inputs::ArchiveReason;
use super::model::{Document, Guard, LockScope, Reader, Review};
use super::plan::{
    audit, check_fence, transitioned, DocumentChange, Plan, Publication, Refusal, ReviewChange,
    ReviewUpdate, ReviewWrite,
};
use super::state::{Action, ReviewStatus};

/// Archives `doc` (its author or an admin: `rules::plan` checks): ARCHIVED, nothing published any more, and
/// `pending` (the document's pending review, if it has one) withdrawn, its claims ended.
/// The archive of a document never submitted moves the projection and is audited, but
/// publishes no `document.archived`: nobody else ever heard of the document.
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
            verify: super::plan::Verify::Clear,
            ..transitioned(doc, status, doc.current_review_id, guard)
        }),
        review,
        audit: audit("archive", doc.current_review_id, doc, status, guard),
        outbox: OutboxEntry::from(EventData::Archived {
            title: doc.title.clone(),
            archived_by: actor.id.as_str().to_string(),
            reason: reason.map(ArchiveReason::into_string),
            withdrawn_review_id: withdrawn.map(|r| r.id),
        })
        .about(doc),
    })
}

#[cfg(test)]
mod tests;
