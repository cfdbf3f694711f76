//! What the votes (`votes.rs`) and re-verifications (`reverify.rs`) write alike: the review
//! row of a decision, the review's own fence after a vote, and the audit row of a change that
//! leaves the document's status and version as they are.

use uuid::Uuid;

use super::model::{Document, FencingToken, Guard, LockScope, Review};
use super::plan::{AuditEntry, NewVote, ReviewChange, ReviewUpdate, ReviewWrite};
use super::state::ReviewStatus;

/// The review's own fence after a vote under `guard`.
pub fn review_fence(review: &Review, guard: Guard) -> Option<FencingToken> {
    review.fence_token.max(guard.fence_of(LockScope::Review))
}

/// `review` decided (`status`) by `decided_by` with `vote` (none: the scheduler's), its
/// claims ended.
pub fn decided_review(
    review: &Review,
    vote: Option<NewVote>,
    status: ReviewStatus,
    decided_by: &str,
    (comment, reason): (Option<String>, Option<String>),
    guard: Guard,
) -> ReviewChange {
    ReviewChange::Write(ReviewWrite {
        id: review.id,
        vote,
        update: Some(ReviewUpdate {
            status,
            stage: review.stage,
            decided_by: Some(decided_by.to_string()),
            comment,
            reason,
            fence_token: review_fence(review, guard),
        }),
        end_claims: true,
    })
}

/// The audit row of a change about review `review_id` that leaves `doc`'s status and
/// version as they are.
pub fn audit_unchanged(
    action: &'static str,
    doc: &Document,
    review_id: Uuid,
    guard: Guard,
) -> AuditEntry {
    AuditEntry {
        action,
        review_id: Some(review_id),
        from_status: Some(doc.status),
        to_status: doc.status,
        version: doc.version,
        lock_mode: guard.lock_mode(),
        fence_token: guard.fence(),
    }
}
