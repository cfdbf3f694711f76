//! Claims on a review, and the overdue sweep. A claim changes under the same row locks as
//! a vote (the review's document, then the review), so votes and claims are judged against
//! one another's committed state; it takes no outer lock. The sweep marks due reviews
//! once, skipping rows another transaction holds (a busy review is marked on a later pass).

use chrono::{DateTime, Utc};
use sqlx::{Postgres, Transaction};
use uuid::Uuid;

use super::documents::lock_document;
use super::error::{StoreError, WriteError};
use super::pg::PgStore;
use super::tx::{write_audit, write_audit_and_event, Uncommitted, WriteContext};
use crate::domain::claims::{plan_claim, plan_end_claim, plan_give_back, plan_overdue};
use crate::domain::claims::{ClaimChange, ClaimPlan};
use crate::domain::votes::Voter;
use crate::domain::{Claim, Document, Refusal, Review, SpaceRole};
use crate::store::audit::chain::AuditChain;
use crate::store::reviews::rows::lock_review;

/// What to do with a claim on a review.
#[derive(Debug, Clone)]
pub enum ClaimOp {
    /// Claim (or renew) a seat, as a member of these groups.
    Take(Vec<String>),
    /// Give one's own claim back.
    GiveBack,
    /// An admin ends this reviewer's claim.
    End(String),
}

impl PgStore {
    /// Claims, gives back or ends a claim on `review_id`; the review with its live claims.
    #[tracing::instrument(level = "debug", skip_all, fields(review_id = %review_id))]
    pub async fn write_claim(
        &self,
        review_id: Uuid,
        op: ClaimOp,
        ctx: &WriteContext<'_>,
    ) -> Result<Uncommitted<Review>, WriteError> {
        let (mut tx, locked, head, _) = self.lock_review_and_document(review_id).await?;
        let (Some(doc), Some(review), Some(head)) = (&locked.document, &locked.review, head) else {
            return Err(Refusal::NotFound.into());
        };
        check_role(doc, ctx, &op)?;
        let now = locked.now;
        let plan: ClaimPlan = match &op {
            ClaimOp::Take(groups) => {
                let voter = Voter {
                    id: ctx.actor,
                    groups,
                };
                plan_claim(doc, review, voter, now)?
            }
            ClaimOp::GiveBack => plan_give_back(doc, review, ctx.actor, now),
            ClaimOp::End(reviewer) => plan_end_claim(doc, review, reviewer, now)?,
        };
        let mut after = review.clone();
        write_claim(&mut tx, review_id, &plan.change).await?;
        match plan.change {
            ClaimChange::Take(claim) => {
                after.claims.retain(|c| c.reviewer_id != claim.reviewer_id);
                after.claims.push(claim);
            }
            ClaimChange::End { reviewer_id } => {
                after.claims.retain(|c| c.reviewer_id != reviewer_id)
            }
            ClaimChange::Nothing => {}
        }
        if let Some(audit) = &plan.audit {
            let link = self.audit.at(head).link(doc.id, audit, audit.version, ctx);
            write_audit(&mut tx, doc.id, audit, ctx, &link).await?;
        }
        after
            .claims
            .retain(|c| c.expires_at > now && c.stage == after.stage);
        after.claims.sort_by_key(|c| c.expires_at);
        Ok(Uncommitted::new(tx, after, None).in_space(|_| doc.space.clone()))
    }

    /// Marks up to `limit` pending reviews past their due date, each with one
    /// `review.overdue` event, in one transaction; how many were marked.
    pub async fn sweep_overdue(
        &self,
        limit: i64,
        ctx: &WriteContext<'_>,
    ) -> Result<u64, StoreError> {
        let mut tx = self.begin().await?;
        let due = sqlx::query!(
            r#"SELECT r.id, r.document_id FROM reviews r JOIN documents d ON d.id = r.document_id
               WHERE r.status = 'PENDING' AND r.due_at IS NOT NULL
                 AND r.overdue_notified_at IS NULL AND r.due_at <= now()
                 AND r.kind = 'publish'
               ORDER BY r.due_at LIMIT $1
               FOR UPDATE OF d, r SKIP LOCKED"#,
            limit
        )
        .fetch_all(&mut *tx)
        .await?;
        let mut marked = 0;
        for row in due {
            if mark_overdue(&mut tx, &self.audit, row.document_id, row.id, ctx).await? {
                marked += 1;
            }
        }
        tx.commit().await?;
        Ok(marked)
    }
}

/// Marks one review (its rows locked by this transaction) overdue, if the rules agree.
async fn mark_overdue(
    tx: &mut Transaction<'static, Postgres>,
    chain: &AuditChain,
    document_id: Uuid,
    review_id: Uuid,
    ctx: &WriteContext<'_>,
) -> Result<bool, StoreError> {
    let Some((doc, head)) = lock_document(tx, document_id).await? else {
        return Ok(false);
    };
    let (Some(review), now) = lock_review(tx, review_id).await? else {
        return Ok(false);
    };
    let Some((audit, entry)) = plan_overdue(&doc, &review, now) else {
        return Ok(false);
    };
    sqlx::query!(
        "UPDATE reviews SET overdue_notified_at = $2 WHERE id = $1",
        review_id,
        now
    )
    .execute(&mut **tx)
    .await?;
    let link = chain.at(head).link(doc.id, &audit, doc.version, ctx);
    write_audit_and_event(tx, &doc, &audit, &entry, ctx, now, &link).await?;
    Ok(true)
}

/// The role `op` needs in the document's space: a reviewer claims and gives back, a space
/// admin ends another's claim; a caller with no role there does not learn the review exists.
fn check_role(doc: &Document, ctx: &WriteContext<'_>, op: &ClaimOp) -> Result<(), Refusal> {
    let roles = doc.roles_of(ctx.reader());
    let (role, refusal) = match op {
        ClaimOp::Take(_) | ClaimOp::GiveBack => (
            SpaceRole::Reviewer,
            "a claim needs the reviewer role in the document's space",
        ),
        ClaimOp::End(_) => (
            SpaceRole::SpaceAdmin,
            "ending another's claim needs the admin role, or space_admin in the document's space",
        ),
    };
    if roles.is_empty() {
        Err(Refusal::NotFound)
    } else if !roles.contains(role) {
        Err(Refusal::Forbidden(refusal))
    } else {
        Ok(())
    }
}

/// Writes a claim change, and the review row with it (unchanged): whatever changes a
/// review's votes or claims writes its row, which `reviews::locking` relies on.
async fn write_claim(
    tx: &mut Transaction<'static, Postgres>,
    review_id: Uuid,
    change: &ClaimChange,
) -> Result<(), StoreError> {
    match change {
        ClaimChange::Take(Claim {
            reviewer_id,
            stage,
            claimed_at,
            expires_at,
        }) => {
            sqlx::query!(
                "WITH touched AS (UPDATE reviews SET stage = stage WHERE id = $1) \
                 INSERT INTO review_claims (review_id, reviewer_id, stage, claimed_at, expires_at) \
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT (review_id, reviewer_id) DO UPDATE \
                 SET stage = EXCLUDED.stage, claimed_at = EXCLUDED.claimed_at, \
                     expires_at = EXCLUDED.expires_at",
                review_id,
                reviewer_id,
                stage,
                claimed_at as &DateTime<Utc>,
                expires_at as &DateTime<Utc>,
            )
            .execute(&mut **tx)
            .await?;
        }
        ClaimChange::End { reviewer_id } => {
            sqlx::query!(
                "WITH touched AS (UPDATE reviews SET stage = stage WHERE id = $1) \
                 DELETE FROM review_claims WHERE review_id = $1 AND reviewer_id = $2",
                review_id,
                reviewer_id
            )
            .execute(&mut **tx)
            .await?;
        }
        ClaimChange::Nothing => {}
    }
    Ok(())
}
