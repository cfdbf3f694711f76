//! Statements of replays: a replay row is asked for (its total counted in the same
//! statement), taken by one instance's runner under a lease, moved forward batch by batch
//! (its cursor, its counts, its lease renewed in one statement each), and finished or
//! cancelled. The rows a replay sends are read here too: delivered outbox rows (history) and
//! published revisions (snapshot), both in keyset order.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::error::{violates, StoreError};
use super::pg::{PgStore, Statement};
use super::tx::Uncommitted;
use crate::domain::replay::{PublishedRevision, ReplayMode, ReplayRequest, ReplayState};

/// A replay as stored: what it was asked for, where it is, and who runs it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayRecord {
    pub id: Uuid,
    pub mode: ReplayMode,
    pub target_queue: String,
    pub state: ReplayState,
    pub from_at: Option<DateTime<Utc>>,
    pub to_at: Option<DateTime<Utc>>,
    pub types: Option<Vec<String>>,
    pub document_ids: Option<Vec<Uuid>>,
    /// Only the documents of these spaces (keys).
    #[serde(default)]
    pub spaces: Option<Vec<String>>,
    /// History: the newest outbox row that can belong to it.
    pub upto_outbox_id: i64,
    pub requested_by: String,
    pub total: i64,
    pub sent: i64,
    pub duplicates: i64,
    pub takeovers: i32,
    pub cursor_outbox_id: Option<i64>,
    pub cursor_document_id: Option<Uuid>,
    pub error: Option<String>,
    pub started_at: DateTime<Utc>,
    pub progressed_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
}

/// A delivered outbox row, as a history replay sends it again.
#[derive(Debug, Clone)]
pub struct StoredEvent {
    pub id: i64,
    pub event_id: Uuid,
    pub document_id: Uuid,
    /// The key of the document's space (a row written before spaces has none in its
    /// payload).
    pub space: String,
    pub event_type: String,
    pub payload: serde_json::Value,
    /// The trace context stored with the row when it was written (sent again as it was).
    pub traceparent: Option<String>,
    pub tracestate: Option<String>,
}

/// The unique index that keeps one running replay per target queue.
const ONE_RUNNING_PER_QUEUE: &str = "replays_one_running_per_queue";

impl PgStore {
    /// Writes a running replay of `req`, with its total (the delivered events, or the
    /// published documents, that match it now), in a transaction left open: the caller
    /// commits it with its idempotency record. None: a replay to that queue is running.
    /// History counts the events of documents ever submitted only (an older release
    /// published a private draft's comments and archive: a replay never sends them again).
    pub async fn write_replay(
        &self,
        id: Uuid,
        req: &ReplayRequest,
        requested_by: &str,
        request_id: &str,
    ) -> Result<Option<Uncommitted<ReplayRecord>>, StoreError> {
        let mut tx = self.begin().await?;
        let written = sqlx::query_as!(
            ReplayRecord,
            r#"WITH bound AS (SELECT COALESCE(max(id), 0) AS upto FROM outbox),
               events AS (
                 SELECT count(*) AS n FROM outbox o JOIN documents d ON d.id = o.document_id, bound
                 WHERE $2::text = 'history' AND o.id <= bound.upto AND o.published_at IS NOT NULL
                   AND ($4::timestamptz IS NULL OR o.created_at >= $4)
                   AND ($5::timestamptz IS NULL OR o.created_at < $5)
                   AND ($6::text[] IS NULL OR o.event_type = ANY($6))
                   AND ($7::uuid[] IS NULL OR o.document_id = ANY($7))
                   AND ($10::text[] IS NULL OR d.space_id = ANY($10))
                   AND d.current_review_id IS NOT NULL),
               docs AS (
                 SELECT count(*) AS n FROM documents d
                 WHERE $2::text = 'snapshot' AND d.published_version IS NOT NULL
                   AND ($7::uuid[] IS NULL OR d.id = ANY($7))
                   AND ($10::text[] IS NULL OR d.space_id = ANY($10)))
               INSERT INTO replays (id, mode, target_queue, state, from_at, to_at, types,
                                    document_ids, spaces, upto_outbox_id, requested_by,
                                    request_id, total)
               SELECT $1, $2, $3, 'running', $4, $5, $6, $7, $10, bound.upto, $8, $9,
                      events.n + docs.n
               FROM bound, events, docs
               RETURNING id, mode AS "mode: ReplayMode", target_queue,
                         state AS "state: ReplayState", from_at, to_at, types, document_ids,
                         spaces, upto_outbox_id, requested_by, total, sent, duplicates, takeovers,
                         cursor_outbox_id, cursor_document_id, error, started_at,
                         progressed_at, finished_at"#,
            id,
            req.mode.as_str(),
            req.target_queue,
            req.from,
            req.to,
            req.types.as_deref(),
            req.document_ids.as_deref(),
            requested_by,
            request_id,
            req.spaces.as_deref(),
        )
        .fetch_one(&mut *tx)
        .await;
        match written {
            Ok(row) => Ok(Some(Uncommitted::new(tx, row, None))),
            Err(e) if violates(&e, ONE_RUNNING_PER_QUEUE) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    pub async fn replay(&self, id: Uuid) -> Result<Option<ReplayRecord>, StoreError> {
        sqlx::query_as!(
            ReplayRecord,
            r#"SELECT id, mode AS "mode: ReplayMode", target_queue,
                      state AS "state: ReplayState", from_at, to_at, types, document_ids,
                      spaces, upto_outbox_id, requested_by, total, sent, duplicates, takeovers,
                      cursor_outbox_id, cursor_document_id, error, started_at,
                      progressed_at, finished_at
               FROM replays WHERE id = $1"#,
            id
        )
        .fetch_optional(&self.pool)
        .bounded(self)
        .await
    }

    /// The running replays, then the `limit` most recent others, newest first.
    pub async fn recent_replays(&self, limit: i64) -> Result<Vec<ReplayRecord>, StoreError> {
        sqlx::query_as!(
            ReplayRecord,
            r#"SELECT id, mode AS "mode: ReplayMode", target_queue,
                      state AS "state: ReplayState", from_at, to_at, types, document_ids,
                      spaces, upto_outbox_id, requested_by, total, sent, duplicates, takeovers,
                      cursor_outbox_id, cursor_document_id, error, started_at,
                      progressed_at, finished_at
               FROM replays
               WHERE state = 'running'
                  OR id IN (SELECT id FROM replays WHERE state <> 'running'
                            ORDER BY started_at DESC, id LIMIT $1)
               ORDER BY state = 'running' DESC, started_at DESC, id"#,
            limit
        )
        .fetch_all(&self.pool)
        .bounded(self)
        .await
    }

    /// Cancels the replay `id` if it is running; returns it as it is now (None: no such
    /// replay). The runner sees it before its next batch.
    pub async fn cancel_replay(&self, id: Uuid) -> Result<Option<ReplayRecord>, StoreError> {
        sqlx::query!(
            "UPDATE replays SET state = 'cancelled', finished_at = now(), claimed_by = NULL, \
             claimed_until = NULL, in_flight = 0 WHERE id = $1 AND state = 'running'",
            id
        )
        .execute(&self.pool)
        .bounded(self)
        .await?;
        self.replay(id).await
    }

    /// Takes the oldest running replay that no runner holds (new, or its runner's lease
    /// ended) for `runner`, for `lease`. A replay taken over counts the batch its last
    /// runner had in flight as duplicates: that batch is sent again from the cursor.
    pub async fn claim_replay(
        &self,
        runner: &str,
        lease: Duration,
    ) -> Result<Option<ReplayRecord>, StoreError> {
        sqlx::query_as!(
            ReplayRecord,
            r#"UPDATE replays SET claimed_by = $1,
                 claimed_until = now() + make_interval(secs => $2),
                 duplicates = duplicates + in_flight, in_flight = 0,
                 takeovers = takeovers + (claimed_by IS NOT NULL)::int
               WHERE id = (SELECT id FROM replays
                           WHERE state = 'running'
                             AND (claimed_until IS NULL OR claimed_until < now())
                           ORDER BY started_at, id LIMIT 1 FOR UPDATE SKIP LOCKED)
               RETURNING id, mode AS "mode: ReplayMode", target_queue,
                         state AS "state: ReplayState", from_at, to_at, types, document_ids,
                         spaces, upto_outbox_id, requested_by, total, sent, duplicates, takeovers,
                         cursor_outbox_id, cursor_document_id, error, started_at,
                         progressed_at, finished_at"#,
            runner,
            lease.as_secs_f64(),
        )
        .fetch_optional(&self.pool)
        .bounded(self)
        .await
    }

    /// Renews `runner`'s lease on the replay, and notes the events it is about to send
    /// (`in_flight`, when given). False: the replay is no longer the runner's to run
    /// (cancelled, or taken over after its lease ended).
    pub async fn renew_replay(
        &self,
        id: Uuid,
        runner: &str,
        in_flight: Option<i64>,
        lease: Duration,
    ) -> Result<bool, StoreError> {
        let row = sqlx::query!(
            "UPDATE replays SET claimed_until = now() + make_interval(secs => $3), \
             in_flight = COALESCE($4, in_flight) \
             WHERE id = $1 AND claimed_by = $2 AND state = 'running' RETURNING id",
            id,
            runner,
            lease.as_secs_f64(),
            in_flight,
        )
        .fetch_optional(&self.pool)
        .bounded(self)
        .await?;
        Ok(row.is_some())
    }

    /// Moves the replay's cursor past a confirmed batch of `n` events (the last outbox row
    /// or document sent), renewing the lease. False: no longer the runner's.
    pub async fn replay_sent(
        &self,
        id: Uuid,
        runner: &str,
        cursor: (Option<i64>, Option<Uuid>),
        n: i64,
        lease: Duration,
    ) -> Result<bool, StoreError> {
        let row = sqlx::query!(
            "UPDATE replays SET sent = sent + $3, in_flight = 0, progressed_at = now(), \
             cursor_outbox_id = COALESCE($4, cursor_outbox_id), \
             cursor_document_id = COALESCE($5, cursor_document_id), \
             claimed_until = now() + make_interval(secs => $6) \
             WHERE id = $1 AND claimed_by = $2 AND state = 'running' RETURNING id",
            id,
            runner,
            n,
            cursor.0,
            cursor.1,
            lease.as_secs_f64(),
        )
        .fetch_optional(&self.pool)
        .bounded(self)
        .await?;
        Ok(row.is_some())
    }

    /// Gives the replay back (this instance is stopping after a confirmed batch): any
    /// instance's runner takes it at once, from its cursor.
    pub async fn release_replay(&self, id: Uuid, runner: &str) -> Result<(), StoreError> {
        sqlx::query!(
            "UPDATE replays SET claimed_by = NULL, claimed_until = NULL \
             WHERE id = $1 AND claimed_by = $2 AND state = 'running'",
            id,
            runner,
        )
        .execute(&self.pool)
        .bounded(self)
        .await?;
        Ok(())
    }

    /// Ends `runner`'s replay: done (its total is then what it sent, if more came) or
    /// failed with `error`.
    pub async fn finish_replay(
        &self,
        id: Uuid,
        runner: &str,
        state: ReplayState,
        error: Option<&str>,
    ) -> Result<(), StoreError> {
        sqlx::query!(
            "UPDATE replays SET state = $3, error = left($4, 500), finished_at = now(), \
             total = CASE WHEN $3 = 'done' THEN GREATEST(total, sent) ELSE total END, \
             claimed_by = NULL, claimed_until = NULL, in_flight = 0 \
             WHERE id = $1 AND claimed_by = $2 AND state = 'running'",
            id,
            runner,
            state.as_str(),
            error,
        )
        .execute(&self.pool)
        .bounded(self)
        .await?;
        Ok(())
    }

    /// Up to `limit` events of the history replay `r` after its cursor, in outbox order:
    /// those published before the replay started, of documents ever submitted, each with
    /// its document's space.
    pub async fn history_batch(
        &self,
        r: &ReplayRecord,
        limit: i64,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        sqlx::query_as!(
            StoredEvent,
            r#"SELECT o.id, o.event_id, o.document_id, d.space_id AS space, o.event_type,
                      o.payload, o.traceparent, o.tracestate
               FROM outbox o JOIN documents d ON d.id = o.document_id
               WHERE o.id > $1 AND o.id <= $2 AND o.published_at IS NOT NULL
                 AND o.published_at <= $3
                 AND ($4::timestamptz IS NULL OR o.created_at >= $4)
                 AND ($5::timestamptz IS NULL OR o.created_at < $5)
                 AND ($6::text[] IS NULL OR o.event_type = ANY($6))
                 AND ($7::uuid[] IS NULL OR o.document_id = ANY($7))
                 AND ($9::text[] IS NULL OR d.space_id = ANY($9))
                 AND d.current_review_id IS NOT NULL
               ORDER BY o.id LIMIT $8"#,
            r.cursor_outbox_id.unwrap_or(0),
            r.upto_outbox_id,
            r.started_at,
            r.from_at,
            r.to_at,
            r.types.as_deref(),
            r.document_ids.as_deref(),
            limit,
            r.spaces.as_deref(),
        )
        .fetch_all(&mut *self.scoped().await?)
        .bounded(self)
        .await
    }

    /// Up to `limit` published revisions of the snapshot replay `r` after the document
    /// `after`, in document id order (only its documents and spaces, when it names some).
    pub async fn snapshot_batch(
        &self,
        r: &ReplayRecord,
        after: Option<Uuid>,
        limit: i64,
    ) -> Result<Vec<PublishedRevision>, StoreError> {
        sqlx::query_as!(
            PublishedRevision,
            r#"SELECT id AS document_id, space_id AS space, published_version AS "version!",
                      published_title AS "title!", published_body AS "body!"
               FROM documents
               WHERE published_version IS NOT NULL AND ($1::uuid IS NULL OR id > $1)
                 AND ($2::uuid[] IS NULL OR id = ANY($2))
                 AND ($4::text[] IS NULL OR space_id = ANY($4))
               ORDER BY id LIMIT $3"#,
            after,
            r.document_ids.as_deref(),
            limit,
            r.spaces.as_deref(),
        )
        .fetch_all(&mut *self.scoped().await?)
        .bounded(self)
        .await
    }

    /// Whether a live event waits: the newest undelivered row that is due was written
    /// within `window` (an older one is a backlog the dispatchers work through, or a row
    /// held back behind a parked one, which a replay does not wait for). One step of the
    /// undelivered rows' index, from the newest.
    pub async fn live_events_waiting(&self, window: Duration) -> Result<bool, StoreError> {
        let row = sqlx::query!(
            r#"SELECT created_at > now() - make_interval(secs => $1) AS "waiting!"
               FROM outbox WHERE done_at IS NULL AND next_attempt_at <= now()
               ORDER BY id DESC LIMIT 1"#,
            window.as_secs_f64()
        )
        .fetch_optional(&mut *self.scoped().await?)
        .bounded(self)
        .await?;
        Ok(row.is_some_and(|r| r.waiting))
    }
}
