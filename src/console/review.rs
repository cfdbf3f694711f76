//! A pending review as the console shows it: its policy, its stages with who approved in
//! each, the current stage's seats and their holders, the due date; what the reader may do
//! (claim a seat, give one back); and the sentence a refused vote or claim reads as, built
//! from the error code and the review as it is now.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::render::{clock, when};
use crate::domain::votes::{live_claims, seats};
use crate::domain::{Document, DocumentStatus, Review, ReviewKind, ReviewStatus, VoteKind};
use crate::web::auth::{Caller, Role};
use crate::web::error::ErrorCode;

/// A stage of the review's policy version.
pub struct StageRow {
    pub name: String,
    pub required: u8,
    /// Who votes in it: "any reviewer", or its groups.
    pub who: String,
    /// "bob at 12:01 UTC", in the order cast.
    pub approvals: Vec<String>,
    /// done, current or later.
    pub state: &'static str,
}

/// A live claim on the current stage.
pub struct Holder {
    pub reviewer: String,
    pub until: String,
}

/// The review's workflow, for the document page.
pub struct ReviewPanel {
    pub id: Uuid,
    pub policy: String,
    pub policy_version: i32,
    pub stage_name: String,
    /// The current stage's position, from 1, and how many there are.
    pub stage_no: usize,
    pub stage_count: usize,
    pub stages: Vec<StageRow>,
    /// Approvals the current stage still needs, and how many of those seats are held.
    pub seats: usize,
    pub held: usize,
    pub holders: Vec<Holder>,
    pub due: Option<String>,
    pub overdue: bool,
    /// A re-verification of the published version (its due date is its deadline).
    pub reverify: bool,
    /// The reader may claim a seat (a reviewer who may vote, a seat free).
    pub can_claim: bool,
    /// The reader holds a seat (and may give it back).
    pub holds_claim: bool,
    /// How the reader voted: "approved" or "rejected".
    pub voted: Option<&'static str>,
}

impl ReviewPanel {
    /// The panel of `review` (the pending review of `doc`) as `caller` sees it at `now`.
    pub fn of(review: &Review, doc: &Document, caller: &Caller, now: DateTime<Utc>) -> Self {
        let me = caller.id.as_str();
        let live = live_claims(review, now);
        let seats = seats(review);
        let voted = review
            .votes
            .iter()
            .find(|v| v.voter_id == me)
            .map(|v| match v.kind {
                VoteKind::Approve => "approved",
                VoteKind::Reject => "rejected",
            });
        let holds_claim = live.iter().any(|c| c.reviewer_id == me);
        let current = review.current_stage();
        let may_vote = caller.has(Role::Reviewer)
            && doc.author_id != me
            && review.status == ReviewStatus::Pending
            && deciding(doc, review.kind)
            && doc.current_review_id == Some(review.id)
            && voted.is_none()
            && current.is_some_and(|s| s.admits(&caller.groups));
        ReviewPanel {
            id: review.id,
            policy: review.policy.clone(),
            policy_version: review.policy_version,
            stage_name: current.map(|s| s.name.clone()).unwrap_or_default(),
            stage_no: review.stage.max(0) as usize + 1,
            stage_count: review.stages.len(),
            stages: stage_rows(review),
            seats,
            held: live.len(),
            holders: live
                .iter()
                .map(|c| Holder {
                    reviewer: c.reviewer_id.clone(),
                    until: when(c.expires_at),
                })
                .collect(),
            due: review.due_at.map(when),
            overdue: review.overdue_at(now),
            reverify: review.kind == ReviewKind::Reverify,
            can_claim: may_vote && !holds_claim && live.len() < seats,
            holds_claim,
            voted,
        }
    }
}

/// A review of `kind` of `doc` is decided: a submitted version's while the document is
/// pending review, a re-verification's while the version it re-verifies is published.
pub fn deciding(doc: &Document, kind: ReviewKind) -> bool {
    match kind {
        ReviewKind::Publish => doc.status == DocumentStatus::PendingReview,
        ReviewKind::Reverify => doc.published_version.is_some(),
    }
}

fn stage_rows(review: &Review) -> Vec<StageRow> {
    let current = review.stage.max(0) as usize;
    review
        .stages
        .iter()
        .enumerate()
        .map(|(i, s)| StageRow {
            name: s.name.clone(),
            required: s.required_approvals,
            who: match s.eligible_groups.is_empty() {
                true => "any reviewer".to_string(),
                false => format!("group {}", s.eligible_groups.join(", ")),
            },
            approvals: review
                .votes
                .iter()
                .filter(|v| v.stage as usize == i && v.kind == VoteKind::Approve)
                .map(|v| format!("{} at {}", v.voter_id, when(v.at)))
                .collect(),
            state: match i.cmp(&current) {
                std::cmp::Ordering::Less => "done",
                std::cmp::Ordering::Equal => "current",
                std::cmp::Ordering::Greater => "later",
            },
        })
        .collect()
}

/// "ann", "ann and bob", "ann, bob and cy".
fn names(list: &[&str]) -> String {
    match list {
        [] => String::new(),
        [one] => one.to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// What a refusal of `code` tells the reader `me` about `review` (read after the refusal,
/// at `now`); `None` when the API's own message says it as well.
pub fn sentence(code: ErrorCode, review: &Review, me: &str, now: DateTime<Utc>) -> Option<String> {
    match code {
        ErrorCode::ReviewClaimed => {
            let live = live_claims(review, now);
            let first = live.first()?;
            let holders: Vec<&str> = live.iter().map(|c| c.reviewer_id.as_str()).collect();
            let until = clock(first.expires_at);
            Some(match holders.len() {
                1 if seats(review) <= 1 => {
                    format!("{} holds the only seat until {until} UTC.", holders[0])
                }
                1 => format!("{} holds the last free seat until {until} UTC.", holders[0]),
                n => format!(
                    "{} hold all {n} seats; the first is free at {until} UTC.",
                    names(&holders)
                ),
            })
        }
        ErrorCode::AlreadyVoted => {
            let vote = review.votes.iter().find(|v| v.voter_id == me)?;
            Some(match vote.kind {
                VoteKind::Approve => "You already approved this review.".to_string(),
                VoteKind::Reject => "You already rejected this review.".to_string(),
            })
        }
        ErrorCode::NotEligible => {
            let groups = &review.current_stage()?.eligible_groups;
            let list: Vec<&str> = groups.iter().map(String::as_str).collect();
            Some(match list.len() {
                0 => return None,
                1 => format!("Only the {} group votes in this stage.", list[0]),
                _ => format!("Only the {} groups vote in this stage.", names(&list)),
            })
        }
        ErrorCode::InvalidState => match (&review.decided_by, review.status) {
            (_, ReviewStatus::Withdrawn) => Some("The author withdrew this review.".to_string()),
            (Some(by), status) => {
                let status = status.as_str().to_lowercase();
                Some(format!("Already decided by {by} ({status})."))
            }
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests;
