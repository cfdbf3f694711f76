//! The review transitions (submit, vote, withdraw), end to end: pass the outer-lock gate
//! (or degrade to the row lock alone), write in one PostgreSQL transaction, commit
//! it through the one seam (lease check, idempotency record), release the lock, then try
//! the outbox delivery at once. Each returns what it wrote; the caller renders it.
//!
//! A vote's outer lock is the review's when its current stage needs one approval, and the
//! voter's own when it needs more (a double click still meets itself; different reviewers
//! are ordered by the row lock instead of refusing each other). What the stage needs is
//! what this instance last saw of the review (`StageNeeds`); a review not seen yet takes
//! the review's key first, and reads its stage before the lock only when that key is busy.
//! The choice decides nothing: the rules judge what they find under the row locks.

use std::sync::Arc;
use std::time::Instant;

use uuid::Uuid;

use crate::breaker::BreakerState;
use futures_util::future::BoxFuture;

use crate::domain::{
    ArchiveReason, Archived, Decision, Document, Guard, LockScope, Review, Transitioned,
};
use crate::lock::gate::{LockGate, Passage};
use crate::lock::LockKeys;
use crate::outbox::Dispatcher;
use crate::store::{ClaimOp, Committed, PgStore, Uncommitted, WriteContext, WriteError};

use super::stage_needs::StageNeeds;
use crate::usecases::commit::commit;
use crate::usecases::context::Context;
use crate::usecases::error::Error;
use crate::usecases::idempotency::Recordable;
use crate::usecases::stats::ReviewStats;
use crate::usecases::test_hooks::Point;
use crate::usecases::unseen::{Asker, Item};

/// A transition's write, in the transaction of [`ReviewService::guarded`].
type Write<T> = Box<
    dyn for<'w> FnOnce(
            &'w PgStore,
            &'w WriteContext<'w>,
        ) -> BoxFuture<'w, Result<Uncommitted<T>, WriteError>>
        + Send,
>;

/// What a guarded transition wrote, as its logs and the stage cache see it.
pub(crate) trait Outcome: Recordable {
    fn document(&self) -> &Document;
    fn review(&self) -> Option<&Review>;
}

impl Outcome for Transitioned {
    fn document(&self) -> &Document {
        &self.document
    }
    fn review(&self) -> Option<&Review> {
        Some(&self.review)
    }
}

impl Outcome for Archived {
    fn document(&self) -> &Document {
        &self.document
    }
    fn review(&self) -> Option<&Review> {
        self.review.as_ref()
    }
}

pub struct ReviewService {
    pub(crate) store: PgStore,
    gate: Arc<LockGate>,
    keys: LockKeys,
    dispatcher: Arc<Dispatcher>,
    stats: Arc<ReviewStats>,
    needs: StageNeeds,
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
            needs: StageNeeds::default(),
        }
    }

    /// DRAFT|REJECTED -> PENDING_REVIEW with a new review.
    pub async fn submit(&self, ctx: Context, document_id: Uuid) -> Result<Transitioned, Error> {
        let key = self.keys.for_submit(document_id);
        let write: Write<Transitioned> =
            Box::new(move |store, w| Box::pin(store.write_submit(document_id, w)));
        let item = Item::Document(document_id);
        self.guarded((&key, item), LockScope::Document, ctx, "submit", write)
            .await
    }

    /// PENDING_REVIEW -> DRAFT, the pending review withdrawn (the author).
    pub async fn withdraw(&self, ctx: Context, document_id: Uuid) -> Result<Transitioned, Error> {
        let key = self.keys.for_submit(document_id);
        let write: Write<Transitioned> =
            Box::new(move |store, w| Box::pin(store.write_withdraw(document_id, w)));
        let item = Item::Document(document_id);
        self.guarded((&key, item), LockScope::Document, ctx, "withdraw", write)
            .await
    }

    /// Any status but ARCHIVED -> ARCHIVED (its author or an admin), a pending review
    /// withdrawn; under the document's own lock, like submit and withdraw.
    pub async fn archive(
        &self,
        ctx: Context,
        document_id: Uuid,
        reason: Option<ArchiveReason>,
        expected_version: Option<i64>,
    ) -> Result<Archived, Error> {
        let key = self.keys.for_submit(document_id);
        let write: Write<Archived> = Box::new(move |store, w| {
            Box::pin(store.write_archive(document_id, reason, expected_version, w))
        });
        let item = Item::Document(document_id);
        self.guarded((&key, item), LockScope::Document, ctx, "archive", write)
            .await
    }

    /// A vote on a pending review's current stage: recorded, completing the stage, or
    /// deciding the review and its document.
    pub async fn decide(
        &self,
        ctx: Context,
        review_id: Uuid,
        decision: Decision,
    ) -> Result<Transitioned, Error> {
        // With Redis down the gate is this instance's per-key one: a pre-lock read would
        // make every duplicate hold a connection, so the review's key is used then.
        match (self.needs.get(review_id), self.gate.breaker_state()) {
            (Some(n), _) => return self.vote(ctx, review_id, decision, n).await,
            (None, BreakerState::Open) => return self.vote(ctx, review_id, decision, 1).await,
            (None, _) => {}
        }
        // Not seen here yet: the review's key first, as a one-approval stage (the common
        // case) takes it; the transaction learns what the stage needs. Only when that key
        // is busy is the stage read (once for all the requests of this instance that find
        // it busy at once), so that a vote in a stage of several approvals takes the
        // voter's key and does not refuse another reviewer's vote.
        let busy = match self.vote(ctx.clone(), review_id, decision.clone(), 1).await {
            Err(Error::LockBusy(busy)) => busy,
            done => return done,
        };
        let read = || self.store.stage_needs(review_id);
        match self.needs.get_or_read(review_id, read).await? {
            Some(n) if n > 1 => self.vote(ctx, review_id, decision, n).await,
            _ => Err(busy.into()),
        }
    }

    /// A vote under the outer lock its stage's `needs` calls for (the review's for one
    /// approval, the voter's for more).
    async fn vote(
        &self,
        ctx: Context,
        review_id: Uuid,
        decision: Decision,
        needs: u8,
    ) -> Result<Transitioned, Error> {
        let (key, scope) = match needs {
            n if n > 1 => (
                self.keys.for_voter(review_id, ctx.actor.as_str()),
                LockScope::Voter,
            ),
            _ => (self.keys.for_review(review_id), LockScope::Review),
        };
        let kind = decision.action().as_str();
        let groups = ctx.groups.clone();
        let write: Write<Transitioned> =
            Box::new(move |store, w| Box::pin(store.write_vote(review_id, decision, groups, w)));
        let item = Item::Review(review_id);
        self.guarded((&key, item), scope, ctx, kind, write).await
    }

    /// Lock `key`, run the transaction on `item` under it, release, deliver. Another
    /// request holding `item` is not found to a caller who may not see it.
    async fn guarded<T: Outcome>(
        &self,
        (key, item): (&str, Item),
        scope: LockScope,
        ctx: Context,
        kind: &'static str,
        write: Write<T>,
    ) -> Result<T, Error> {
        let asker = Asker::of(&ctx);
        let done = self.locked_write(key, scope, ctx, kind, write).await;
        asker.hide_contention(&self.store, item, done).await
    }

    /// Lock, run the transaction under it, release, deliver.
    async fn locked_write<T: Outcome>(
        &self,
        key: &str,
        scope: LockScope,
        ctx: Context,
        kind: &'static str,
        write: Write<T>,
    ) -> Result<T, Error> {
        let passage = self.enter(key).await?;
        // Whatever happens once the lock is taken, it is given back below.
        let result = match ctx.hooks.at(Point::Locked(passage.lease())).await {
            Ok(()) => {
                let transaction = self.transaction(&ctx, scope, write, &passage);
                self.store.bounded(transaction).await
            }
            Err(e) => Err(e.into()),
        };
        passage.release().await;
        let Committed { value: done, owned } = result?;
        if let Some(review) = done.review() {
            self.needs.note(review);
        }
        self.stats.transition(kind);
        ctx.hooks.at(Point::Committed).await?;
        let document = done.document();
        tracing::info!(
            document_id = %document.id,
            review_id = ?done.review().map(|r| r.id),
            status = %document.status.as_str(),
            version = document.version,
            "transition committed"
        );
        if ctx.hooks.delivers_inline() {
            self.dispatcher.after_commit(document, owned).await;
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

    /// Write, then commit (idempotency record and lease check first).
    #[tracing::instrument(name = "pg.transaction", level = "debug", skip_all)]
    async fn transaction<T: Outcome>(
        &self,
        ctx: &Context,
        scope: LockScope,
        write: Write<T>,
        passage: &Passage,
    ) -> Result<Committed<T>, Error> {
        let lease = passage.lease();
        let guard = match lease {
            Some(l) => Guard::Outer(scope, l.fencing_token()),
            None => Guard::RowLockOnly,
        };
        let wctx = ctx.writing(
            guard,
            ctx.hooks.own_outbox(self.dispatcher.own_outbox_for()),
        );
        let uncommitted = write(&self.store, &wctx).await?;
        ctx.hooks.at(Point::Uncommitted).await?;
        commit(uncommitted, lease, ctx.held_key.as_ref()).await
    }
}

impl ReviewService {
    /// Claims (or renews) a seat on the review's current stage for the caller.
    pub async fn claim(&self, ctx: Context, review_id: Uuid) -> Result<Review, Error> {
        let op = ClaimOp::Take(ctx.groups.clone());
        self.claim_op(ctx, review_id, op).await
    }

    /// Gives the caller's claim back (nothing to do if it holds none).
    pub async fn give_back(&self, ctx: Context, review_id: Uuid) -> Result<Review, Error> {
        self.claim_op(ctx, review_id, ClaimOp::GiveBack).await
    }

    /// Ends `reviewer`'s claim (an admin; audited).
    pub async fn end_claim(
        &self,
        ctx: Context,
        review_id: Uuid,
        reviewer: String,
    ) -> Result<Review, Error> {
        self.claim_op(ctx, review_id, ClaimOp::End(reviewer)).await
    }

    async fn claim_op(&self, ctx: Context, review_id: Uuid, op: ClaimOp) -> Result<Review, Error> {
        let asker = Asker::of(&ctx);
        let wctx = ctx.writing(Guard::Unlocked, None);
        let done: Result<Committed<Review>, Error> = self
            .store
            .bounded(async {
                let uncommitted = self.store.write_claim(review_id, op, &wctx).await?;
                commit(uncommitted, None, ctx.held_key.as_ref()).await
            })
            .await;
        let done = asker.hide_contention(&self.store, Item::Review(review_id), done);
        Ok(done.await?.value)
    }
}
