//! The steps a transition transaction is made of: lock a row, check the fence, update
//! the status, write the audit row and the outbox row. Only `pg.rs` calls them, inside its
//! transactions.

use serde_json::json;
use sqlx::{Postgres, Transaction};
use uuid::Uuid;

use super::pg::{TxContext, DOC_COLS};
use super::{DocumentRow, StoreError};
use crate::domain::{DocumentStatus, UserId};

pub(super) async fn lock_document(
    tx: &mut Transaction<'_, Postgres>,
    id: Uuid,
) -> Result<DocumentRow, StoreError> {
    sqlx::query_as(&format!(
        "SELECT {DOC_COLS} FROM documents WHERE id = $1 FOR UPDATE"
    ))
    .bind(id)
    .fetch_optional(&mut **tx)
    .await?
    .ok_or(StoreError::NotFound)
}

pub(super) fn parse_doc_status(s: &str) -> Result<DocumentStatus, StoreError> {
    DocumentStatus::parse(s).ok_or_else(|| {
        StoreError::Unexpected(anyhow::anyhow!("unknown document status in database"))
    })
}

/// A holder whose fencing token is older than the one stored lost its lock to a newer holder.
pub(super) fn check_fence(doc: &DocumentRow, ctx: &TxContext<'_>) -> Result<(), StoreError> {
    match (doc.fence_token, ctx.fence()) {
        (Some(stored), Some(mine)) if mine < stored => Err(StoreError::LockLost),
        _ => Ok(()),
    }
}

pub(super) async fn set_document_status(
    tx: &mut Transaction<'_, Postgres>,
    doc: &DocumentRow,
    next: DocumentStatus,
    current_review_id: Option<Uuid>,
    ctx: &TxContext<'_>,
) -> Result<DocumentRow, StoreError> {
    Ok(sqlx::query_as(&format!(
        "UPDATE documents SET status = $2, version = version + 1, current_review_id = $3, \
         fence_token = GREATEST(fence_token, $4), updated_at = clock_timestamp() \
         WHERE id = $1 RETURNING {DOC_COLS}"
    ))
    .bind(doc.id)
    .bind(next.as_str())
    .bind(current_review_id)
    .bind(ctx.fence())
    .fetch_one(&mut **tx)
    .await?)
}

#[allow(clippy::too_many_arguments)]
pub(super) async fn audit(
    tx: &mut Transaction<'_, Postgres>,
    doc: &DocumentRow,
    review_id: Option<Uuid>,
    action: &str,
    actor: &UserId,
    from_status: Option<&str>,
    request_id: &str,
    lock_mode: &str,
    fence: Option<i64>,
) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO audit_log (document_id, review_id, action, actor_id, from_status, to_status, \
         document_version, request_id, lock_mode, fence_token) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
    )
    .bind(doc.id)
    .bind(review_id)
    .bind(action)
    .bind(actor.as_str())
    .bind(from_status)
    .bind(&doc.status)
    .bind(doc.version)
    .bind(request_id)
    .bind(lock_mode)
    .bind(fence)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Writes the outbox row of one change. The event body is fixed here, at commit time.
pub(super) async fn enqueue(
    tx: &mut Transaction<'_, Postgres>,
    doc: &DocumentRow,
    review_id: Option<Uuid>,
    event_type: &str,
    routing_key: Option<&str>,
    actor: &UserId,
    data: serde_json::Value,
) -> Result<(), StoreError> {
    let event_id = Uuid::now_v7();
    let payload = json!({
        "event_id": event_id,
        "event_type": event_type,
        "occurred_at": doc.updated_at,
        "document_id": doc.id,
        "review_id": review_id,
        "document_version": doc.version,
        "actor_id": actor.as_str(),
        "data": data,
    });
    sqlx::query(
        "INSERT INTO outbox (event_id, document_id, document_version, event_type, routing_key, payload) \
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(event_id)
    .bind(doc.id)
    .bind(doc.version)
    .bind(event_type)
    .bind(routing_key)
    .bind(payload)
    .execute(&mut **tx)
    .await?;
    Ok(())
}
