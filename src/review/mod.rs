//! Orchestration of one transition: outer lock (or degraded), the PostgreSQL transaction,
//! release, then the immediate outbox delivery attempt.
//!
//! The HTTP layer runs this in its own task (`http::idempotency::execute`), so a client
//! that disconnects cannot cancel a transition halfway.

use std::sync::Arc;
use std::time::Duration;

use uuid::Uuid;

use crate::domain::{Action, Comment, RejectReason, UserId};
use crate::lock::gate::Passage;
use crate::lock::gate::{Contended, LockGate};
use crate::lock::LockKeys;
use crate::metrics::Metrics;
use crate::outbox::Dispatcher;
use crate::store::idempotency::Receipt;
use crate::store::pg::{PgStore, ReceiptWriter, Transitioned, TxContext};
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

/// How a transition records its response under the request's idempotency key.
pub struct Recording {
    pub receipt: Receipt,
    pub status: u16,
    pub render: fn(&Transitioned) -> serde_json::Value,
}

/// Per-request fault injection that only tests may set (see `server.test_hooks`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Hooks {
    pub pause_before_commit: Option<Duration>,
    pub pause_after_lock: Option<Duration>,
    pub suspend_renewal: bool,
    pub skip_dispatch: bool,
    /// Report a (retryable) failure after a successful COMMIT, as a lost reply would.
    pub fail_after_commit: bool,
}

pub struct ReviewService {
    store: PgStore,
    gate: Arc<LockGate>,
    keys: LockKeys,
    dispatcher: Arc<Dispatcher>,
    metrics: Arc<Metrics>,
}

impl ReviewService {
    pub fn new(
        store: PgStore,
        gate: Arc<LockGate>,
        keys: LockKeys,
        dispatcher: Arc<Dispatcher>,
        metrics: Arc<Metrics>,
    ) -> Self {
        Self {
            store,
            gate,
            keys,
            dispatcher,
            metrics,
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
        recording: Option<Recording>,
    ) -> Result<Transitioned, TransitionError> {
        let key = self.keys.submit(document_id);
        self.guarded(
            "submit",
            &key,
            &actor,
            &request_id,
            hooks,
            recording,
            |store, ctx| Box::pin(async move { store.submit(document_id, &ctx).await }),
        )
        .await
    }

    pub async fn decide(
        self: &Arc<Self>,
        actor: UserId,
        review_id: Uuid,
        decision: Decision,
        request_id: String,
        hooks: Hooks,
        recording: Option<Recording>,
    ) -> Result<Transitioned, TransitionError> {
        let key = self.keys.review(review_id);
        let kind = match decision {
            Decision::Approve(_) => "approve",
            Decision::Reject(_) => "reject",
        };
        self.guarded(
            kind,
            &key,
            &actor,
            &request_id,
            hooks,
            recording,
            |store, ctx| {
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
            },
        )
        .await
    }

    /// Lock, run `tx` under it, release, deliver.
    #[allow(clippy::too_many_arguments)]
    async fn guarded<F>(
        &self,
        kind: &'static str,
        key: &str,
        actor: &UserId,
        request_id: &str,
        hooks: Hooks,
        recording: Option<Recording>,
        tx: F,
    ) -> Result<Transitioned, TransitionError>
    where
        F: for<'a> FnOnce(
            &'a PgStore,
            TxContext<'a>,
        )
            -> futures_util::future::BoxFuture<'a, Result<Transitioned, StoreError>>,
    {
        let started = std::time::Instant::now();
        let entered = self.gate.enter(key).await;
        let outcome = match &entered {
            Ok(Passage::Held(_)) => "acquired",
            Ok(Passage::Degraded) => "degraded",
            Err(_) => "contended",
        };
        self.metrics.lock_acquire(outcome, started.elapsed());
        let passage = entered?;
        if let (true, Some(lease)) = (hooks.suspend_renewal, passage.lease()) {
            lease.suspend_renewal();
        }
        if let Some(pause) = hooks.pause_after_lock {
            tokio::time::sleep(pause).await;
        }
        let ctx = TxContext {
            actor,
            request_id,
            lease: passage.lease(),
            pause_before_commit: hooks.pause_before_commit,
            receipt: recording.as_ref().map(|r| ReceiptWriter {
                receipt: &r.receipt,
                status: r.status,
                render: r.render,
            }),
        };
        let result = tx(&self.store, ctx).await;
        passage.release().await;
        let done = result?;
        self.metrics.transition(kind);
        if hooks.fail_after_commit {
            return Err(StoreError::TimedOut(Duration::ZERO).into());
        }
        tracing::info!(
            document_id = %done.document.id,
            review_id = %done.review.id,
            status = %done.document.status,
            version = done.document.version,
            "transition committed"
        );
        if !hooks.skip_dispatch {
            self.dispatcher
                .dispatch_document_now(done.document.id)
                .await;
        }
        Ok(done)
    }

    /// After an edit or a create: deliver the projection now (best effort, never fails).
    pub async fn deliver_now(&self, document_id: Uuid) {
        self.dispatcher.dispatch_document_now(document_id).await;
    }
}
