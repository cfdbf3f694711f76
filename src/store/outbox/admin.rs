//! Statements of the outbox's admin actions: list rows by state, put a parked row back in
//! line (retry) or drop it (skip), each with its audit row in the same statement (uncommitted in
//! a transaction of its own, so that an idempotency key's record commits with it), and the
//! parked rows' count for the metrics. Parked rows are held by no one, so an action never races
//! a delivery: it only touches a row that is still parked when it runs.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::store::audit::linking::{link_admin, Only};
use crate::store::error::StoreError;
use crate::store::pg::{PgStore, Statement};
use crate::store::tx::Uncommitted;

/// An outbox row as an operator sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutboxRecord {
    pub id: i64,
    pub event_id: Uuid,
    pub document_id: Uuid,
    pub document_version: i64,
    pub event_type: String,
    pub attempts: i32,
    pub last_error: Option<String>,
    pub parked_reason: Option<String>,
    pub parked_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub done_at: Option<DateTime<Utc>>,
    pub skipped_at: Option<DateTime<Utc>>,
}

impl OutboxRecord {
    /// `pending` (waiting or being delivered), `parked`, `done` or `skipped`.
    pub fn state(&self) -> &'static str {
        match (self.skipped_at, self.done_at, self.parked_at) {
            (Some(_), _, _) => "skipped",
            (None, Some(_), _) => "done",
            (None, None, Some(_)) => "parked",
            (None, None, None) => "pending",
        }
    }
}

/// Which rows a listing shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutboxFilter {
    /// Parked after `outbox.max_attempts` refusals; waiting for an admin.
    Parked,
    /// Refused at least once and due for another attempt: not parked yet.
    Retrying,
}

/// An admin's action on a parked row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutboxAction {
    /// Back in line, due now, with its attempts reset.
    Retry,
    /// Done without being published; the document's later events go.
    Skip,
}

impl OutboxAction {
    pub fn as_str(self) -> &'static str {
        match self {
            OutboxAction::Retry => "retry",
            OutboxAction::Skip => "skip",
        }
    }
}

impl PgStore {
    /// Up to `limit` rows in `filter`, in id order, after the row `after`.
    pub async fn outbox_rows(
        &self,
        filter: OutboxFilter,
        after: Option<i64>,
        limit: i64,
    ) -> Result<Vec<OutboxRecord>, StoreError> {
        let after = after.unwrap_or(0);
        // Two statements, so each matches its partial index (outbox_parked, outbox_due).
        let rows = match filter {
            OutboxFilter::Parked => {
                sqlx::query_as!(
                    OutboxRecord,
                    "SELECT id, event_id, document_id, document_version, event_type, attempts, \
                     last_error, parked_reason, parked_at, created_at, done_at, skipped_at \
                     FROM outbox WHERE parked_at IS NOT NULL AND done_at IS NULL AND id > $1 \
                     ORDER BY id LIMIT $2",
                    after,
                    limit
                )
                .fetch_all(&mut *self.scoped().await?)
                .bounded(self)
                .await?
            }
            OutboxFilter::Retrying => {
                sqlx::query_as!(
                    OutboxRecord,
                    "SELECT id, event_id, document_id, document_version, event_type, attempts, \
                     last_error, parked_reason, parked_at, created_at, done_at, skipped_at \
                     FROM outbox WHERE done_at IS NULL AND next_attempt_at IS NOT NULL \
                     AND parked_at IS NULL AND attempts > 0 AND id > $1 ORDER BY id LIMIT $2",
                    after,
                    limit
                )
                .fetch_all(&mut *self.scoped().await?)
                .bounded(self)
                .await?
            }
        };
        Ok(rows)
    }

    /// One row, whatever its state.
    pub async fn outbox_row(&self, id: i64) -> Result<Option<OutboxRecord>, StoreError> {
        sqlx::query_as!(
            OutboxRecord,
            "SELECT id, event_id, document_id, document_version, event_type, attempts, \
             last_error, parked_reason, parked_at, created_at, done_at, skipped_at \
             FROM outbox WHERE id = $1",
            id
        )
        .fetch_optional(&mut *self.scoped().await?)
        .bounded(self)
        .await
    }

    /// Applies `action` to row `id` if it is parked, and records who did it, in one
    /// statement of a transaction left open: the caller commits it (with the record of its
    /// idempotency key, if any). None: no such row, or it is not parked (nothing changed).
    pub async fn write_outbox_action(
        &self,
        id: i64,
        action: OutboxAction,
        actor: &str,
        request_id: &str,
    ) -> Result<Option<Uncommitted<OutboxRecord>>, StoreError> {
        let retry = action == OutboxAction::Retry;
        let mut tx = self.begin().await?;
        let acted = sqlx::query_as!(
            OutboxRecord,
            r#"WITH found AS (
                 SELECT id, attempts, parked_at, parked_reason FROM outbox
                 WHERE id = $1 AND parked_at IS NOT NULL AND done_at IS NULL FOR UPDATE),
               acted AS (
                 UPDATE outbox o SET claimed_until = NULL,
                   attempts = CASE WHEN $2 THEN 0 ELSE o.attempts END,
                   next_attempt_at = CASE WHEN $2 THEN now() ELSE o.next_attempt_at END,
                   parked_at = CASE WHEN $2 THEN NULL ELSE o.parked_at END,
                   parked_reason = CASE WHEN $2 THEN NULL ELSE o.parked_reason END,
                   done_at = CASE WHEN $2 THEN NULL ELSE now() END,
                   skipped_at = CASE WHEN $2 THEN NULL ELSE now() END
                 FROM found WHERE o.id = found.id
                 RETURNING o.*, found.attempts AS found_attempts,
                           found.parked_at AS found_parked_at,
                           found.parked_reason AS found_parked_reason),
               audit AS (
                 INSERT INTO outbox_admin_actions (outbox_id, event_id, document_id, event_type,
                   action, actor_id, request_id, attempts, parked_at, parked_reason)
                 SELECT id, event_id, document_id, event_type, $3, $4, $5, found_attempts,
                        found_parked_at, found_parked_reason FROM acted)
               SELECT id AS "id!", event_id AS "event_id!", document_id AS "document_id!",
                      document_version AS "document_version!", event_type AS "event_type!",
                      attempts AS "attempts!", last_error, parked_reason, parked_at,
                      created_at AS "created_at!", done_at, skipped_at
               FROM acted"#,
            id,
            retry,
            action.as_str(),
            actor,
            request_id,
        )
        .fetch_optional(&mut *tx)
        .await?;
        match acted {
            Some(row) => {
                // The action joins the admin chain, under its head's row lock.
                link_admin(&mut tx, &self.audit, Only::OutboxRow(row.id))
                    .await
                    .map_err(StoreError::from)?;
                Ok(Some(Uncommitted::new(tx, row, None)))
            }
            None => {
                tx.rollback().await?;
                Ok(None)
            }
        }
    }

    /// Parked rows and how long the oldest has been parked, in seconds.
    pub async fn parked(&self) -> Result<(i64, f64), StoreError> {
        let row = sqlx::query!(
            r#"SELECT count(*) AS "rows!",
                      EXTRACT(EPOCH FROM now() - min(parked_at))::float8 AS age
               FROM outbox WHERE parked_at IS NOT NULL AND done_at IS NULL"#
        )
        .fetch_one(&mut *self.scoped().await?)
        .bounded(self)
        .await?;
        Ok((row.rows, row.age.unwrap_or(0.0)))
    }

    /// Rows delivered (not skipped) within the last minute.
    pub async fn delivered_last_minute(&self) -> Result<i64, StoreError> {
        let row = sqlx::query!(
            r#"SELECT count(*) AS "rows!" FROM outbox
               WHERE done_at > now() - interval '1 minute' AND skipped_at IS NULL"#
        )
        .fetch_one(&mut *self.scoped().await?)
        .bounded(self)
        .await?;
        Ok(row.rows)
    }
}
