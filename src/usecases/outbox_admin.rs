//! What admins do with the outbox: list the rows that are stuck (parked, or failing and
//! not parked yet), put a parked row back in line, or skip it so that its document's later
//! events go. Every action is audited with the admin's id, in the statement that makes it,
//! and recorded under the request's idempotency key, in the same transaction.

use std::time::Duration;

use super::commit::commit;
use super::error::Error;
use crate::domain::UserId;
use crate::store::{
    HeldKey, OutboxAction, OutboxFilter, OutboxRecord, PgStore, StoreError, StoreFailure,
};

/// Why an admin action did not happen; nothing was changed.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error("no outbox row {0}")]
    NotFound(i64),
    /// Only a parked row can be retried or skipped; the row's state is given.
    #[error("outbox row {0} is {1}, not parked")]
    NotParked(i64, &'static str),
    /// A retry with the same idempotency key took it over; the action was rolled back.
    #[error("the idempotency key was taken over by a retry")]
    KeyTakenOver,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl StoreFailure for AdminError {
    fn read_only(&self) -> bool {
        matches!(self, AdminError::Store(e) if e.read_only())
    }
}

impl From<Error> for AdminError {
    /// What [`commit`] answers without a lease: the key taken over, or the store failed.
    fn from(e: Error) -> Self {
        match e {
            Error::KeyTakenOver => AdminError::KeyTakenOver,
            Error::Store(s) => AdminError::Store(s),
            other => AdminError::Store(StoreError::Unexpected(anyhow::anyhow!(
                "an admin action's commit: {other}"
            ))),
        }
    }
}

/// Delivery over every instance (see `OutboxAdmin::stats`).
#[derive(Debug, Clone, Copy)]
pub struct OutboxStats {
    pub undelivered: i64,
    pub oldest_undelivered_age: Duration,
    pub parked: i64,
    pub oldest_parked_age: Duration,
    pub delivered_last_minute: i64,
}

pub struct OutboxAdmin {
    store: PgStore,
}

impl OutboxAdmin {
    pub fn new(store: PgStore) -> Self {
        Self { store }
    }

    /// Up to `limit` rows in `filter`, oldest first, after the row `after`.
    pub async fn list(
        &self,
        filter: OutboxFilter,
        after: Option<i64>,
        limit: i64,
    ) -> Result<Vec<OutboxRecord>, StoreError> {
        self.store.outbox_rows(filter, after, limit).await
    }

    /// What is waiting, what is parked, and what went out in the last minute.
    pub async fn stats(&self) -> Result<OutboxStats, StoreError> {
        let (undelivered, age) = self.store.backlog().await?;
        let (parked, parked_age) = self.store.parked().await?;
        let delivered = self.store.delivered_last_minute().await?;
        let secs = |s: f64| Duration::from_secs_f64(s.max(0.0));
        Ok(OutboxStats {
            undelivered,
            oldest_undelivered_age: secs(age),
            parked,
            oldest_parked_age: secs(parked_age),
            delivered_last_minute: delivered,
        })
    }

    /// Events published in each of the last `minutes` minutes, over every instance.
    pub async fn published_per_minute(
        &self,
        minutes: i32,
    ) -> Result<Vec<(chrono::DateTime<chrono::Utc>, i64)>, StoreError> {
        self.store.published_per_minute(minutes).await
    }

    /// Retries or skips the parked row `id` for `admin`; returns the row as it is now. With
    /// `held`, the row is recorded under that idempotency key in the action's transaction.
    pub async fn act(
        &self,
        id: i64,
        action: OutboxAction,
        admin: &UserId,
        request_id: &str,
        held: Option<&HeldKey>,
    ) -> Result<OutboxRecord, AdminError> {
        let store = &self.store;
        let acted = store
            .bounded(async {
                let staged = store
                    .stage_outbox_action(id, action, admin.as_str(), request_id)
                    .await?;
                match staged {
                    Some(staged) => {
                        Ok::<_, AdminError>(Some(commit(staged, None, held).await?.value))
                    }
                    None => Ok(None),
                }
            })
            .await?;
        if let Some(row) = acted {
            tracing::warn!(outbox_id = id, document_id = %row.document_id, event_id = %row.event_id, action = action.as_str(), admin = admin.as_str(), "parked outbox row handled by an admin");
            return Ok(row);
        }
        match self.store.outbox_row(id).await? {
            None => Err(AdminError::NotFound(id)),
            Some(row) => Err(AdminError::NotParked(id, row.state())),
        }
    }
}
