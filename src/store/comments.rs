//! Comments on a document: written under the document's row lock alone, numbered per
//! document, and read page by page.

use uuid::Uuid;

use super::documents::lock_document_as_read;
use super::error::{StoreError, WriteError};
use super::pg::{PgStore, Statement};
use super::spaces::memberships::judged_by_read;
use super::tx::{write_audit_and_event, Uncommitted, WriteContext};
use crate::domain::rules::plan_comment;
use crate::domain::{CommentBody, Commented, PostedComment};

impl PgStore {
    /// A comment by the actor on the document, pointing at `review_id` when given, numbered
    /// under the document's row lock; uncommitted.
    #[tracing::instrument(level = "debug", skip_all, fields(document_id = %document_id))]
    pub async fn write_comment(
        &self,
        document_id: Uuid,
        body: CommentBody,
        review_id: Option<Uuid>,
        ctx: &WriteContext<'_>,
    ) -> Result<Uncommitted<Commented>, WriteError> {
        let mut tx = self.begin().await?;
        let (document, read) = lock_document_as_read(&mut tx, document_id).await?;
        let (document, head) = document.unzip();
        // A caller whose memberships this transaction read as it began is judged with them.
        let joined = judged_by_read(&mut tx, ctx.access, read).await?;
        let ctx = &ctx.judged_by(joined.as_ref());
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
        // The chain head moves with the comment's number, in one statement; the comment is
        // in the space the document row names.
        let row = sqlx::query!(
            r#"WITH n AS (
                 UPDATE documents SET comment_count = comment_count + 1,
                        audit_count = COALESCE($6, audit_count),
                        audit_head = COALESCE($7, audit_head)
                 WHERE id = $1
                 RETURNING comment_count, space_id)
               INSERT INTO comments (document_id, seq, id, review_id, author_id, body, space_id)
               SELECT $1, n.comment_count, $2, $3, $4, $5, n.space_id FROM n
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
        let commented = Commented {
            comment,
            document: doc,
        };
        Ok(Uncommitted::new(tx, commented, owned).in_space(|c| c.document.space.clone()))
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
        .fetch_all(&mut *self.scoped().await?)
        .bounded(self)
        .await
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
