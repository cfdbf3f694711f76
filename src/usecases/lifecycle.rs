//! A document's published revision and its comments: reads that honour private drafts, and
//! the comment write (under the document's row lock alone: comments are append-only and
//! contend for nothing a Redis lock would guard).

use uuid::Uuid;

use crate::domain::{
    preview_of, CommentBody, Commented, Document, Guard, PostedComment, Reader, Refusal,
};
use crate::store::Committed;

use super::commit::commit;
use super::context::Context;
use super::documents::{BodySource, DocumentService};
use super::error::Error;

/// The published revision of a document, as `GET /documents/{id}/published` shows it.
#[derive(Debug, Clone)]
pub struct PublishedRead {
    /// The document as it is now (its working copy's version and status).
    pub document: Document,
    pub version: i64,
    pub title: String,
    pub body: String,
    pub preview: String,
    pub source: BodySource,
}

impl DocumentService {
    /// The published revision, from MongoDB when it holds it; not found before the first
    /// approval, after an archive, and for a reader who may not see the document.
    pub async fn published(&self, reader: Reader<'_>, id: Uuid) -> Result<PublishedRead, Error> {
        let document = self.readable_document(reader, id).await?;
        let (Some(version), Some(title), Some(body)) = (
            document.published_version,
            document.published_title.clone(),
            document.published_body.clone(),
        ) else {
            return Err(Refusal::NotFound.into());
        };
        let read = match self.projection(id).await.and_then(|p| p.published(version)) {
            Some(copy) => PublishedRead {
                version,
                title,
                body: copy.body,
                preview: copy.preview,
                source: BodySource::MongoDb,
                document,
            },
            None => PublishedRead {
                version,
                title,
                preview: preview_of(&body),
                body,
                source: BodySource::PostgreSql,
                document,
            },
        };
        Ok(read)
    }

    /// The document's comments after number `after` (0: from the first), oldest first.
    pub async fn comments(
        &self,
        reader: Reader<'_>,
        id: Uuid,
        after: i64,
        limit: i64,
    ) -> Result<Vec<PostedComment>, Error> {
        self.check_readable(reader, id).await?;
        Ok(self.store.comments_page(id, after, limit).await?)
    }

    /// A comment on the document by the caller (anyone who may read it), pointing at
    /// `review_id` (one of its reviews) when given; announced by `document.commented`.
    pub async fn comment(
        &self,
        ctx: Context,
        id: Uuid,
        body: CommentBody,
        review_id: Option<Uuid>,
    ) -> Result<Commented, Error> {
        let wctx = ctx.writing(Guard::Unlocked, self.dispatcher.own_outbox_for());
        let Committed { value, owned } = self
            .store
            .bounded(async {
                let uncommitted = self.store.write_comment(id, body, review_id, &wctx).await?;
                commit(uncommitted, None, ctx.held_key.as_ref()).await
            })
            .await?;
        tracing::info!(document_id = %id, seq = value.comment.seq, "comment added");
        self.dispatcher.after_commit(&value.document, owned).await;
        Ok(value)
    }
}
