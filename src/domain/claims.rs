//! The rules of claims and due dates. A stage has as many seats as approvals it still
//! needs; a claim takes one until it expires (`claim_ttl_secs` after it was taken or
//! renewed). An expired claim holds nothing: it is replaced by the next claim, with no
//! sweeper. A pending review past its due date gets one overdue mark and event.

use chrono::{DateTime, Duration, Utc};

use super::events::{EventData, OutboxEntry};
use super::inputs::UserId;
use super::model::{Claim, Document, Review};
use super::plan::{AuditEntry, Refusal};
use super::votes::{check_seat, check_voter, live_claims, Voter};

/// What a claim change writes: the claim to insert or replace, or the one to delete, and
/// its audit row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimChange {
    /// Insert, or replace the caller's (expired or live) claim.
    Take(Claim),
    /// Delete the claim of this reviewer.
    End { reviewer_id: String },
    /// Nothing to write (giving back a claim one does not hold).
    Nothing,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimPlan {
    pub change: ClaimChange,
    pub audit: Option<AuditEntry>,
}

fn claim_audit(action: &'static str, doc: &Document, review: &Review) -> AuditEntry {
    AuditEntry {
        action,
        review_id: Some(review.id),
        from_status: Some(doc.status),
        to_status: doc.status,
        version: doc.version,
        lock_mode: "none",
        fence_token: None,
    }
}

/// A claim (or its renewal) by `voter` at `now`. Refusals, first match wins: as a vote's
/// (self-review, not pending, already voted, not eligible), then `ReviewClaimed` when every
/// seat is held by others.
pub fn plan_claim(
    doc: &Document,
    review: &Review,
    voter: Voter<'_>,
    now: DateTime<Utc>,
) -> Result<ClaimPlan, Refusal> {
    check_voter(doc, review, voter)?;
    check_seat(review, voter.id, now)?;
    let renewing = live_claims(review, now)
        .iter()
        .any(|c| c.reviewer_id == voter.id.as_str());
    let ttl = Duration::seconds(i64::from(review.claim_ttl_secs));
    Ok(ClaimPlan {
        change: ClaimChange::Take(Claim {
            reviewer_id: voter.id.as_str().to_string(),
            stage: review.stage,
            claimed_at: now,
            expires_at: now + ttl,
        }),
        audit: Some(claim_audit(
            if renewing { "claim_renewed" } else { "claim" },
            doc,
            review,
        )),
    })
}

/// Gives back `reviewer`'s own claim: nothing to do when it holds none live.
pub fn plan_give_back(
    doc: &Document,
    review: &Review,
    reviewer: &UserId,
    now: DateTime<Utc>,
) -> ClaimPlan {
    let holds = live_claims(review, now)
        .iter()
        .any(|c| c.reviewer_id == reviewer.as_str());
    if !holds {
        return ClaimPlan {
            change: ClaimChange::Nothing,
            audit: None,
        };
    }
    ClaimPlan {
        change: ClaimChange::End {
            reviewer_id: reviewer.as_str().to_string(),
        },
        audit: Some(claim_audit("claim_given_back", doc, review)),
    }
}

/// An admin ends `reviewer_id`'s live claim: `NoClaim` when it holds none.
pub fn plan_end_claim(
    doc: &Document,
    review: &Review,
    reviewer_id: &str,
    now: DateTime<Utc>,
) -> Result<ClaimPlan, Refusal> {
    let holds = live_claims(review, now)
        .iter()
        .any(|c| c.reviewer_id == reviewer_id);
    if !holds {
        return Err(Refusal::NoClaim(reviewer_id.to_string()));
    }
    Ok(ClaimPlan {
        change: ClaimChange::End {
            reviewer_id: reviewer_id.to_string(),
        },
        audit: Some(claim_audit("claim_ended_by_admin", doc, review)),
    })
}

/// The overdue mark of `review`, if it is still pending, current, and due at `now` (the
/// store selects only reviews not marked yet).
pub fn plan_overdue(
    doc: &Document,
    review: &Review,
    now: DateTime<Utc>,
) -> Option<(AuditEntry, OutboxEntry)> {
    let due_at = review.due_at?;
    if !review.overdue_at(now) || doc.current_review_id != Some(review.id) {
        return None;
    }
    let stage = review.current_stage()?;
    Some((
        claim_audit("overdue", doc, review),
        OutboxEntry::from(EventData::Overdue {
            title: doc.title.clone(),
            stage: review.stage,
            stage_name: stage.name.clone(),
            due_at: due_at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        }),
    ))
}
