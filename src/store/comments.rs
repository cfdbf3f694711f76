//! Comments on a document: written under the document's row lock alone, numbered per
//! document, and read page by page.

use sqlx::{Postgres, Transaction};
use uuid::Uuid;

use super::audit::links::Head;
use super::documents::locked_document;
use super::error::{StoreError, WriteError};
use super::pg::{PgStore, Statement};
use super::spaces::memberships::judged_by_read;
use super::tx::{write_change, Change, Uncommitted, WriteContext};
use crate::domain::rules::plan_comment;
use crate::domain::{CommentBody, Commented, Document, PostedComment};

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
        let locked = lock_document_for_comment(&mut tx, document_id, review_id).await?;
        let (document, head) = locked.locked.unzip();
        // A caller whose memberships this transaction read as it began is judged with them.
        let joined = judged_by_read(&mut tx, ctx.access, locked.memberships).await?;
        let ctx = &ctx.judged_by(joined.as_ref());
        let review = review_id.map(|r| (r, locked.review_document));
        let id = Uuid::now_v7();
        let plan = plan_comment(document.as_ref(), ctx.reader(), id, body, review)?;
        let doc =
            document.ok_or_else(|| anyhow::anyhow!("a comment planned without a document"))?;
        let head = head.ok_or_else(|| anyhow::anyhow!("a comment without a chain head"))?;
        let link = self
            .audit
            .at(head)
            .link(doc.id, &plan.audit, doc.version, ctx);
        let c = plan.comment;
        // The comment, its number, the chain head, the audit row and the event: one
        // statement.
        let change = Change {
            doc: &doc,
            audit: &plan.audit,
            entry: &plan.outbox,
            occurred_at: link.at,
            link: &link,
            comment: Some(&c),
        };
        let written = write_change(&mut tx, change, ctx).await?;
        let (seq, created_at) = written
            .comment
            .ok_or_else(|| anyhow::anyhow!("a comment written without its row"))?;
        let owned = written.owned;
        let comment = PostedComment {
            id: c.id,
            document_id: c.document_id,
            seq,
            review_id: c.review_id,
            author_id: c.author_id,
            body: c.body,
            created_at,
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

/// A document locked for a comment: the row and its chain head, the caller's memberships
/// as its transaction's `BEGIN` read them (`None`: it did not read them), and the document
/// of the review the comment points at (`None`: no such review, or none asked), read in the
/// same statement.
#[derive(Default)]
struct ForComment {
    locked: Option<(Document, Head)>,
    memberships: Option<String>,
    review_document: Option<Uuid>,
}

/// [`lock_document`](super::documents::lock_document) for a comment pointing at `review`
/// (see [`ForComment`]).
async fn lock_document_for_comment(
    tx: &mut Transaction<'static, Postgres>,
    id: Uuid,
    review: Option<Uuid>,
) -> Result<ForComment, StoreError> {
    Ok(match locked_document(tx, id, review).await? {
        Some(mut row) => ForComment {
            memberships: row.memberships.take(),
            review_document: row.review_document.take(),
            locked: Some(row.split()),
        },
        None => ForComment::default(),
    })
}
