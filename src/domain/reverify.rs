//! Re-verification: an approval holds for its policy's `reverify_after_secs`. When the
//! published version comes due (`verify_by`), the scheduler opens a review of kind
//! `reverify` on it ([`plan_due`]): on an approved document, which stays `APPROVED` and
//! published, and as well on one whose revision is being drafted (`DRAFT`, `REJECTED`: the
//! published version is what is re-verified; a revision under review is left to its own
//! review). Its stages are voted like any review's (`votes.rs`); the decision is judged
//! here: the approval that completes it re-verifies the published version ([`verified`]:
//! `verify_by` moves on, no new version), a reject expires it ([`expired`]: nothing
//! published; an approved document becomes `EXPIRED`, a revision stays as it is). A
//! re-verification nobody decided by its deadline expires it too ([`plan_lapse`]). While
//! one is open the document can be edited but not submitted
//! ([`check_no_open_reverification`]): one review at a time.

use chrono::{DateTime, SecondsFormat, Utc};
use uuid::Uuid;

use super::decisions::{audit_unchanged, decided_review};
use super::events::{EventData, OutboxEntry};
use super::model::{Document, Guard, Review};
use super::plan::{
    audit, transitioned, DocumentChange, NewVote, OpenReview, Plan, Publication, Refusal,
    ReviewChange, Verify,
};
use super::policy::{Policy, DEFAULT_REVERIFY_GRACE_SECS};
use super::state::{Action, DocumentStatus, ReviewKind, ReviewStatus};

/// Who opens re-verifications and expires the documents nobody re-verified.
pub const SCHEDULER: &str = "kh-review";

fn stamp(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// `review` is an open re-verification of `doc`.
fn reverifying(doc: &Document, review: &Review) -> bool {
    review.kind == ReviewKind::Reverify
        && review.status == ReviewStatus::Pending
        && doc.current_review_id == Some(review.id)
}

/// Refuses a submit of `doc` while `current` (its current review, when the store read it)
/// is an open re-verification.
pub fn check_no_open_reverification(
    doc: &Document,
    current: Option<&Review>,
) -> Result<(), Refusal> {
    match current {
        Some(r) if reverifying(doc, r) => Err(Refusal::Reverifying {
            until: r.due_at.unwrap_or(doc.updated_at),
        }),
        _ => Ok(()),
    }
}

/// The re-verification of `doc` (locked) that came due by `now`, under the current version
/// of its `policy`, as review `review_id`: `None` unless it is published, due, and no
/// review of a revision is pending.
pub fn plan_due(
    doc: &Document,
    policy: &Policy,
    review_id: Uuid,
    now: DateTime<Utc>,
) -> Option<Plan> {
    let due = doc.verify_by.is_some_and(|t| t <= now);
    let published = doc.published_version?;
    if !due || doc.status == DocumentStatus::PendingReview {
        return None;
    }
    let grace = policy
        .reverify_grace_secs
        .unwrap_or(DEFAULT_REVERIFY_GRACE_SECS);
    let deadline = now + chrono::Duration::seconds(i64::from(grace));
    Some(Plan {
        document: Some(DocumentChange {
            version: doc.version,
            verify: Verify::Clear,
            ..transitioned(doc, doc.status, Some(review_id), Guard::Unlocked)
        }),
        review: Some(ReviewChange::Open(OpenReview {
            id: review_id,
            kind: ReviewKind::Reverify,
            document_version: published,
            submitted_by: SCHEDULER.to_string(),
            policy: policy.name.clone(),
            policy_version: policy.version,
            due_after_secs: Some(grace),
            deadline: Some(deadline),
            fence_token: None,
        })),
        audit: audit_unchanged("reverification_due", doc, review_id, Guard::Unlocked),
        outbox: OutboxEntry::from(EventData::ReverificationDue {
            title: doc.title.clone(),
            published_version: published,
            deadline: stamp(deadline),
        }),
    })
}

/// The expiry of `doc` whose re-verification `review` nobody decided by its deadline:
/// `None` unless it is still open and past it at `now`.
pub fn plan_lapse(doc: &Document, review: &Review, now: DateTime<Utc>) -> Option<Plan> {
    let deadline = review.due_at?;
    if !reverifying(doc, review) || deadline > now || doc.published_version.is_none() {
        return None;
    }
    let reason = format!("nobody re-verified it by {}", stamp(deadline));
    Some(expired(
        doc,
        review,
        None,
        SCHEDULER,
        reason,
        Guard::Unlocked,
    ))
}

/// The decision of a re-verification by `vote`'s voter: the approval that completes it
/// (`Ok(comment)`) or a reject (`Err(reason)`), at `now`.
pub fn decided(
    doc: &Document,
    review: &Review,
    vote: NewVote,
    guard: Guard,
    outcome: Result<Option<String>, String>,
    now: DateTime<Utc>,
) -> Plan {
    match outcome {
        Ok(comment) => verified(doc, review, vote, comment, guard, now),
        Err(reason) => {
            let voter = vote.voter_id.clone();
            expired(doc, review, Some(vote), &voter, reason, guard)
        }
    }
}

/// The document re-verified: published as it is, due again after its policy's
/// `reverify_after_secs`.
fn verified(
    doc: &Document,
    review: &Review,
    vote: NewVote,
    comment: Option<String>,
    guard: Guard,
    now: DateTime<Utc>,
) -> Plan {
    let verify = Verify::after(now, review.reverify_after_secs);
    let verified_by = vote.voter_id.clone();
    Plan {
        document: Some(DocumentChange {
            version: doc.version,
            verify,
            ..transitioned(doc, doc.status, doc.current_review_id, Guard::Unlocked)
        }),
        review: Some(decided_review(
            review,
            Some(vote),
            ReviewStatus::Approved,
            &verified_by,
            (comment.clone(), None),
            guard,
        )),
        audit: audit_unchanged("verify", doc, review.id, guard),
        outbox: OutboxEntry::from(EventData::Verified {
            title: doc.title.clone(),
            verified_by,
            comment,
            verify_by: match verify {
                Verify::At(t) => Some(stamp(t)),
                _ => None,
            },
        }),
    }
}

/// The published version expired: nothing published any more. An approved document becomes
/// `EXPIRED` (revised and submitted like a rejected one); a revision being drafted stays as
/// it is.
fn expired(
    doc: &Document,
    review: &Review,
    vote: Option<NewVote>,
    by: &str,
    reason: String,
    guard: Guard,
) -> Plan {
    let status = doc.status.apply(Action::Expire).unwrap_or(doc.status);
    Plan {
        document: Some(DocumentChange {
            published: Publication::Withdraw,
            verify: Verify::Clear,
            ..transitioned(doc, status, doc.current_review_id, guard)
        }),
        review: Some(decided_review(
            review,
            vote,
            ReviewStatus::Rejected,
            by,
            (None, Some(reason.clone())),
            guard,
        )),
        audit: audit("expire", Some(review.id), doc, status, guard),
        outbox: OutboxEntry::from(EventData::Expired {
            title: doc.title.clone(),
            expired_version: doc.published_version.unwrap_or(doc.version),
            expired_by: by.to_string(),
            reason,
        }),
    }
}

#[cfg(test)]
mod tests;
