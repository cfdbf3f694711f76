//! The pieces every write transaction is made of: begin (with `lock_timeout`), the audit
//! row, the outbox row, and [`Staged`], the uncommitted result a write hands back so that
//! its caller decides (lease check, idempotency record) whether it commits.

use serde_json::json;
use sqlx::{Postgres, Transaction};
use uuid::Uuid;

use super::error::StoreError;
use super::pg::PgStore;
use crate::domain::rules::AuditEntry;
use crate::domain::{Document, Guard, OutboxEntry, UserId};

/// Who writes, for which request, under which lock.
#[derive(Debug, Clone, Copy)]
pub struct WriteContext<'a> {
    pub actor: &'a UserId,
    pub request_id: &'a str,
    pub guard: Guard,
}

/// A write done in an open transaction: nothing is visible to anyone until [`Staged::commit`].
/// Dropping it (or [`Staged::rollback`]) undoes the write.
pub struct Staged<T> {
    pub(super) tx: Transaction<'static, Postgres>,
    value: T,
}

impl<T> Staged<T> {
    pub(super) fn new(tx: Transaction<'static, Postgres>, value: T) -> Self {
        Self { tx, value }
    }

    /// What the write will be once committed.
    pub fn value(&self) -> &T {
        &self.value
    }

    pub async fn commit(self) -> Result<T, StoreError> {
        self.tx.commit().await?;
        Ok(self.value)
    }

    pub async fn rollback(self) -> Result<(), StoreError> {
        self.tx.rollback().await?;
        Ok(())
    }
}

impl PgStore {
    /// Opens a write transaction whose row locks wait at most `lock_timeout`.
    pub(super) async fn begin(&self) -> Result<Transaction<'static, Postgres>, StoreError> {
        let mut tx = self.pool.begin().await?;
        let timeout = format!("{}ms", self.lock_timeout.as_millis().max(1));
        sqlx::query!("SELECT set_config('lock_timeout', $1, true)", timeout)
            .fetch_one(&mut *tx)
            .await?;
        Ok(tx)
    }
}

/// Writes the audit row of a change to `doc` (as it is after the change).
pub(super) async fn audit(
    tx: &mut Transaction<'static, Postgres>,
    doc: &Document,
    entry: &AuditEntry,
    ctx: &WriteContext<'_>,
) -> Result<(), StoreError> {
    sqlx::query!(
        "INSERT INTO audit_log (document_id, review_id, action, actor_id, from_status, \
         to_status, document_version, request_id, lock_mode, fence_token) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        doc.id,
        entry.review_id,
        entry.action,
        ctx.actor.as_str(),
        entry.from_status.map(|s| s.as_str()),
        entry.to_status.as_str(),
        entry.version,
        ctx.request_id,
        entry.lock_mode,
        entry.fence_token,
    )
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Writes the outbox row of a change to `doc` (as it is after the change). The event body
/// is fixed here, at commit time.
pub(super) async fn enqueue(
    tx: &mut Transaction<'static, Postgres>,
    doc: &Document,
    review_id: Option<Uuid>,
    entry: &OutboxEntry,
    ctx: &WriteContext<'_>,
) -> Result<(), StoreError> {
    let event_id = Uuid::now_v7();
    let event_type = entry.event.as_str();
    let payload = json!({
        "event_id": event_id,
        "event_type": event_type,
        "occurred_at": doc.updated_at,
        "document_id": doc.id,
        "review_id": review_id,
        "document_version": doc.version,
        "actor_id": ctx.actor.as_str(),
        "data": entry.data,
    });
    sqlx::query!(
        "INSERT INTO outbox (event_id, document_id, document_version, event_type, routing_key, \
         payload) VALUES ($1, $2, $3, $4, $5, $6)",
        event_id,
        doc.id,
        doc.version,
        event_type,
        entry.event.routing_key(),
        payload,
    )
    .execute(&mut **tx)
    .await?;
    Ok(())
}
