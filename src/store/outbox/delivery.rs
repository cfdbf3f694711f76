//! Statements of the transactional outbox. A committing request owns its row from the
//! INSERT (`tx::enqueue`); dispatchers take the rest in short statements (held until
//! `claimed_until`, taken with `FOR UPDATE SKIP LOCKED`). Rows are delivered with no
//! transaction open, then marked in one statement: a slow or hung MongoDB or RabbitMQ never
//! holds a PostgreSQL connection or row lock.

use std::time::Duration;

use uuid::Uuid;

use crate::store::error::StoreError;
use crate::store::pg::{PgStore, Statement};

#[derive(Debug, Clone)]
pub struct OutboxRow {
    pub id: i64,
    pub event_id: Uuid,
    pub document_id: Uuid,
    pub document_version: i64,
    pub event_type: String,
    pub routing_key: Option<String>,
    pub payload: serde_json::Value,
    pub attempts: i32,
    /// The ticket the row was taken with (column `claim_token`): marks only touch rows still
    /// held with it.
    pub ticket: Uuid,
    /// Its projection is done, or was never needed (its event moves nothing in MongoDB).
    pub projected: bool,
    /// The W3C trace context of the span that wrote the row (`trace_context.rs`), sent on
    /// with its event; None for rows written before it was kept, or outside any trace.
    pub traceparent: Option<String>,
    pub tracestate: Option<String>,
}

impl PgStore {
    /// Claims up to `limit` due rows whose projection has not run, half the oldest and half
    /// the newest (a backlog of old rows never starves fresh ones). The per-document checks
    /// are scalar subqueries, not joins: the planner then always looks a document's rows up
    /// by `outbox_undone_by_document`, even while a fast-growing backlog has outrun its
    /// statistics (as a join, it scanned every undone row per candidate). A projection writes the
    /// document's current state under a version guard, so it needs no ordering; dispatchers
    /// mostly avoid projecting one document at the same time (a per-document advisory lock
    /// while taking, and no other live hold on its unprojected rows), which saves work
    /// but is not what keeps the projection correct.
    pub async fn take_unprojected(
        &self,
        only_document: Option<Uuid>,
        limit: i64,
        take_for: Duration,
    ) -> Result<Vec<OutboxRow>, StoreError> {
        // A batch walks `outbox_due` in order, however stale the statistics (`scoped_in_order`).
        let mut tx = match only_document {
            Some(_) => self.scoped().await?,
            None => self.scoped_in_order().await?,
        };
        let done = sqlx::query_as!(
            OutboxRow,
            r#"WITH due AS (
                 SELECT o.id FROM outbox o
                 WHERE o.done_at IS NULL AND o.projected_at IS NULL AND o.next_attempt_at <= now()
                   AND (o.claimed_until IS NULL OR o.claimed_until < now())
                   AND ($1::uuid IS NULL OR o.document_id = $1)
                   AND (SELECT p.id FROM outbox p
                        WHERE p.document_id = o.document_id AND p.done_at IS NULL
                          AND p.projected_at IS NULL AND p.claimed_until >= now()
                        LIMIT 1) IS NULL
                   AND pg_try_advisory_xact_lock(hashtextextended(o.document_id::text, 7001))
                 ORDER BY o.id LIMIT ($2::int8 + 1) / 2 FOR UPDATE SKIP LOCKED),
               fresh AS (
                 SELECT o.id FROM outbox o
                 WHERE o.done_at IS NULL AND o.projected_at IS NULL AND o.next_attempt_at <= now()
                   AND (o.claimed_until IS NULL OR o.claimed_until < now())
                   AND ($1::uuid IS NULL OR o.document_id = $1)
                   AND (SELECT p.id FROM outbox p
                        WHERE p.document_id = o.document_id AND p.done_at IS NULL
                          AND p.projected_at IS NULL AND p.claimed_until >= now()
                        LIMIT 1) IS NULL
                   AND pg_try_advisory_xact_lock(hashtextextended(o.document_id::text, 7001))
                 ORDER BY o.id DESC LIMIT $2::int8 / 2 FOR UPDATE SKIP LOCKED)
               UPDATE outbox SET claimed_until = now() + make_interval(secs => $3), claim_token = $4
               WHERE id IN (SELECT id FROM due UNION SELECT id FROM fresh)
               RETURNING id, event_id, document_id, document_version, event_type, routing_key,
                         payload, attempts, claim_token AS "ticket!",
                         projected_at IS NOT NULL AS "projected!", traceparent, tracestate"#,
            only_document,
            limit,
            take_for.as_secs_f64(),
            Uuid::new_v4(),
        )
        .fetch_all(&mut *tx)
        .bounded(self)
        .await?;
        self.commit(tx).await?;
        Ok(done)
    }

    /// Claims up to `limit` projected, due rows, at most one per document: the oldest undone
    /// row of each document, and only when no older row of that document is undone (taken
    /// by another dispatcher or a committing request, or waiting for its retry). That keeps
    /// per-document order. Half the oldest such rows, half the newest. A row written by a
    /// release from before spaces (still undelivered, or written by an instance of it during
    /// a rolling upgrade) has no `space` in its body: it is taken with its document's, so
    /// every message this release publishes carries it.
    pub async fn take_publishable(
        &self,
        only_document: Option<Uuid>,
        limit: i64,
        take_for: Duration,
    ) -> Result<Vec<OutboxRow>, StoreError> {
        // A batch walks `outbox_due` in order, however stale the statistics (`scoped_in_order`).
        let mut tx = match only_document {
            Some(_) => self.scoped().await?,
            None => self.scoped_in_order().await?,
        };
        let mut rows = sqlx::query_as!(
            OutboxRow,
            r#"WITH due AS (
                 SELECT o.id FROM outbox o
                 WHERE o.done_at IS NULL AND o.projected_at IS NOT NULL AND o.next_attempt_at <= now()
                   AND (o.claimed_until IS NULL OR o.claimed_until < now())
                   AND ($1::uuid IS NULL OR o.document_id = $1)
                   AND o.id = (SELECT p.id FROM outbox p
                               WHERE p.document_id = o.document_id AND p.done_at IS NULL
                               ORDER BY p.id LIMIT 1)
                 ORDER BY o.id LIMIT ($2::int8 + 1) / 2 FOR UPDATE SKIP LOCKED),
               fresh AS (
                 SELECT o.id FROM outbox o
                 WHERE o.done_at IS NULL AND o.projected_at IS NOT NULL AND o.next_attempt_at <= now()
                   AND (o.claimed_until IS NULL OR o.claimed_until < now())
                   AND ($1::uuid IS NULL OR o.document_id = $1)
                   AND o.id = (SELECT p.id FROM outbox p
                               WHERE p.document_id = o.document_id AND p.done_at IS NULL
                               ORDER BY p.id LIMIT 1)
                 ORDER BY o.id DESC LIMIT $2::int8 / 2 FOR UPDATE SKIP LOCKED)
               UPDATE outbox SET claimed_until = now() + make_interval(secs => $3), claim_token = $4
               WHERE id IN (SELECT id FROM due UNION SELECT id FROM fresh)
               RETURNING id, event_id, document_id, document_version, event_type, routing_key,
                         CASE WHEN payload ? 'space' THEN payload
                              ELSE payload || jsonb_build_object('space',
                                     (SELECT d.space_id FROM documents d
                                      WHERE d.id = outbox.document_id)) END AS "payload!",
                         attempts, claim_token AS "ticket!",
                         projected_at IS NOT NULL AS "projected!", traceparent, tracestate"#,
            only_document,
            limit,
            take_for.as_secs_f64(),
            Uuid::new_v4(),
        )
        .fetch_all(&mut *tx)
        .bounded(self)
        .await?;
        self.commit(tx).await?;
        rows.sort_by_key(|r| r.id);
        Ok(rows)
    }

    pub async fn mark_projected(&self, ids: &[i64], token: Uuid) -> Result<(), StoreError> {
        if ids.is_empty() {
            return Ok(());
        }
        let mut tx = self.scoped_generic().await?;
        sqlx::query!(
            "UPDATE outbox SET projected_at = now(), claimed_until = NULL, last_error = NULL \
             WHERE id = ANY($1) AND claim_token = $2",
            ids,
            token
        )
        .execute(&mut *tx)
        .bounded(self)
        .await?;
        self.commit(tx).await?;
        Ok(())
    }

    /// Marks delivered rows done (projected, and published when they carry an event), in one
    /// statement. Not filtered by ticket: a confirmed publish is done, whoever holds the row
    /// now.
    pub async fn mark_done(&self, ids: &[i64]) -> Result<(), StoreError> {
        if ids.is_empty() {
            return Ok(());
        }
        let mut tx = self.scoped_generic().await?;
        sqlx::query!(
            "UPDATE outbox SET done_at = now(), claimed_until = NULL, \
             projected_at = COALESCE(projected_at, now()), \
             published_at = CASE WHEN routing_key IS NULL THEN NULL ELSE now() END, \
             last_error = NULL WHERE id = ANY($1)",
            ids
        )
        .execute(&mut *tx)
        .bounded(self)
        .await?;
        self.commit(tx).await?;
        Ok(())
    }

    /// Records a failed attempt on a row still held with the ticket `token`: retry after
    /// `retry_in`, or, when this was attempt `max_attempts`, park it (`parked_at`, and a
    /// `next_attempt_at` of 'infinity' that no take reaches: the row stays undone and
    /// keeps holding back its document's later events). `projected`: its projection did
    /// succeed before the failure. Returns whether the row is now parked.
    pub async fn mark_failed(
        &self,
        id: i64,
        token: Uuid,
        retry_in: Duration,
        error: &str,
        projected: bool,
        max_attempts: i32,
    ) -> Result<bool, StoreError> {
        let mut tx = self.scoped().await?;
        let row = sqlx::query!(
            r#"UPDATE outbox SET attempts = attempts + 1, claimed_until = NULL,
                 next_attempt_at = CASE WHEN attempts + 1 >= $6 THEN 'infinity'::timestamptz
                                        ELSE now() + make_interval(secs => $2) END,
                 parked_at = CASE WHEN attempts + 1 >= $6 THEN now() END,
                 parked_reason = CASE WHEN attempts + 1 >= $6
                   THEN format('refused %s times (outbox.max_attempts): %s', attempts + 1, left($3, 400))
                   END,
                 last_error = left($3, 500),
                 projected_at = CASE WHEN $5 THEN COALESCE(projected_at, now()) ELSE projected_at END
               WHERE id = $1 AND claim_token = $4
               RETURNING parked_at IS NOT NULL AS "parked!""#,
            id,
            retry_in.as_secs_f64(),
            error,
            token,
            projected,
            max_attempts,
        )
        .fetch_optional(&mut *tx)
        .bounded(self)
        .await?;
        self.commit(tx).await?;
        Ok(row.is_some_and(|r| r.parked))
    }

    /// Gives rows held with the ticket `token` back, due at once, noting why they were not delivered
    /// (a dependency was down: that says nothing about the rows, so no attempt is counted).
    /// `projected`: their projection did succeed before the failure.
    pub async fn set_aside(
        &self,
        ids: &[i64],
        token: Uuid,
        error: &str,
        projected: bool,
    ) -> Result<(), StoreError> {
        let mut tx = self.scoped().await?;
        sqlx::query!(
            "UPDATE outbox SET claimed_until = NULL, last_error = left($3, 500), \
             projected_at = CASE WHEN $4 THEN COALESCE(projected_at, now()) ELSE projected_at END \
             WHERE id = ANY($1) AND claim_token = $2",
            ids,
            token,
            error,
            projected
        )
        .execute(&mut *tx)
        .bounded(self)
        .await?;
        self.commit(tx).await?;
        Ok(())
    }

    /// Gives taken rows back untouched (the pass stopped before reaching them).
    pub async fn put_back(&self, ids: &[i64], token: Uuid) -> Result<(), StoreError> {
        if ids.is_empty() {
            return Ok(());
        }
        let mut tx = self.scoped().await?;
        sqlx::query!(
            "UPDATE outbox SET claimed_until = NULL WHERE id = ANY($1) AND claim_token = $2",
            ids,
            token
        )
        .execute(&mut *tx)
        .bounded(self)
        .await?;
        self.commit(tx).await?;
        Ok(())
    }

    /// Undone rows (parked ones included) and the age of the oldest, in seconds.
    pub async fn backlog(&self) -> Result<(i64, f64), StoreError> {
        let row = sqlx::query!(
            r#"SELECT count(*) AS "rows!",
                      EXTRACT(EPOCH FROM now() - min(created_at))::float8 AS age
               FROM outbox WHERE done_at IS NULL"#
        )
        .fetch_one(&mut *self.scoped().await?)
        .bounded(self)
        .await?;
        Ok((row.rows, row.age.unwrap_or(0.0)))
    }
}
