//! Documents: create, edit, read with the body from the MongoDB projection when it holds
//! the current version, and the review history. Create and edit take no outer lock (create
//! has no rows to contend for; an edit is guarded by its row lock alone).

use std::collections::HashMap;
use std::sync::Arc;

use uuid::Uuid;

use crate::domain::{
    preview_of, Document, DocumentBody, DocumentStatus, DocumentTitle, Guard, Refusal, Review,
    UserId,
};
use crate::outbox::Dispatcher;
use crate::store::mongo::{MongoProjection, ReadError};
use crate::store::{Committed, PgStore, WriteContext};

use super::commit::commit;
use super::context::Context;
use super::error::Error;
use super::test_hooks::Point;

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

pub struct DocumentService {
    store: PgStore,
    mongo: MongoProjection,
    dispatcher: Arc<Dispatcher>,
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

    /// Creates a DRAFT document following `policy` (the default policy when `None`).
    pub async fn create(
        &self,
        ctx: Context,
        title: DocumentTitle,
        body: DocumentBody,
        policy: Option<String>,
    ) -> Result<Document, Error> {
        let id = Uuid::now_v7();
        let policy = policy.unwrap_or_else(|| self.default_policy.clone());
        let wctx = WriteContext {
            actor: &ctx.actor,
            request_id: &ctx.request_id,
            guard: Guard::Unlocked,
            own_outbox_for: self.dispatcher.own_outbox_for(),
        };
        let Committed { value: doc, owned } = self
            .store
            .bounded(async {
                let staged = self
                    .store
                    .stage_create(id, title, body, policy, &wctx)
                    .await?;
                commit(staged, None, ctx.held_key.as_ref()).await
            })
            .await?;
        tracing::info!(document_id = %doc.id, "document created");
        ctx.hooks.at(Point::Committed).await?;
        self.dispatcher.after_commit(&doc, owned).await;
        Ok(doc)
    }

    /// Edits title, body and/or policy (the author, in DRAFT or REJECTED).
    #[allow(clippy::too_many_arguments)]
    pub async fn edit(
        &self,
        actor: &UserId,
        request_id: &str,
        id: Uuid,
        title: Option<DocumentTitle>,
        body: Option<DocumentBody>,
        policy: Option<String>,
    ) -> Result<Document, Error> {
        let wctx = WriteContext {
            actor,
            request_id,
            guard: Guard::Unlocked,
            own_outbox_for: self.dispatcher.own_outbox_for(),
        };
        let committed = self
            .store
            .bounded(async {
                let staged = self
                    .store
                    .stage_edit(id, title, body, policy, &wctx)
                    .await?;
                Ok::<_, Error>(staged.commit().await?)
            })
            .await?;
        tracing::info!(document_id = %id, version = committed.value.version, "document edited");
        self.dispatcher
            .after_commit(&committed.value, committed.owned)
            .await;
        Ok(committed.value)
    }

    /// The document, with body and preview from MongoDB when it holds this version.
    pub async fn get(&self, id: Uuid) -> Result<DocumentRead, Error> {
        let mut document = self.store.document(id).await?.ok_or(Refusal::NotFound)?;
        match self.mongo.get(id).await {
            Ok(Some(p)) if p.version == document.version => {
                document.body = p.body;
                Ok(DocumentRead {
                    document,
                    preview: p.preview,
                    source: BodySource::MongoDb,
                })
            }
            other => {
                match other {
                    Err(ReadError::Failed(e)) => {
                        tracing::warn!(error = %e, "mongodb unavailable; serving the body from postgresql")
                    }
                    Err(ReadError::Skipped) => {
                        tracing::debug!(
                            "mongodb circuit breaker open; serving the body from postgresql"
                        )
                    }
                    Ok(_) => {}
                }
                Ok(DocumentRead {
                    preview: preview_of(&document.body),
                    document,
                    source: BodySource::PostgreSql,
                })
            }
        }
    }

    /// `author`'s documents, newest first (without bodies), optionally in one status and
    /// after (older than) the document `before`.
    pub async fn by_author(
        &self,
        author: &UserId,
        status: Option<DocumentStatus>,
        before: Option<Uuid>,
        limit: i64,
    ) -> Result<Vec<Document>, Error> {
        Ok(self
            .store
            .author_documents(author.as_str(), status, before, limit)
            .await?)
    }

    /// The titles of the documents of `ids`, for lists of reviews.
    pub async fn titles(&self, ids: &[Uuid]) -> Result<HashMap<Uuid, String>, Error> {
        Ok(self.store.document_titles(ids).await?.into_iter().collect())
    }

    /// Every review of the document, oldest first.
    pub async fn history(&self, id: Uuid) -> Result<Vec<Review>, Error> {
        Ok(self
            .store
            .document_reviews(id)
            .await?
            .ok_or(Refusal::NotFound)?)
    }
}
