//! Claims on a review, and the overdue sweep. A claim changes under the same row locks as
//! a vote (the review's document, then the review), so votes and claims are judged against
//! one another's committed state; it takes no outer lock. The sweep marks due reviews
//! once, skipping rows another transaction holds (a busy review is marked on a later pass).

use sqlx::{Postgres, Transaction};
use uuid::Uuid;

use super::documents::lock_document;
use super::error::{StoreError, WriteError};
use super::pg::PgStore;
use super::spaces::memberships::judged_by_read;
use super::tx::{write_audit_and_event, Link, Uncommitted, WriteContext};
use crate::domain::claims::{plan_claim, plan_end_claim, plan_give_back, plan_overdue};
use crate::domain::claims::{ClaimChange, ClaimPlan};
use crate::domain::votes::Voter;
use crate::domain::{Document, FencingToken, Refusal, Review, SpaceRole};
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
        let (mut tx, locked, head, read) = self.lock_review_and_document(review_id).await?;
        let (Some(doc), Some(review), Some(head)) = (&locked.document, &locked.review, head) else {
            return Err(Refusal::NotFound.into());
        };
        // A caller whose memberships this transaction read as it began is judged with them.
        let joined = judged_by_read(&mut tx, ctx.access, read).await?;
        let ctx = &ctx.judged_by(joined.as_ref());
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
        let link = plan
            .audit
            .as_ref()
            .map(|audit| self.audit.at(head).link(doc.id, audit, audit.version, ctx));
        write_claim(&mut tx, (review_id, doc), &plan, ctx, link.as_ref()).await?;
        let mut after = review.clone();
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

/// Writes a claim change, and the review row with it (unchanged: whatever changes a
/// review's votes or claims writes its row, which `reviews::locking` relies on), and its
/// audit row with `link`, in one statement (`sql/claim_write.sql`).
async fn write_claim(
    tx: &mut Transaction<'static, Postgres>,
    (review_id, doc): (Uuid, &Document),
    plan: &ClaimPlan,
    ctx: &WriteContext<'_>,
    link: Option<&Link>,
) -> Result<(), StoreError> {
    let (op, reviewer_id, claim) = match &plan.change {
        ClaimChange::Take(claim) => (Some("take"), Some(claim.reviewer_id.as_str()), Some(claim)),
        ClaimChange::End { reviewer_id } => (Some("end"), Some(reviewer_id.as_str()), None),
        ClaimChange::Nothing => (None, None, None),
    };
    let audit = plan.audit.as_ref().zip(link);
    if op.is_none() && audit.is_none() {
        return Ok(());
    }
    sqlx::query_file!(
        "src/store/sql/claim_write.sql",
        review_id,
        op,
        reviewer_id,
        claim.map(|c| c.stage),
        claim.map(|c| c.claimed_at),
        claim.map(|c| c.expires_at),
        doc.id,
        audit.map(|(a, _)| a.action),
        audit.and_then(|(a, _)| a.review_id),
        ctx.actor.as_str(),
        audit.and_then(|(a, _)| a.from_status.map(|s| s.as_str())),
        audit.map(|(a, _)| a.to_status.as_str()),
        audit.map(|(a, _)| a.version),
        ctx.request_id,
        audit.map(|(a, _)| a.lock_mode),
        audit.and_then(|(_, l)| l.seq),
        audit.and_then(|(_, l)| l.hash.as_deref()),
        audit.map(|(_, l)| l.at),
        doc.space.as_str(),
        audit.and_then(|(a, _)| a.fence_token) as Option<FencingToken>,
    )
    .execute(&mut **tx)
    .await?;
    Ok(())
}
