//! A review and its document locked in one statement, when that is as good as locking them
//! one statement each (`lock_document_of_review`, then `lock_review`).
//!
//! One statement reads everything under one snapshot, taken before its row locks. Under
//! READ COMMITTED the locked rows come back as they are once locked, but the review's
//! votes and claims (other tables) as they were at the snapshot: after a wait for another
//! writer they could miss what it wrote. So the statement never waits (`SKIP LOCKED`, the
//! document first, then the review: a skipped document leaves the review unlocked) and
//! says whether the review row it locked is the snapshot's (`fresh`). Every transaction
//! that changes a review's votes or claims writes the review row (`sql/review_write.sql`,
//! `claims::write_claim`), and the database rewrites it for any other writer (a trigger,
//! migration `20261209000001`), so a fresh review row means fresh votes and claims too. Otherwise the caller goes the two-statement way: a skipped row is
//! waited for by the first statement, a stale review is read again by the second.

use chrono::{DateTime, Utc};
use sqlx::types::Json;
use sqlx::{Postgres, Transaction};
use uuid::Uuid;

use super::rows::{Flow, ReviewRow};
use crate::domain::{
    Claim, Document, DocumentStatus, FencingToken, Review, ReviewKind, ReviewStatus, Stage, Vote,
};
use crate::store::audit::links::{Head, LockedDocument};
use crate::store::error::StoreError;

/// What [`lock_at_once`] found.
pub(crate) enum AtOnce {
    /// Both rows locked, the review current: the document, its chain head, the review and
    /// the time once both were held.
    Locked(Box<(Document, Head, Review, DateTime<Utc>)>),
    /// Both rows locked, but the review changed since the statement's snapshot: the
    /// document (current) and its head; the review must be read again.
    ReviewChanged(Box<(Document, Head)>),
    /// A row is locked by another transaction, or there is no such review.
    NotNow,
}

/// Locks the document of `review_id` and the review in one statement, if it can at once;
/// with the transaction's `kh.memberships` when the statement found the review.
pub(crate) async fn lock_at_once(
    tx: &mut Transaction<'static, Postgres>,
    review_id: Uuid,
) -> Result<(AtOnce, Option<String>), StoreError> {
    let Some(r) = sqlx::query_file!("src/store/reviews/sql/lock_review.sql", review_id)
        .fetch_optional(&mut **tx)
        .await?
    else {
        return Ok((AtOnce::NotNow, None));
    };
    let memberships = r.memberships;
    let (document, head) = LockedDocument {
        id: r.id,
        title: r.title,
        body: r.body,
        status: r.status,
        version: r.version,
        author_id: r.author_id,
        space: r.space,
        current_review_id: r.current_review_id,
        policy: r.policy,
        fence_token: r.fence_token,
        created_at: r.created_at,
        updated_at: r.updated_at,
        published_version: r.published_version,
        published_title: r.published_title,
        published_body: r.published_body,
        contributors: r.contributors,
        verify_by: r.verify_by,
        audit_count: r.audit_count,
        audit_head: r.audit_head,
        now: r.begun,
        memberships: None, // handed on as `memberships`, above
        review_document: None,
    }
    .split();
    if !r.fresh {
        let changed = AtOnce::ReviewChanged(Box::new((document, head)));
        return Ok((changed, memberships));
    }
    let row = ReviewRow {
        id: r.review_id,
        document_id: r.document_id,
        status: r.review_status,
        document_version: r.document_version,
        submitted_by: r.submitted_by,
        submitted_at: r.submitted_at,
        decided_by: r.decided_by,
        decided_at: r.decided_at,
        comment: r.comment,
        reason: r.reason,
        fence_token: r.review_fence,
        policy: r.review_policy,
        policy_version: r.policy_version,
        stage: r.stage,
        due_at: r.due_at,
        kind: r.kind,
    };
    let flow = Flow {
        reverify_after_secs: r.reverify_after_secs,
        claim_ttl_secs: r.claim_ttl_secs,
        stages: r.stages.0,
        votes: r.votes.0,
        claims: r.claims.0,
    };
    let review = row.with(flow);
    let locked = AtOnce::Locked(Box::new((document, head, review, r.now)));
    Ok((locked, memberships))
}
