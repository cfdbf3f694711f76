//! The rules of a vote: who may vote in a review's current stage, what a vote completes,
//! and what it writes. An approval that completes a stage moves the review on
//! (`review.stage_completed`); the one that completes the last stage approves the review and
//! its document (`document.approved`); any other approval is recorded
//! (`review.approval_recorded`). A reject by anyone eligible ends the review at once.
//!
//! Refusals, first match wins: not found, a stale token of this vote's own lock, the author
//! (`SelfReview`), a review not pending (`InvalidState`), a second vote (`AlreadyVoted`), a
//! caller outside the stage's groups (`NotEligible`), and an approval while every seat is
//! held by others (`ReviewClaimed`).

use chrono::{DateTime, Utc};

use super::decisions::{audit_unchanged, decided_review, review_fence};
use super::events::{EventData, OutboxEntry};
use super::inputs::{Comment, UserId};
use super::model::{Document, Guard, LockScope, Review, VoteKind};
use super::plan::{
    audit, check_fence, transitioned, Decision, DocumentChange, NewVote, Plan, Publication,
    Refusal, ReviewChange, ReviewUpdate, ReviewWrite, Verify,
};
use super::state::{Action, InvalidTransition, ReviewKind};

/// Who votes: the caller and the groups of its token.
#[derive(Debug, Clone, Copy)]
pub struct Voter<'a> {
    pub id: &'a UserId,
    pub groups: &'a [String],
}

/// The seats of the current stage at `now`: how many approvals it still needs, and the
/// live claims on it, earliest expiry first.
pub fn live_claims(review: &Review, now: DateTime<Utc>) -> Vec<&super::model::Claim> {
    let mut live: Vec<_> = review
        .claims
        .iter()
        .filter(|c| c.stage == review.stage && c.expires_at > now)
        .collect();
    live.sort_by_key(|c| c.expires_at);
    live
}

/// Approvals the current stage still needs (its free and held seats together).
pub fn seats(review: &Review) -> usize {
    let required = review
        .current_stage()
        .map_or(1, |s| s.required_approvals as usize);
    required.saturating_sub(review.approvals_in(review.stage))
}

/// Refuses `voter` on `review` for the first reason that applies to any vote (or claim):
/// self-review, not pending, already voted, not eligible.
pub fn check_voter(doc: &Document, review: &Review, voter: Voter<'_>) -> Result<(), Refusal> {
    if doc.written_by(voter.id.as_str()) {
        return Err(Refusal::SelfReview);
    }
    let _ = review
        .status
        .apply(Action::Approve)
        .ok_or(Refusal::ReviewNotPending(review.status))?;
    match review.kind {
        ReviewKind::Publish => {
            doc.status.apply(Action::Approve)?;
        }
        // A re-verification is decided while the version it re-verifies is published.
        ReviewKind::Reverify if doc.published_version.is_none() => {
            return Err(InvalidTransition {
                from: doc.status,
                action: Action::Approve,
            }
            .into())
        }
        ReviewKind::Reverify => {}
    }
    if doc.current_review_id != Some(review.id) {
        return Err(Refusal::NotCurrentReview);
    }
    if review.votes.iter().any(|v| v.voter_id == voter.id.as_str()) {
        return Err(Refusal::AlreadyVoted);
    }
    let stage = review.current_stage().ok_or(Refusal::NotFound)?;
    if !stage.admits(voter.groups) {
        return Err(Refusal::NotEligible {
            stage: stage.name.clone(),
            groups: stage.eligible_groups.clone(),
        });
    }
    Ok(())
}

/// Refuses an approval (or a new claim) of `voter` while every seat is held by others.
pub fn check_seat(review: &Review, voter: &UserId, now: DateTime<Utc>) -> Result<(), Refusal> {
    let live = live_claims(review, now);
    if live.iter().any(|c| c.reviewer_id == voter.as_str()) {
        return Ok(());
    }
    if live.len() >= seats(review) {
        let until = live.first().map_or(now, |c| c.expires_at);
        let secs = (until - now).num_milliseconds().max(0) as u64;
        return Err(Refusal::ReviewClaimed {
            holders: live.iter().map(|c| c.reviewer_id.clone()).collect(),
            until,
            retry_after_secs: secs.div_ceil(1000).max(1),
        });
    }
    Ok(())
}

/// Judges a vote of `voter` on `review` (of `doc`, both locked) at `now`.
pub fn plan_vote(
    doc: &Document,
    review: &Review,
    voter: Voter<'_>,
    decision: Decision,
    guard: Guard,
    now: DateTime<Utc>,
) -> Result<Plan, Refusal> {
    check_fence(review.fence_token, guard, LockScope::Review)?;
    check_voter(doc, review, voter)?;
    if decision.kind() == VoteKind::Approve {
        check_seat(review, voter.id, now)?;
    }
    let vote = NewVote {
        voter_id: voter.id.as_str().to_string(),
        stage: review.stage,
        kind: decision.kind(),
        comment: None,
        fence_token: guard.fence_of(LockScope::Voter),
    };
    match decision {
        Decision::Reject(reason) => Ok(decide(
            doc,
            review,
            vote,
            guard,
            Err(reason.into_string()),
            now,
        )),
        Decision::Approve(comment) => {
            let comment = comment.map(Comment::into_string).filter(|c| !c.is_empty());
            let vote = NewVote {
                comment: comment.clone(),
                ..vote
            };
            let stage = review.current_stage().ok_or(Refusal::NotFound)?;
            let approvals = review.approvals_in(review.stage) + 1;
            let last_stage = review.stage as usize + 1 >= review.stages.len();
            if approvals < stage.required_approvals as usize {
                Ok(recorded(doc, review, vote, guard, approvals))
            } else if last_stage {
                Ok(decide(doc, review, vote, guard, Ok(comment), now))
            } else {
                Ok(stage_completed(doc, review, vote, guard))
            }
        }
    }
}

/// A vote that decides the review: the last approval (`Ok(comment)`) or a reject
/// (`Err(reason)`), at `now`. A re-verification's decision is judged in `reverify.rs`.
fn decide(
    doc: &Document,
    review: &Review,
    vote: NewVote,
    guard: Guard,
    outcome: Result<Option<String>, String>,
    now: DateTime<Utc>,
) -> Plan {
    if review.kind == ReviewKind::Reverify {
        return super::reverify::decided(doc, review, vote, guard, outcome, now);
    }
    let (action, decided) = match outcome {
        Ok(_) => (Action::Approve, super::state::ReviewStatus::Approved),
        Err(_) => (Action::Reject, super::state::ReviewStatus::Rejected),
    };
    let status = doc
        .status
        .apply(action)
        .expect("check_voter saw a pending document");
    let (comment, reason) = match outcome {
        Ok(c) => (c, None),
        Err(r) => (None, Some(r)),
    };
    let data = match &reason {
        None => EventData::Approved {
            title: doc.title.clone(),
            comment: comment.clone(),
            replaced_version: doc.published_version,
        },
        Some(r) => EventData::Rejected {
            title: doc.title.clone(),
            reason: r.clone(),
        },
    };
    // An approval publishes the working copy: its contributors start anew, and it is due
    // for re-verification after its policy's `reverify_after_secs`.
    let (published, contributors, verify) = match decided {
        super::state::ReviewStatus::Approved => (
            Publication::Publish,
            Some(Vec::new()),
            Verify::after(now, review.reverify_after_secs),
        ),
        _ => (Publication::Keep, None, Verify::Keep),
    };
    Plan {
        document: Some(DocumentChange {
            published,
            contributors,
            verify,
            ..transitioned(doc, status, doc.current_review_id, guard)
        }),
        review: Some(decided_review(
            review,
            Some(vote.clone()),
            decided,
            &vote.voter_id,
            (comment, reason),
            guard,
        )),
        audit: audit(action.as_str(), Some(review.id), doc, status, guard),
        outbox: OutboxEntry::from(data),
    }
}

fn recorded(
    doc: &Document,
    review: &Review,
    vote: NewVote,
    guard: Guard,
    approvals: usize,
) -> Plan {
    let stage = review.current_stage().expect("the stage was found");
    let update = guard.fence_of(LockScope::Review).map(|_| ReviewUpdate {
        status: review.status,
        stage: review.stage,
        decided_by: None,
        comment: None,
        reason: None,
        fence_token: review_fence(review, guard),
    });
    Plan {
        document: None,
        outbox: OutboxEntry::from(EventData::ApprovalRecorded {
            title: doc.title.clone(),
            stage: review.stage,
            stage_name: stage.name.clone(),
            approvals: approvals as i64,
            required_approvals: i64::from(stage.required_approvals),
            approved_by: vote.voter_id.clone(),
            comment: vote.comment.clone(),
        }),
        review: Some(ReviewChange::Write(ReviewWrite {
            id: review.id,
            vote: Some(vote),
            update,
            end_claims: false,
        })),
        audit: audit_unchanged("approval_recorded", doc, review.id, guard),
    }
}

fn stage_completed(doc: &Document, review: &Review, vote: NewVote, guard: Guard) -> Plan {
    let stage = review.current_stage().expect("the stage was found");
    let next = review.stage + 1;
    let next_stage = &review.stages[next as usize];
    Plan {
        document: None,
        outbox: OutboxEntry::from(EventData::StageCompleted {
            title: doc.title.clone(),
            stage: review.stage,
            stage_name: stage.name.clone(),
            next_stage: next,
            next_stage_name: next_stage.name.clone(),
            approved_by: vote.voter_id.clone(),
            comment: vote.comment.clone(),
        }),
        review: Some(ReviewChange::Write(ReviewWrite {
            id: review.id,
            vote: Some(vote),
            update: Some(ReviewUpdate {
                status: review.status,
                stage: next,
                decided_by: None,
                comment: None,
                reason: None,
                fence_token: review_fence(review, guard),
            }),
            end_claims: true,
        })),
        audit: audit_unchanged("stage_completed", doc, review.id, guard),
    }
}

#[cfg(test)]
mod tests;
