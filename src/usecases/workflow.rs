//! The review workflow beside the transitions: the queue, claims (no outer lock: the row
//! lock decides between claimers), policies, and the overdue sweeper.

use std::time::Duration;

use serde::Deserialize;
use serde_with::{serde_as, DurationMilliSeconds};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::domain::{
    Guard, Policy, PolicyDraft, PolicyName, Refusal, Review, UserId, DEFAULT_POLICY,
};
use crate::store::{ClaimOp, Committed, PgStore, QueueFilter, StoreError, WriteContext};

use super::commit::commit;
use super::context::Context;
use super::error::Error;
use super::reviews::ReviewService;

/// `[review]` in `config/default.toml`.
#[serde_as]
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct ReviewSettings {
    /// The policy of a document created without one.
    pub default_policy: String,
    /// How often each instance looks for reviews past their due date.
    #[serde_as(as = "DurationMilliSeconds<u64>")]
    #[serde(rename = "overdue_sweep_ms")]
    pub overdue_sweep: Duration,
    /// How many due reviews one sweep transaction marks at most.
    pub overdue_batch: i64,
}

impl Default for ReviewSettings {
    fn default() -> Self {
        Self {
            default_policy: DEFAULT_POLICY.to_string(),
            overdue_sweep: Duration::from_secs(5),
            overdue_batch: 200,
        }
    }
}

impl ReviewService {
    /// A page of the queue (`None`: the cursor names no review).
    pub async fn list(&self, filter: &QueueFilter) -> Result<Option<Vec<Review>>, Error> {
        Ok(self.store.list_reviews(filter).await?)
    }

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
        let wctx = ctx.writing(Guard::Unlocked, None);
        let Committed { value, .. } = self
            .store
            .bounded(async {
                let uncommitted = self.store.write_claim(review_id, op, &wctx).await?;
                commit(uncommitted, None, ctx.held_key.as_ref()).await
            })
            .await?;
        Ok(value)
    }
}

/// Review policies: read by anyone, written by admins.
pub struct PolicyService {
    store: PgStore,
}

impl PolicyService {
    pub fn new(store: PgStore) -> Self {
        Self { store }
    }

    pub async fn get(&self, name: &str) -> Result<Policy, Error> {
        Ok(self.store.policy(name).await?.ok_or(Refusal::NotFound)?)
    }

    pub async fn list(&self) -> Result<Vec<Policy>, Error> {
        Ok(self.store.policies().await?)
    }

    /// Writes the next version of `name`; the built-in policy cannot be changed.
    pub async fn put(
        &self,
        actor: &UserId,
        name: &PolicyName,
        draft: &PolicyDraft,
    ) -> Result<Policy, PolicyError> {
        if name.as_str() == DEFAULT_POLICY {
            return Err(PolicyError::BuiltIn);
        }
        Ok(self.store.put_policy(name, draft, actor.as_str()).await?)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("the built-in policy \"default\" cannot be changed; write a policy of another name")]
    BuiltIn,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Marks the reviews past their due date, every `every`, until `stop`: each once, with one
/// `review.overdue` event, whichever instance gets to it (rows another transaction holds
/// are skipped and taken on a later pass).
pub async fn sweep_overdue(store: PgStore, every: Duration, batch: i64, stop: CancellationToken) {
    let actor = UserId::parse("kh-review").expect("a valid user id");
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(every) => {}
        }
        let ctx = WriteContext {
            actor: &actor,
            admin: false,
            request_id: "overdue-sweep",
            guard: Guard::Unlocked,
            own_outbox_for: None,
        };
        loop {
            // Each sweep is a trace of its own (no request started it): the events it
            // writes carry that trace.
            let sweep = tracing::debug_span!(parent: None, "overdue.sweep");
            match tracing::Instrument::instrument(store.sweep_overdue(batch, &ctx), sweep).await {
                Ok(n) if n >= batch as u64 => {
                    tracing::info!(marked = n, "reviews marked overdue; more are due");
                }
                Ok(0) => break,
                Ok(n) => {
                    tracing::info!(marked = n, "reviews marked overdue");
                    break;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "could not sweep overdue reviews");
                    break;
                }
            }
        }
    }
}
