//! What a vote or a withdrawal planned on a review, as the review is once written: the
//! values its row takes (`next_of`) and the review as it then is (`applied`). The rows
//! themselves are written in one statement with the document's, audit and outbox rows
//! (`combined`). The review row is written even when the plan leaves it as it is (a vote
//! that decides nothing): whatever changes a review's votes or claims writes its row, which
//! `locking` relies on.

use chrono::Utc;

use crate::domain::rules::{NewVote, ReviewUpdate};
use crate::domain::{Review, Vote};

/// The review row as `update` leaves it (`None`: as it is).
pub(crate) fn next_of(before: &Review, update: Option<ReviewUpdate>) -> ReviewUpdate {
    update.unwrap_or_else(|| ReviewUpdate {
        status: before.status,
        stage: before.stage,
        decided_by: before.decided_by.clone(),
        comment: before.comment.clone(),
        reason: before.reason.clone(),
        fence_token: before.fence_token,
    })
}

/// The review `before` with what a review write wrote.
pub(crate) fn applied(
    before: Review,
    vote: Option<NewVote>,
    next: ReviewUpdate,
    updating: bool,
    end_claims: bool,
    vote_at: Option<chrono::DateTime<Utc>>,
    decided_at: Option<chrono::DateTime<Utc>>,
) -> Review {
    let mut after = before;
    if let Some(v) = vote {
        after.claims.retain(|c| c.reviewer_id != v.voter_id);
        after.votes.push(Vote {
            voter_id: v.voter_id,
            stage: v.stage,
            kind: v.kind,
            comment: v.comment,
            at: vote_at.unwrap_or_else(Utc::now),
        });
    }
    if end_claims {
        after.claims.clear();
    }
    if updating {
        after.status = next.status;
        after.stage = next.stage;
        after.decided_by = next.decided_by;
        after.decided_at = decided_at;
        after.comment = next.comment;
        after.reason = next.reason;
        after.fence_token = next.fence_token;
    }
    after
}
