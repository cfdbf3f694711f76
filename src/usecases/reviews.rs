//! The review transitions (submit, approve, reject), end to end: pass the outer-lock gate
//! (or degrade to the row lock alone), stage the write in one PostgreSQL transaction, commit
//! it through the one seam (lease check, idempotency record), release the lock, then try
//! the outbox delivery at once. Each returns what it wrote; the caller renders it.

use std::sync::Arc;
use std::time::Instant;

use uuid::Uuid;

use crate::domain::{Decision, Guard, Review, ReviewStatus, Transitioned};
use crate::lock::gate::{LockGate, Passage};
use crate::lock::LockKeys;
use crate::outbox::Dispatcher;
use crate::store::{Committed, PgStore, WriteContext};

use super::commit::commit;
use super::context::Context;
use super::error::Error;
use super::stats::ReviewStats;
use super::test_hooks::Point;

/// A transition to run.
enum Transition {
    Submit(Uuid),
    Decide(Uuid, Decision),
}

impl Transition {
    fn kind(&self) -> &'static str {
        match self {
            Transition::Submit(_) => "submit",
            Transition::Decide(_, d) => d.action().as_str(),
        }
    }
}

pub struct ReviewService {
    store: PgStore,
    gate: Arc<LockGate>,
    keys: LockKeys,
    dispatcher: Arc<Dispatcher>,
    stats: Arc<ReviewStats>,
}

impl ReviewService {
    pub fn new(
        store: PgStore,
        gate: Arc<LockGate>,
        keys: LockKeys,
        dispatcher: Arc<Dispatcher>,
        stats: Arc<ReviewStats>,
    ) -> Self {
        Self {
            store,
            gate,
            keys,
            dispatcher,
            stats,
        }
    }

    /// DRAFT|REJECTED -> PENDING_REVIEW with a new review.
    pub async fn submit(&self, ctx: Context, document_id: Uuid) -> Result<Transitioned, Error> {
        let key = self.keys.for_submit(document_id);
        self.guarded(&key, ctx, Transition::Submit(document_id))
            .await
    }

    /// Approves or rejects a pending review, and its document with it.
    pub async fn decide(
        &self,
        ctx: Context,
        review_id: Uuid,
        decision: Decision,
    ) -> Result<Transitioned, Error> {
        let key = self.keys.for_review(review_id);
        self.guarded(&key, ctx, Transition::Decide(review_id, decision))
            .await
    }

    /// Reviews in `status`, in the order their submits committed, after the review `after`
    /// (`None`: `after` is no review).
    pub async fn list(
        &self,
        status: ReviewStatus,
        after: Option<Uuid>,
        limit: i64,
    ) -> Result<Option<Vec<Review>>, Error> {
        Ok(self.store.list_reviews(status, after, limit).await?)
    }

    /// Lock, run the transaction under it, release, deliver.
    async fn guarded(
        &self,
        key: &str,
        ctx: Context,
        transition: Transition,
    ) -> Result<Transitioned, Error> {
        let kind = transition.kind();
        let passage = self.enter(key).await?;
        // Whatever happens once the lock is taken, it is given back below.
        let result = match ctx.hooks.at(Point::Locked(passage.lease())).await {
            Ok(()) => {
                let transaction = self.transaction(&ctx, transition, &passage);
                self.store.bounded(transaction).await
            }
            Err(e) => Err(e.into()),
        };
        passage.release().await;
        let Committed { value: done, owned } = result?;
        self.stats.transition(kind);
        ctx.hooks.at(Point::Committed).await?;
        tracing::info!(
            document_id = %done.document.id,
            review_id = %done.review.id,
            status = %done.document.status.as_str(),
            version = done.document.version,
            "transition committed"
        );
        if ctx.hooks.delivers_inline() {
            self.dispatcher.after_commit(&done.document, owned).await;
        }
        Ok(done)
    }

    /// Passes the gate, counting how long it took and how it ended.
    async fn enter(&self, key: &str) -> Result<Passage, Error> {
        let started = Instant::now();
        let entered = self.gate.enter(key).await;
        let label = match &entered {
            Ok(Passage::Held(_)) => "acquired",
            Ok(Passage::Degraded(_)) => "degraded",
            Err(_) => "contended",
        };
        self.stats.lock_acquire(label, started.elapsed());
        Ok(entered?)
    }

    /// Stage, then commit (idempotency record and lease check first).
    async fn transaction(
        &self,
        ctx: &Context,
        transition: Transition,
        passage: &Passage,
    ) -> Result<Committed<Transitioned>, Error> {
        let lease = passage.lease();
        let wctx = WriteContext {
            actor: &ctx.actor,
            request_id: &ctx.request_id,
            guard: match lease {
                Some(l) => Guard::Outer(l.fencing_token()),
                None => Guard::RowLockOnly,
            },
            own_outbox_for: ctx.hooks.own_outbox(self.dispatcher.own_outbox_for()),
        };
        let staged = match transition {
            Transition::Submit(document_id) => self.store.stage_submit(document_id, &wctx).await?,
            Transition::Decide(review_id, d) => {
                self.store.stage_decision(review_id, d, &wctx).await?
            }
        };
        ctx.hooks.at(Point::Staged).await?;
        commit(staged, lease, ctx.held_key.as_ref()).await
    }
}
