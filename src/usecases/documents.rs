//! Documents: create, edit, read with the body from the MongoDB projection when it holds
//! the current version, and the review history; the published revision and the comments
//! (reads that honour private drafts, and the comment write, under the document's row lock
//! alone: comments are append-only and contend for nothing a Redis lock would guard). Create and edit take no outer lock (create
//! has no rows to contend for; an edit is guarded by its row lock alone).

use std::collections::HashMap;
use std::sync::Arc;

use uuid::Uuid;

use crate::domain::{
    preview_of, CommentBody, Commented, Conditions, Document, DocumentBody, DocumentTitle, Guard,
    PostedComment, Reader, Refusal, Review, SpaceKey, SpaceRole,
};
use crate::outbox::Dispatcher;
use crate::store::mongo::{MongoProjection, ProjectedDocument, ReadError};
use crate::store::{Committed, NewPolicy, PgStore, WriteContext};

use super::commit::commit;
use super::context::Context;
use super::error::Error;
use super::test_hooks::Point;
use super::unseen::{hide_contention, Asker, Item};

/// Where a document's body and preview were read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodySource {
    /// The projection holds the current version.
    MongoDb,
    /// The projection lags or is unreachable.
    PostgreSql,
}

impl BodySource {
    pub fn as_str(self) -> &'static str {
        match self {
            BodySource::MongoDb => "mongodb",
            BodySource::PostgreSql => "postgresql",
        }
    }
}

/// A document as `GET /documents/{id}` shows it: `document.body` is the body read from
/// `source`.
#[derive(Debug, Clone)]
pub struct DocumentRead {
    pub document: Document,
    pub preview: String,
    pub source: BodySource,
}

/// What an edit changes: title, body and/or policy (at least one; `None`: unchanged).
#[derive(Debug, Clone, Default)]
pub struct EditChange {
    pub title: Option<DocumentTitle>,
    pub body: Option<DocumentBody>,
    pub policy: Option<String>,
}

pub struct DocumentService {
    pub(super) store: PgStore,
    mongo: MongoProjection,
    pub(super) dispatcher: Arc<Dispatcher>,
    /// The policy of a document created without one (`review.default_policy`).
    default_policy: String,
}

impl DocumentService {
    pub fn new(
        store: PgStore,
        mongo: MongoProjection,
        dispatcher: Arc<Dispatcher>,
        default_policy: String,
    ) -> Self {
        Self {
            store,
            mongo,
            dispatcher,
            default_policy,
        }
    }

    /// Creates a DRAFT document in `space` following `policy` (when `None`: the space's
    /// default policy, else `review.default_policy`). The caller must be an author there: a
    /// caller with no role in the space does not learn it exists.
    pub async fn create(
        &self,
        ctx: Context,
        space: SpaceKey,
        title: DocumentTitle,
        body: DocumentBody,
        policy: Option<String>,
    ) -> Result<Document, Error> {
        let roles = ctx.access.roles_in(space.as_str());
        if roles.is_empty() {
            return Err(Refusal::NotFound.into());
        }
        if !roles.contains(SpaceRole::Author) {
            return Err(Refusal::Forbidden(
                "creating a document needs the author role in its space",
            )
            .into());
        }
        let id = Uuid::now_v7();
        let policy = NewPolicy {
            named: policy.as_deref(),
            fallback: &self.default_policy,
        };
        let wctx = ctx.writing(Guard::Unlocked, self.dispatcher.own_outbox_for());
        let Committed { value: doc, owned } = self
            .store
            .bounded(async {
                let uncommitted = self
                    .store
                    .write_create(id, title, body, &space, policy, &wctx)
                    .await?;
                commit(uncommitted, None, ctx.held_key.as_ref()).await
            })
            .await?;
        tracing::info!(document_id = %doc.id, "document created");
        ctx.hooks.at(Point::Committed).await?;
        self.dispatcher.after_commit(&doc, owned).await;
        Ok(doc)
    }

    /// Edits title, body and/or policy (its author; once it was submitted, any author of its
    /// space: a contributor), in DRAFT, REJECTED or APPROVED (an edit of an approved
    /// document starts a revision), if it is at a version its `If-Match` accepts and nobody
    /// else holds its edit lease (or the lease its `Lease-Token` names is still live).
    pub async fn edit(
        &self,
        actor: Reader<'_>,
        request_id: &str,
        id: Uuid,
        change: EditChange,
        conditions: Conditions<'_>,
    ) -> Result<Document, Error> {
        let wctx = WriteContext {
            actor: actor.id,
            access: actor.access,
            request_id,
            guard: Guard::Unlocked,
            own_outbox_for: self.dispatcher.own_outbox_for(),
            conditions,
        };
        let EditChange {
            title,
            body,
            policy,
        } = change;
        let done = self
            .store
            .bounded(async {
                let uncommitted = self
                    .store
                    .write_edit(id, title, body, policy, &wctx)
                    .await?;
                Ok::<_, Error>(uncommitted.commit().await?)
            })
            .await;
        let committed = hide_contention(&self.store, actor, Item::Document(id), done).await?;
        tracing::info!(document_id = %id, version = committed.value.version, "document edited");
        self.dispatcher
            .after_commit(&committed.value, committed.owned)
            .await;
        Ok(committed.value)
    }

    /// The document as it is (its working copy), with body and preview from MongoDB when
    /// it holds this version; not found for a reader who may not see it.
    pub async fn get(&self, reader: Reader<'_>, id: Uuid) -> Result<DocumentRead, Error> {
        let mut document = self.readable_document(reader, id).await?;
        match self
            .projection(id)
            .await
            .and_then(|p| p.current(document.version))
        {
            Some(copy) => {
                document.body = copy.body;
                Ok(DocumentRead {
                    document,
                    preview: copy.preview,
                    source: BodySource::MongoDb,
                })
            }
            None => Ok(DocumentRead {
                preview: preview_of(&document.body),
                document,
                source: BodySource::PostgreSql,
            }),
        }
    }

    /// The document, if `reader` may see it.
    pub(super) async fn readable_document(
        &self,
        reader: Reader<'_>,
        id: Uuid,
    ) -> Result<Document, Error> {
        Ok(self
            .store
            .document(id)
            .await?
            .filter(|d| d.readable_by(reader))
            .ok_or(Refusal::NotFound)?)
    }

    /// What MongoDB holds of the document (`None`: nothing, or MongoDB could not say).
    pub(super) async fn projection(&self, id: Uuid) -> Option<ProjectedDocument> {
        match self.mongo.get(id).await {
            Ok(found) => found,
            Err(ReadError::Failed(e)) => {
                tracing::warn!(error = %e, "mongodb unavailable; serving the body from postgresql");
                None
            }
            Err(ReadError::Skipped) => {
                tracing::debug!("mongodb circuit breaker open; serving the body from postgresql");
                None
            }
        }
    }

    /// The titles of the documents of `ids`, for lists of reviews.
    pub async fn titles(&self, ids: &[Uuid]) -> Result<HashMap<Uuid, String>, Error> {
        Ok(self.store.document_titles(ids).await?.into_iter().collect())
    }

    /// The document's reviews after the one numbered `after` (0: from the first), oldest
    /// first, each with its number; not found for a reader who may not see the document.
    pub async fn history(
        &self,
        reader: Reader<'_>,
        id: Uuid,
        after: i64,
        limit: i64,
    ) -> Result<Vec<(i64, Review)>, Error> {
        self.check_readable(reader, id).await?;
        Ok(self.store.reviews_page(id, after, limit).await?)
    }

    /// Not found unless the document exists and `reader` may see it.
    pub(super) async fn check_readable(&self, reader: Reader<'_>, id: Uuid) -> Result<(), Error> {
        match self.store.readable(id, reader).await? {
            Some(true) => Ok(()),
            _ => Err(Refusal::NotFound.into()),
        }
    }
}

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
        let done = self
            .store
            .bounded(async {
                let uncommitted = self.store.write_comment(id, body, review_id, &wctx).await?;
                commit(uncommitted, None, ctx.held_key.as_ref()).await
            })
            .await;
        let item = Item::Document(id);
        let asker = Asker::of(&ctx);
        let Committed { value, owned } = asker.hide_contention(&self.store, item, done).await?;
        tracing::info!(document_id = %id, seq = value.comment.seq, "comment added");
        self.dispatcher.after_commit(&value.document, owned).await;
        Ok(value)
    }
}
