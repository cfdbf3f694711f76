//! Every SQL statement of the service. A transition is one transaction: lock the rows
//! (document first, then review, always in that order so two transitions never deadlock),
//! check the state machine, write the rows, the audit row and the outbox rows, check the
//! lease, COMMIT. This transaction alone keeps state correct.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::json;
use sqlx::{PgPool, Postgres, Transaction};
use uuid::Uuid;

use super::{DocumentRow, ReviewRow, StoreError};
use crate::domain::{
    Action, Comment, DocumentBody, DocumentTitle, RejectReason, ReviewStatus, UserId,
};
use crate::lock::lease::Lease;
use crate::store::idempotency::{record_in_tx, Receipt};
use crate::store::steps::{
    audit, check_fence, enqueue, lock_document, parse_doc_status, set_document_status,
};

pub(super) const DOC_COLS: &str =
    "id, title, body, status, version, author_id, current_review_id, \
                        fence_token, created_at, updated_at";
const REVIEW_COLS: &str = "id, document_id, status, document_version, submitted_by, \
                           submitted_at, decided_by, decided_at, comment, reason, fence_token";

/// Who is acting and under which lock.
pub struct TxContext<'a> {
    pub actor: &'a UserId,
    pub request_id: &'a str,
    /// The outer lock, when held (None: degraded to the row lock alone).
    pub lease: Option<&'a Lease>,
    /// Test hook: sleep after the row locks are taken and before the lease check and COMMIT,
    /// to simulate a holder that pauses past its TTL.
    pub pause_before_commit: Option<Duration>,
    /// The request's idempotency key, if any: its response is recorded in this transaction.
    pub receipt: Option<ReceiptWriter<'a>>,
}

/// Renders the response body of a create, to record it with its idempotency key.
pub type RenderDocument = fn(&DocumentRow) -> serde_json::Value;

/// How a transition records the response of an idempotent request.
#[derive(Clone, Copy)]
pub struct ReceiptWriter<'a> {
    pub receipt: &'a Receipt,
    pub status: u16,
    pub render: fn(&Transitioned) -> serde_json::Value,
}

impl TxContext<'_> {
    fn lock_mode(&self) -> &'static str {
        if self.lease.is_some() {
            "redis"
        } else {
            "row_lock_only"
        }
    }
    pub(super) fn fence(&self) -> Option<i64> {
        self.lease
            .and_then(|l| l.fencing_token())
            .map(|f| f.value())
    }
}

/// What one transition wrote.
#[derive(Debug, Clone)]
pub struct Transitioned {
    pub document: DocumentRow,
    pub review: ReviewRow,
}

#[derive(Clone)]
pub struct PgStore {
    pool: PgPool,
    /// `SET LOCAL lock_timeout` of every write transaction.
    lock_timeout: Duration,
    /// Client-side bound on a whole write transaction: a partitioned database never
    /// answers, and the server-side timeouts cannot fire then.
    tx_timeout: Duration,
}

impl PgStore {
    pub fn new(pool: PgPool, lock_timeout: Duration, tx_timeout: Duration) -> Self {
        Self {
            pool,
            lock_timeout,
            tx_timeout,
        }
    }

    /// Runs a write transaction under `tx_timeout`; dropping it on timeout rolls it back.
    async fn bounded<T>(
        &self,
        tx: impl std::future::Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        tokio::time::timeout(self.tx_timeout, tx)
            .await
            .map_err(|_| StoreError::TimedOut(self.tx_timeout))?
    }

    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Creates a DRAFT document (version 1) and its projection row.
    pub async fn create_document(
        &self,
        id: Uuid,
        title: &DocumentTitle,
        body: &DocumentBody,
        author: &UserId,
        request_id: &str,
        receipt: Option<(&Receipt, RenderDocument)>,
    ) -> Result<DocumentRow, StoreError> {
        self.bounded(self.create_document_unbounded(id, title, body, author, request_id, receipt))
            .await
    }

    #[tracing::instrument(skip_all, fields(document_id = %id))]
    async fn create_document_unbounded(
        &self,
        id: Uuid,
        title: &DocumentTitle,
        body: &DocumentBody,
        author: &UserId,
        request_id: &str,
        receipt: Option<(&Receipt, RenderDocument)>,
    ) -> Result<DocumentRow, StoreError> {
        let mut tx = self.pool.begin().await?;
        let doc: DocumentRow = sqlx::query_as(&format!(
            "INSERT INTO documents (id, title, body, status, version, author_id) \
             VALUES ($1, $2, $3, 'DRAFT', 1, $4) RETURNING {DOC_COLS}"
        ))
        .bind(id)
        .bind(title.as_str())
        .bind(body.as_str())
        .bind(author.as_str())
        .fetch_one(&mut *tx)
        .await?;
        audit(
            &mut tx, &doc, None, "create", author, None, request_id, "none", None,
        )
        .await?;
        enqueue(
            &mut tx,
            &doc,
            None,
            "document.created",
            None,
            author,
            json!({}),
        )
        .await?;
        if let Some((receipt, render)) = receipt {
            record_in_tx(&mut tx, receipt, 201, &render(&doc)).await?;
        }
        tx.commit().await?;
        Ok(doc)
    }

    pub async fn get_document(&self, id: Uuid) -> Result<DocumentRow, StoreError> {
        sqlx::query_as(&format!("SELECT {DOC_COLS} FROM documents WHERE id = $1"))
            .bind(id)
            .fetch_optional(&self.pool)
            .await?
            .ok_or(StoreError::NotFound)
    }

    /// Edits title and/or body; allowed in DRAFT and REJECTED, by the author only.
    pub async fn update_document(
        &self,
        id: Uuid,
        title: Option<&DocumentTitle>,
        body: Option<&DocumentBody>,
        ctx: &TxContext<'_>,
    ) -> Result<DocumentRow, StoreError> {
        self.bounded(self.update_document_unbounded(id, title, body, ctx))
            .await
    }

    #[tracing::instrument(skip_all, fields(document_id = %id))]
    async fn update_document_unbounded(
        &self,
        id: Uuid,
        title: Option<&DocumentTitle>,
        body: Option<&DocumentBody>,
        ctx: &TxContext<'_>,
    ) -> Result<DocumentRow, StoreError> {
        let mut tx = self.begin().await?;
        let doc = lock_document(&mut tx, id).await?;
        if doc.author_id != ctx.actor.as_str() {
            return Err(StoreError::Forbidden("only the author may edit a document"));
        }
        let status = parse_doc_status(&doc.status)?;
        status.apply(Action::Edit)?;
        let updated: DocumentRow = sqlx::query_as(&format!(
            "UPDATE documents SET title = COALESCE($2, title), body = COALESCE($3, body), \
             version = version + 1, updated_at = clock_timestamp() WHERE id = $1 RETURNING {DOC_COLS}"
        ))
        .bind(id)
        .bind(title.map(|t| t.as_str()))
        .bind(body.map(|b| b.as_str()))
        .fetch_one(&mut *tx)
        .await?;
        audit(
            &mut tx,
            &updated,
            None,
            "edit",
            ctx.actor,
            Some(&doc.status),
            ctx.request_id,
            "none",
            None,
        )
        .await?;
        enqueue(
            &mut tx,
            &updated,
            None,
            "document.updated",
            None,
            ctx.actor,
            json!({}),
        )
        .await?;
        tx.commit().await?;
        Ok(updated)
    }

    /// DRAFT|REJECTED -> PENDING_REVIEW with a new pending review.
    pub async fn submit(
        &self,
        document_id: Uuid,
        ctx: &TxContext<'_>,
    ) -> Result<Transitioned, StoreError> {
        self.bounded(self.submit_unbounded(document_id, ctx)).await
    }

    #[tracing::instrument(skip_all, fields(document_id = %document_id))]
    async fn submit_unbounded(
        &self,
        document_id: Uuid,
        ctx: &TxContext<'_>,
    ) -> Result<Transitioned, StoreError> {
        let mut tx = self.begin().await?;
        let doc = lock_document(&mut tx, document_id).await?;
        if doc.author_id != ctx.actor.as_str() {
            return Err(StoreError::Forbidden(
                "only the author may submit a document",
            ));
        }
        let next = parse_doc_status(&doc.status)?.apply(Action::Submit)?;
        check_fence(&doc, ctx)?;
        let review_id = Uuid::now_v7();
        let review: ReviewRow = sqlx::query_as(&format!(
            "INSERT INTO reviews (id, document_id, status, document_version, submitted_by, fence_token) \
             VALUES ($1, $2, 'PENDING', $3, $4, $5) RETURNING {REVIEW_COLS}"
        ))
        .bind(review_id)
        .bind(document_id)
        .bind(doc.version + 1)
        .bind(ctx.actor.as_str())
        .bind(ctx.fence())
        .fetch_one(&mut *tx)
        .await?;
        let updated = set_document_status(&mut tx, &doc, next, Some(review_id), ctx).await?;
        let data = json!({ "title": updated.title, "submitted_by": review.submitted_by });
        self.finish(tx, &doc, &updated, &review, Action::Submit, data, ctx)
            .await
    }

    /// PENDING -> APPROVED | REJECTED for the review, and the document with it.
    pub async fn decide(
        &self,
        review_id: Uuid,
        action: Action,
        comment: Option<&Comment>,
        reason: Option<&RejectReason>,
        ctx: &TxContext<'_>,
    ) -> Result<Transitioned, StoreError> {
        self.bounded(self.decide_unbounded(review_id, action, comment, reason, ctx))
            .await
    }

    #[tracing::instrument(skip_all, fields(review_id = %review_id, action = action.as_str()))]
    async fn decide_unbounded(
        &self,
        review_id: Uuid,
        action: Action,
        comment: Option<&Comment>,
        reason: Option<&RejectReason>,
        ctx: &TxContext<'_>,
    ) -> Result<Transitioned, StoreError> {
        let mut tx = self.begin().await?;
        // Find the document without locking, then lock document then review (global order).
        let document_id: Uuid = sqlx::query_scalar("SELECT document_id FROM reviews WHERE id = $1")
            .bind(review_id)
            .fetch_optional(&mut *tx)
            .await?
            .ok_or(StoreError::NotFound)?;
        let doc = lock_document(&mut tx, document_id).await?;
        let review: ReviewRow = sqlx::query_as(&format!(
            "SELECT {REVIEW_COLS} FROM reviews WHERE id = $1 FOR UPDATE"
        ))
        .bind(review_id)
        .fetch_one(&mut *tx)
        .await?;
        // A holder whose lock moved on is told so, before anything else is judged.
        check_fence(&doc, ctx)?;
        if doc.author_id == ctx.actor.as_str() {
            return Err(StoreError::SelfReview);
        }
        let review_status = ReviewStatus::parse(&review.status)
            .ok_or_else(|| anyhow::anyhow!("unknown review status in database"))?;
        let Some(decided) = review_status.decide(action) else {
            return Err(StoreError::ReviewDecided(review.status.clone()));
        };
        let next = parse_doc_status(&doc.status)?.apply(action)?;
        if doc.current_review_id != Some(review_id) {
            return Err(StoreError::ReviewDecided("not the current review".into()));
        }
        let review: ReviewRow = sqlx::query_as(&format!(
            "UPDATE reviews SET status = $2, decided_by = $3, decided_at = clock_timestamp(), comment = $4, \
             reason = $5, fence_token = $6 WHERE id = $1 RETURNING {REVIEW_COLS}"
        ))
        .bind(review_id)
        .bind(decided.as_str())
        .bind(ctx.actor.as_str())
        .bind(comment.map(|c| c.as_str()).filter(|c| !c.is_empty()))
        .bind(reason.map(|r| r.as_str()))
        .bind(ctx.fence())
        .fetch_one(&mut *tx)
        .await?;
        let updated = set_document_status(&mut tx, &doc, next, doc.current_review_id, ctx).await?;
        let data = match action {
            Action::Approve => json!({ "title": updated.title, "comment": review.comment }),
            _ => json!({ "title": updated.title, "reason": review.reason }),
        };
        self.finish(tx, &doc, &updated, &review, action, data, ctx)
            .await
    }

    /// Audit row, outbox row, lease check, COMMIT.
    #[allow(clippy::too_many_arguments)]
    async fn finish(
        &self,
        mut tx: Transaction<'_, Postgres>,
        before: &DocumentRow,
        doc: &DocumentRow,
        review: &ReviewRow,
        action: Action,
        data: serde_json::Value,
        ctx: &TxContext<'_>,
    ) -> Result<Transitioned, StoreError> {
        audit(
            &mut tx,
            doc,
            Some(review.id),
            action.as_str(),
            ctx.actor,
            Some(&before.status),
            ctx.request_id,
            ctx.lock_mode(),
            ctx.fence(),
        )
        .await?;
        let event_type = match action {
            Action::Submit => "document.submitted",
            Action::Approve => "document.approved",
            Action::Reject => "document.rejected",
            Action::Edit => unreachable!("edits are not transitions"),
        };
        enqueue(
            &mut tx,
            doc,
            Some(review.id),
            event_type,
            Some(event_type),
            ctx.actor,
            data,
        )
        .await?;
        if let Some(pause) = ctx.pause_before_commit {
            tokio::time::sleep(pause).await;
        }
        let done = Transitioned {
            document: doc.clone(),
            review: review.clone(),
        };
        if let Some(w) = ctx.receipt {
            record_in_tx(&mut tx, w.receipt, w.status, &(w.render)(&done)).await?;
        }
        if let Some(lease) = ctx.lease {
            if lease.check().is_err() {
                tx.rollback().await?;
                return Err(StoreError::LockLost);
            }
        }
        tx.commit().await?;
        Ok(done)
    }

    async fn begin(&self) -> Result<Transaction<'_, Postgres>, StoreError> {
        let mut tx = self.pool.begin().await?;
        sqlx::query("SELECT set_config('lock_timeout', $1, true)")
            .bind(format!("{}ms", self.lock_timeout.as_millis().max(1)))
            .execute(&mut *tx)
            .await?;
        Ok(tx)
    }

    /// Reviews in `status`, oldest submission first, after the keyset `after`.
    pub async fn list_reviews(
        &self,
        status: ReviewStatus,
        after: Option<(DateTime<Utc>, Uuid)>,
        limit: i64,
    ) -> Result<Vec<ReviewRow>, StoreError> {
        let (ts, id) = after.unzip();
        Ok(sqlx::query_as(&format!(
            "SELECT {REVIEW_COLS} FROM reviews WHERE status = $1 \
             AND ($2::timestamptz IS NULL OR (submitted_at, id) > ($2, $3)) \
             ORDER BY submitted_at, id LIMIT $4"
        ))
        .bind(status.as_str())
        .bind(ts)
        .bind(id)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?)
    }

    /// Every review of a document, oldest first. NotFound when the document does not exist.
    pub async fn document_reviews(&self, document_id: Uuid) -> Result<Vec<ReviewRow>, StoreError> {
        let exists: bool =
            sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM documents WHERE id = $1)")
                .bind(document_id)
                .fetch_one(&self.pool)
                .await?;
        if !exists {
            return Err(StoreError::NotFound);
        }
        Ok(sqlx::query_as(&format!(
            "SELECT {REVIEW_COLS} FROM reviews WHERE document_id = $1 ORDER BY submitted_at, id"
        ))
        .bind(document_id)
        .fetch_all(&self.pool)
        .await?)
    }

    pub async fn ping(&self) -> Result<(), StoreError> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }
}
