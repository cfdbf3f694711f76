//! Statements on `reviews`, and the two review transitions: submit (open a review) and
//! decide (approve or reject it). Each locks its rows (document first, then review: one
//! global order, so two transitions never deadlock), asks the rules for a plan, and writes
//! the plan uncommitted.

use sqlx::{Postgres, Transaction};
use uuid::Uuid;

use super::documents::{lock_document, lock_document_of_review, planned_document, write_document};
use super::error::{violates, StoreError, WriteError};
use super::pg::{PgStore, Statement};
use super::tx::{write_audit_and_event, Staged, WriteContext};
use crate::domain::rules::{self, DecideReview, OpenReview, ReviewChange};
use crate::domain::{
    Command, Decision, Document, FencingToken, Locked, Plan, Refusal, Review, ReviewStatus,
    Transitioned,
};

impl PgStore {
    /// DRAFT|REJECTED -> PENDING_REVIEW with a new pending review.
    #[tracing::instrument(level = "debug", skip_all, fields(document_id = %document_id))]
    pub async fn stage_submit(
        &self,
        document_id: Uuid,
        ctx: &WriteContext<'_>,
    ) -> Result<Staged<Transitioned>, WriteError> {
        let mut tx = self.begin().await?;
        let locked = Locked {
            document: lock_document(&mut tx, document_id).await?,
            review: None,
        };
        let command = Command::Submit {
            new_review_id: Uuid::now_v7(),
        };
        let plan = rules::plan(&locked, ctx.actor, command, ctx.guard)?;
        write_transition(tx, locked, plan, ctx).await
    }

    /// PENDING -> APPROVED | REJECTED for the review, and the document with it.
    #[tracing::instrument(level = "debug", skip_all, fields(review_id = %review_id, action = decision.action().as_str()))]
    pub async fn stage_decision(
        &self,
        review_id: Uuid,
        decision: Decision,
        ctx: &WriteContext<'_>,
    ) -> Result<Staged<Transitioned>, WriteError> {
        let mut tx = self.begin().await?;
        // Lock the review's document (found without locking the review), then the review.
        let locked = match lock_document_of_review(&mut tx, review_id).await? {
            None => Locked::default(),
            Some(document) => Locked {
                document: Some(document),
                review: lock_review(&mut tx, review_id).await?,
            },
        };
        let plan = rules::plan(&locked, ctx.actor, Command::Decide(decision), ctx.guard)?;
        write_transition(tx, locked, plan, ctx).await
    }

    /// Reviews in `status` in the order their submits committed, after the review `after`
    /// (the last one a reader was shown); `None` when `after` is no review. A review
    /// committed later always comes later in this order (`queue_seq`, assigned at COMMIT:
    /// see the migration `review_queue_order`), so a reader paging through never skips one.
    pub async fn list_reviews(
        &self,
        status: ReviewStatus,
        after: Option<Uuid>,
        limit: i64,
    ) -> Result<Option<Vec<Review>>, StoreError> {
        let after_seq = match after {
            None => None,
            Some(id) => {
                match sqlx::query_scalar!("SELECT queue_seq FROM reviews WHERE id = $1", id)
                    .fetch_optional(&self.pool)
                    .bounded(self)
                    .await?
                {
                    None => return Ok(None),
                    seq => seq,
                }
            }
        };
        Ok(Some(
            sqlx::query_as!(
                Review,
                r#"SELECT id, document_id, status AS "status: ReviewStatus", document_version,
                          submitted_by, submitted_at, decided_by, decided_at, comment, reason,
                          fence_token AS "fence_token: FencingToken"
                   FROM reviews
                   WHERE status = $1 AND ($2::int8 IS NULL OR queue_seq > $2)
                   ORDER BY queue_seq LIMIT $3"#,
                status as ReviewStatus,
                after_seq,
                limit
            )
            .fetch_all(&self.pool)
            .bounded(self)
            .await?,
        ))
    }

    /// Every review of a document, oldest first; `None` when the document does not exist.
    pub async fn document_reviews(
        &self,
        document_id: Uuid,
    ) -> Result<Option<Vec<Review>>, StoreError> {
        let exists = sqlx::query_scalar!(
            r#"SELECT EXISTS (SELECT 1 FROM documents WHERE id = $1) AS "exists!""#,
            document_id
        )
        .fetch_one(&self.pool)
        .bounded(self)
        .await?;
        if !exists {
            return Ok(None);
        }
        Ok(Some(
            sqlx::query_as!(
                Review,
                r#"SELECT id, document_id, status AS "status: ReviewStatus", document_version,
                          submitted_by, submitted_at, decided_by, decided_at, comment, reason,
                          fence_token AS "fence_token: FencingToken"
                   FROM reviews WHERE document_id = $1 ORDER BY queue_seq"#,
                document_id
            )
            .fetch_all(&self.pool)
            .bounded(self)
            .await?,
        ))
    }
}

async fn lock_review(
    tx: &mut Transaction<'static, Postgres>,
    id: Uuid,
) -> Result<Option<Review>, StoreError> {
    Ok(sqlx::query_as!(
        Review,
        r#"SELECT id, document_id, status AS "status: ReviewStatus", document_version,
                  submitted_by, submitted_at, decided_by, decided_at, comment, reason,
                  fence_token AS "fence_token: FencingToken"
           FROM reviews WHERE id = $1 FOR UPDATE"#,
        id
    )
    .fetch_optional(&mut **tx)
    .await?)
}

/// Writes a planned transition: the review row first (the document refers to it), then
/// the document, the audit row and the outbox row.
async fn write_transition(
    mut tx: Transaction<'static, Postgres>,
    locked: Locked,
    plan: Plan,
    ctx: &WriteContext<'_>,
) -> Result<Staged<Transitioned>, WriteError> {
    let Locked { document, review } = locked;
    let before = planned_document(document)?;
    let review = match plan.review {
        Some(ReviewChange::Open(open)) => match open_review(&mut tx, &before, open).await {
            Err(e) if violates(&e, "reviews_one_pending_per_document") => {
                return Err(Refusal::AlreadyPending.into())
            }
            opened => opened?,
        },
        Some(ReviewChange::Decide(decision)) => {
            let review = review.ok_or_else(|| anyhow::anyhow!("a decision without a review"))?;
            decide_review(&mut tx, review, decision).await?
        }
        None => return Err(anyhow::anyhow!("a transition without a review").into()),
    };
    let doc = write_document(&mut tx, before, plan.document).await?;
    let owned = write_audit_and_event(&mut tx, &doc, &plan.audit, &plan.outbox, ctx).await?;
    Ok(Staged::new(
        tx,
        Transitioned {
            document: doc,
            review,
        },
        owned,
    ))
}

async fn open_review(
    tx: &mut Transaction<'static, Postgres>,
    doc: &Document,
    open: OpenReview,
) -> Result<Review, sqlx::Error> {
    let status = ReviewStatus::Pending;
    let submitted_at = sqlx::query_scalar!(
        "INSERT INTO reviews (id, document_id, status, document_version, submitted_by, \
         fence_token) VALUES ($1, $2, $3, $4, $5, $6) RETURNING submitted_at",
        open.id,
        doc.id,
        status as ReviewStatus,
        open.document_version,
        &open.submitted_by,
        open.fence_token as Option<FencingToken>,
    )
    .fetch_one(&mut **tx)
    .await?;
    Ok(Review {
        id: open.id,
        document_id: doc.id,
        status,
        document_version: open.document_version,
        submitted_by: open.submitted_by,
        submitted_at,
        decided_by: None,
        decided_at: None,
        comment: None,
        reason: None,
        fence_token: open.fence_token,
    })
}

async fn decide_review(
    tx: &mut Transaction<'static, Postgres>,
    before: Review,
    decision: DecideReview,
) -> Result<Review, StoreError> {
    let DecideReview {
        id,
        status,
        decided_by,
        comment,
        reason,
        fence_token,
    } = decision;
    let decided_at = sqlx::query_scalar!(
        "UPDATE reviews SET status = $2, decided_by = $3, decided_at = clock_timestamp(), \
         comment = $4, reason = $5, fence_token = $6 WHERE id = $1 RETURNING decided_at",
        id,
        status as ReviewStatus,
        &decided_by,
        comment.as_deref(),
        reason.as_deref(),
        fence_token as Option<FencingToken>,
    )
    .fetch_one(&mut **tx)
    .await?;
    Ok(Review {
        status,
        decided_by: Some(decided_by),
        decided_at,
        comment,
        reason,
        fence_token,
        ..before
    })
}
