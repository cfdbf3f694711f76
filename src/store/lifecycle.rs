//! Statements of a document's life after its first review: the archive (a transition under
//! the document's outer lock, withdrawing a pending review), comments (under the document's
//! row lock alone, numbered per document), and the paged reads of comments and of the
//! review history.

use chrono::Utc;
use uuid::Uuid;

use super::documents::lock_document;
use super::error::{StoreError, WriteError};
use super::pg::{PgStore, Statement};
use super::review_rows::{lock_review, ReviewRow};
use super::tx::{write_audit_and_event, Staged, WriteContext};
use crate::domain::rules::{self, plan_comment};
use crate::domain::{
    ArchiveReason, Archived, Command, CommentBody, Commented, DocumentStatus, FencingToken, Locked,
    PostedComment, Reader, Review, ReviewStatus,
};

impl PgStore {
    /// Any status but ARCHIVED -> ARCHIVED, a pending review withdrawn; uncommitted.
    #[tracing::instrument(level = "debug", skip_all, fields(document_id = %document_id))]
    pub async fn stage_archive(
        &self,
        document_id: Uuid,
        reason: Option<ArchiveReason>,
        expected_version: Option<i64>,
        ctx: &WriteContext<'_>,
    ) -> Result<Staged<Archived>, WriteError> {
        let mut tx = self.begin().await?;
        let (document, head) = lock_document(&mut tx, document_id).await?.unzip();
        let pending = document
            .as_ref()
            .filter(|d| d.status == DocumentStatus::PendingReview)
            .and_then(|d| d.current_review_id);
        let (review, now) = match pending {
            Some(id) => lock_review(&mut tx, id).await?,
            None => (None, Utc::now()),
        };
        let locked = Locked {
            document,
            review,
            policy: None,
            now,
        };
        let command = Command::Archive {
            reason,
            expected_version,
        };
        let plan = rules::plan(&locked, ctx.reader(), command, ctx.guard)?;
        let (tx, document, review, owned) = self.write_planned(tx, locked, head, plan, ctx).await?;
        Ok(Staged::new(tx, Archived { document, review }, owned))
    }

    /// A comment by the actor on the document, pointing at `review_id` when given, numbered
    /// under the document's row lock; uncommitted.
    #[tracing::instrument(level = "debug", skip_all, fields(document_id = %document_id))]
    pub async fn stage_comment(
        &self,
        document_id: Uuid,
        body: CommentBody,
        review_id: Option<Uuid>,
        ctx: &WriteContext<'_>,
    ) -> Result<Staged<Commented>, WriteError> {
        let mut tx = self.begin().await?;
        let (document, head) = lock_document(&mut tx, document_id).await?.unzip();
        let review = match review_id {
            Some(r) => Some((r, review_document(&mut tx, r).await?)),
            None => None,
        };
        let id = Uuid::now_v7();
        let plan = plan_comment(document.as_ref(), ctx.reader(), id, body, review)?;
        let doc =
            document.ok_or_else(|| anyhow::anyhow!("a comment planned without a document"))?;
        let head = head.ok_or_else(|| anyhow::anyhow!("a comment without a chain head"))?;
        let link = self
            .audit
            .at(head)
            .link(doc.id, &plan.audit, doc.version, ctx)
            .moved_with_document();
        let c = plan.comment;
        // The chain head moves with the comment's number, in one statement.
        let row = sqlx::query!(
            r#"WITH n AS (
                 UPDATE documents SET comment_count = comment_count + 1,
                        audit_count = COALESCE($6, audit_count),
                        audit_head = COALESCE($7, audit_head)
                 WHERE id = $1
                 RETURNING comment_count)
               INSERT INTO comments (document_id, seq, id, review_id, author_id, body)
               SELECT $1, n.comment_count, $2, $3, $4, $5 FROM n
               RETURNING seq, created_at"#,
            c.document_id,
            c.id,
            c.review_id,
            &c.author_id,
            &c.body,
            link.seq,
            link.hash.as_deref(),
        )
        .fetch_one(&mut *tx)
        .await?;
        let (audit, outbox, at) = (&plan.audit, &plan.outbox, row.created_at);
        let owned = write_audit_and_event(&mut tx, &doc, audit, outbox, ctx, at, &link).await?;
        let comment = PostedComment {
            id: c.id,
            document_id: c.document_id,
            seq: row.seq,
            review_id: c.review_id,
            author_id: c.author_id,
            body: c.body,
            created_at: row.created_at,
        };
        Ok(Staged::new(
            tx,
            Commented {
                comment,
                document: doc,
            },
            owned,
        ))
    }

    /// Whether `reader` may see the document (`None`: no such document).
    pub async fn readable(&self, id: Uuid, reader: Reader<'_>) -> Result<Option<bool>, StoreError> {
        let row = sqlx::query!(
            r#"SELECT author_id, current_review_id IS NOT NULL AS "submitted!"
               FROM documents WHERE id = $1"#,
            id
        )
        .fetch_optional(&self.pool)
        .bounded(self)
        .await?;
        Ok(row.map(|r| crate::domain::readable(&r.author_id, r.submitted, reader)))
    }

    /// The document's comments after number `after`, oldest first, at most `limit`.
    pub async fn comments_page(
        &self,
        document_id: Uuid,
        after: i64,
        limit: i64,
    ) -> Result<Vec<PostedComment>, StoreError> {
        sqlx::query_as!(
            PostedComment,
            "SELECT id, document_id, seq, review_id, author_id, body, created_at FROM comments \
             WHERE document_id = $1 AND seq > $2 ORDER BY seq LIMIT $3",
            document_id,
            after,
            limit
        )
        .fetch_all(&self.pool)
        .bounded(self)
        .await
    }

    /// The document's reviews after the one numbered `after` in commit order, oldest first,
    /// at most `limit`, each with its number (the page's cursor).
    pub async fn reviews_page(
        &self,
        document_id: Uuid,
        after: i64,
        limit: i64,
    ) -> Result<Vec<(i64, Review)>, StoreError> {
        let rows = sqlx::query!(
            r#"SELECT id, document_id, status AS "status: ReviewStatus", document_version,
                      submitted_by, submitted_at, decided_by, decided_at, comment, reason,
                      fence_token AS "fence_token: FencingToken", policy, policy_version,
                      stage, due_at, queue_seq
               FROM reviews WHERE document_id = $1 AND queue_seq > $2
               ORDER BY queue_seq LIMIT $3"#,
            document_id,
            after,
            limit
        )
        .fetch_all(&self.pool)
        .bounded(self)
        .await?;
        let seqs: Vec<i64> = rows.iter().map(|r| r.queue_seq).collect();
        let rows = rows
            .into_iter()
            .map(|r| ReviewRow {
                id: r.id,
                document_id: r.document_id,
                status: r.status,
                document_version: r.document_version,
                submitted_by: r.submitted_by,
                submitted_at: r.submitted_at,
                decided_by: r.decided_by,
                decided_at: r.decided_at,
                comment: r.comment,
                reason: r.reason,
                fence_token: r.fence_token,
                policy: r.policy,
                policy_version: r.policy_version,
                stage: r.stage,
                due_at: r.due_at,
            })
            .collect();
        let reviews = self.with_flows(rows).await?;
        Ok(seqs.into_iter().zip(reviews).collect())
    }
}

/// The document a review belongs to (`None`: no such review).
async fn review_document(
    tx: &mut sqlx::Transaction<'static, sqlx::Postgres>,
    review_id: Uuid,
) -> Result<Option<Uuid>, StoreError> {
    Ok(
        sqlx::query_scalar!("SELECT document_id FROM reviews WHERE id = $1", review_id)
            .fetch_optional(&mut **tx)
            .await?,
    )
}
