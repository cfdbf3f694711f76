//! SQL of the transactional outbox: claim undone rows in per-document commit order with
//! `FOR UPDATE SKIP LOCKED`, and record what happened to each.

use std::time::Duration;

use sqlx::{PgPool, Postgres, Transaction};
use uuid::Uuid;

use super::{DocumentRow, StoreError};

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct OutboxRow {
    pub id: i64,
    pub event_id: Uuid,
    pub document_id: Uuid,
    pub document_version: i64,
    pub event_type: String,
    pub routing_key: Option<String>,
    pub payload: serde_json::Value,
    pub attempts: i32,
    pub projected: bool,
}

/// Claims up to `limit` due rows whose projection has not run, in any order: a projection
/// writes the document's current state under a version guard, so it needs no ordering.
pub async fn claim_unprojected(
    tx: &mut Transaction<'_, Postgres>,
    only_document: Option<Uuid>,
    limit: i64,
) -> Result<Vec<OutboxRow>, StoreError> {
    Ok(sqlx::query_as(
        "SELECT o.id, o.event_id, o.document_id, o.document_version, o.event_type, \
                o.routing_key, o.payload, o.attempts, false AS projected \
         FROM outbox o \
         WHERE o.done_at IS NULL AND o.projected_at IS NULL AND o.next_attempt_at <= now() \
           AND ($1::uuid IS NULL OR o.document_id = $1) \
         ORDER BY o.id LIMIT $2 \
         FOR UPDATE OF o SKIP LOCKED",
    )
    .bind(only_document)
    .bind(limit)
    .fetch_all(&mut **tx)
    .await?)
}

pub async fn mark_projected(
    tx: &mut Transaction<'_, Postgres>,
    ids: &[i64],
) -> Result<(), StoreError> {
    sqlx::query("UPDATE outbox SET projected_at = now(), last_error = NULL WHERE id = ANY($1)")
        .bind(ids)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Claims up to `limit` projected, due rows, at most one per document: the oldest undone
/// row of each document, and only when no older row of that document is undone (held by
/// another dispatcher, or waiting for its retry). That is what keeps per-document order.
pub async fn claim(
    tx: &mut Transaction<'_, Postgres>,
    only_document: Option<Uuid>,
    limit: i64,
) -> Result<Vec<OutboxRow>, StoreError> {
    Ok(sqlx::query_as(
        "SELECT o.id, o.event_id, o.document_id, o.document_version, o.event_type, \
                o.routing_key, o.payload, o.attempts, (o.projected_at IS NOT NULL) AS projected \
         FROM outbox o \
         WHERE o.done_at IS NULL AND o.projected_at IS NOT NULL AND o.next_attempt_at <= now() \
           AND ($1::uuid IS NULL OR o.document_id = $1) \
           AND NOT EXISTS (SELECT 1 FROM outbox p \
                           WHERE p.document_id = o.document_id AND p.done_at IS NULL AND p.id < o.id) \
         ORDER BY o.id LIMIT $2 \
         FOR UPDATE OF o SKIP LOCKED",
    )
    .bind(only_document)
    .bind(limit)
    .fetch_all(&mut **tx)
    .await?)
}

pub async fn current_document(
    tx: &mut Transaction<'_, Postgres>,
    id: Uuid,
) -> Result<DocumentRow, StoreError> {
    Ok(sqlx::query_as(
        "SELECT id, title, body, status, version, author_id, current_review_id, fence_token, \
                created_at, updated_at FROM documents WHERE id = $1",
    )
    .bind(id)
    .fetch_one(&mut **tx)
    .await?)
}

pub async fn mark_done(
    tx: &mut Transaction<'_, Postgres>,
    id: i64,
    published: bool,
) -> Result<(), StoreError> {
    sqlx::query(
        "UPDATE outbox SET done_at = now(), projected_at = COALESCE(projected_at, now()), \
         published_at = CASE WHEN $2 THEN now() ELSE published_at END, last_error = NULL \
         WHERE id = $1",
    )
    .bind(id)
    .bind(published)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

pub async fn mark_failed(
    tx: &mut Transaction<'_, Postgres>,
    id: i64,
    projected: bool,
    retry_in: Duration,
    error: &str,
) -> Result<(), StoreError> {
    sqlx::query(
        "UPDATE outbox SET attempts = attempts + 1, \
         projected_at = CASE WHEN $2 THEN COALESCE(projected_at, now()) ELSE projected_at END, \
         next_attempt_at = now() + make_interval(secs => $3), last_error = left($4, 500) \
         WHERE id = $1",
    )
    .bind(id)
    .bind(projected)
    .bind(retry_in.as_secs_f64())
    .bind(error)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Undone rows and the age of the oldest, in seconds.
pub async fn backlog(pool: &PgPool) -> Result<(i64, f64), StoreError> {
    let (n, age): (i64, Option<f64>) = sqlx::query_as(
        "SELECT count(*), EXTRACT(EPOCH FROM now() - min(created_at))::float8 \
         FROM outbox WHERE done_at IS NULL",
    )
    .fetch_one(pool)
    .await?;
    Ok((n, age.unwrap_or(0.0)))
}
