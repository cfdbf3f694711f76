//! Writing what a vote or a withdrawal planned on a review: the vote row, the claims it
//! ends, and the review row, in one statement. The review row is written even when the
//! plan leaves it as it is (a vote that decides nothing): whatever changes a review's votes
//! or claims writes its row, which `review_lock` relies on.

use chrono::Utc;
use sqlx::{Postgres, Transaction};

use super::error::{violates, WriteError};
use crate::domain::rules::{NewVote, ReviewUpdate, ReviewWrite};
use crate::domain::{FencingToken, Refusal, Review, ReviewStatus, Vote};

/// Writes `write` on the locked review `before`; returns the review as it now is.
pub(super) async fn write_review(
    tx: &mut Transaction<'static, Postgres>,
    before: Review,
    write: ReviewWrite,
) -> Result<Review, WriteError> {
    let ReviewWrite {
        id,
        vote,
        update,
        end_claims,
    } = write;
    let updating = update.is_some();
    let next = next_of(&before, update);
    let row = sqlx::query!(
        r#"WITH vote AS (
             INSERT INTO review_votes (review_id, voter_id, stage, vote, comment, fence_token)
             SELECT $1, $2, $3, $4, $5, $6 WHERE $2::text IS NOT NULL
             RETURNING at),
           ended AS (
             DELETE FROM review_claims
             WHERE review_id = $1 AND ($7::bool OR reviewer_id = $2)),
           updated AS (
             UPDATE reviews SET status = $9, stage = $10, decided_by = $11,
                    decided_at = CASE WHEN NOT $8::bool THEN decided_at
                                      WHEN $11::text IS NULL THEN NULL
                                      ELSE clock_timestamp() END,
                    comment = $12, reason = $13, fence_token = $14
             WHERE id = $1
             RETURNING decided_at)
           SELECT (SELECT at FROM vote) AS vote_at, (SELECT decided_at FROM updated) AS decided_at"#,
        id,
        vote.as_ref().map(|v| v.voter_id.as_str()),
        vote.as_ref().map_or(before.stage, |v| v.stage),
        vote.as_ref().map(|v| v.kind.as_str()),
        vote.as_ref().and_then(|v| v.comment.as_deref()),
        vote.as_ref().and_then(|v| v.fence_token) as Option<FencingToken>,
        end_claims,
        updating,
        next.status as ReviewStatus,
        next.stage,
        next.decided_by.as_deref(),
        next.comment.as_deref(),
        next.reason.as_deref(),
        next.fence_token as Option<FencingToken>,
    )
    .fetch_one(&mut **tx)
    .await
    .map_err(|e| {
        if violates(&e, "review_votes_pkey") {
            Refusal::AlreadyVoted.into()
        } else {
            WriteError::from(e)
        }
    })?;
    Ok(applied(
        before,
        vote,
        next,
        updating,
        end_claims,
        row.vote_at,
        row.decided_at,
    ))
}

/// The review row as `update` leaves it (`None`: as it is).
pub(super) fn next_of(before: &Review, update: Option<ReviewUpdate>) -> ReviewUpdate {
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
pub(super) fn applied(
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
