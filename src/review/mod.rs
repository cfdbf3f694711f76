//! Orchestration of one transition: outer lock (or degraded), the PostgreSQL transaction,
//! release, then the immediate outbox delivery attempt.
//!
//! The work runs in its own task, so a client that disconnects mid-request cannot cancel a
//! transition halfway: it completes or never happens, and the lock is released either way.

use std::sync::Arc;
use std::time::Duration;

use uuid::Uuid;

use crate::domain::{Action, Comment, RejectReason, UserId};
use crate::lock::gate::{Contended, LockGate};
use crate::lock::LockKeys;
use crate::outbox::Dispatcher;
use crate::store::pg::{PgStore, Transitioned, TxContext};
use crate::store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum TransitionError {
    #[error(transparent)]
    Contended(#[from] Contended),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A decision on a review.
#[derive(Debug, Clone)]
pub enum Decision {
    Approve(Option<Comment>),
    Reject(RejectReason),
}

/// Per-request options that only tests may set (see `server.test_hooks`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Hooks {
    pub pause_before_commit: Option<Duration>,
}

pub struct ReviewService {
    store: PgStore,
    gate: Arc<LockGate>,
    keys: LockKeys,
    dispatcher: Arc<Dispatcher>,
    lock_timeout: Duration,
}

impl ReviewService {
    pub fn new(
        store: PgStore,
        gate: Arc<LockGate>,
        keys: LockKeys,
        dispatcher: Arc<Dispatcher>,
        lock_timeout: Duration,
    ) -> Self {
        Self {
            store,
            gate,
            keys,
            dispatcher,
            lock_timeout,
        }
    }

    pub fn gate(&self) -> &Arc<LockGate> {
        &self.gate
    }

    pub async fn submit(
        self: &Arc<Self>,
        actor: UserId,
        document_id: Uuid,
        request_id: String,
        hooks: Hooks,
    ) -> Result<Transitioned, TransitionError> {
        let this = self.clone();
        detach(async move {
            let key = this.keys.submit(document_id);
            this.guarded(&key, &actor, &request_id, hooks, |store, ctx| {
                Box::pin(async move { store.submit(document_id, &ctx).await })
            })
            .await
        })
        .await
    }

    pub async fn decide(
        self: &Arc<Self>,
        actor: UserId,
        review_id: Uuid,
        decision: Decision,
        request_id: String,
        hooks: Hooks,
    ) -> Result<Transitioned, TransitionError> {
        let this = self.clone();
        detach(async move {
            let key = this.keys.review(review_id);
            this.guarded(&key, &actor, &request_id, hooks, |store, ctx| {
                Box::pin(async move {
                    match &decision {
                        Decision::Approve(c) => {
                            store
                                .decide(review_id, Action::Approve, c.as_ref(), None, &ctx)
                                .await
                        }
                        Decision::Reject(r) => {
                            store
                                .decide(review_id, Action::Reject, None, Some(r), &ctx)
                                .await
                        }
                    }
                })
            })
            .await
        })
        .await
    }

    /// Lock, run `tx` under it, release, deliver.
    async fn guarded<F>(
        &self,
        key: &str,
        actor: &UserId,
        request_id: &str,
        hooks: Hooks,
        tx: F,
    ) -> Result<Transitioned, TransitionError>
    where
        F: for<'a> FnOnce(
            &'a PgStore,
            TxContext<'a>,
        )
            -> futures_util::future::BoxFuture<'a, Result<Transitioned, StoreError>>,
    {
        let passage = self.gate.enter(key).await?;
        let ctx = TxContext {
            actor,
            request_id,
            lease: passage.lease(),
            lock_timeout: self.lock_timeout,
            pause_before_commit: hooks.pause_before_commit,
        };
        let result = tx(&self.store, ctx).await;
        passage.release().await;
        let done = result?;
        tracing::info!(
            document_id = %done.document.id,
            review_id = %done.review.id,
            status = %done.document.status,
            version = done.document.version,
            "transition committed"
        );
        self.dispatcher
            .dispatch_document_now(done.document.id)
            .await;
        Ok(done)
    }

    /// After an edit or a create: deliver the projection now (best effort).
    pub async fn deliver_now(&self, document_id: Uuid) {
        let dispatcher = self.dispatcher.clone();
        let _ =
            tokio::spawn(async move { dispatcher.dispatch_document_now(document_id).await }).await;
    }
}

/// Runs `fut` on its own task so that dropping the caller (a disconnected client) does not
/// drop the work; the caller still gets the result when it stays.
async fn detach<T: Send + 'static>(
    fut: impl std::future::Future<Output = Result<T, TransitionError>> + Send + 'static,
) -> Result<T, TransitionError> {
    let span = tracing::Span::current();
    let rid = crate::http::request_id::current();
    let task = tokio::spawn(tracing::Instrument::instrument(
        crate::http::request_id::scope(rid, fut),
        span,
    ));
    match task.await {
        Ok(r) => r,
        Err(join) => Err(TransitionError::Store(StoreError::Unexpected(
            anyhow::anyhow!("transition task failed: {join}"),
        ))),
    }
}
