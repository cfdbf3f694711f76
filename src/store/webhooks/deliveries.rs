//! Statements on `webhook_deliveries`: one row per (endpoint, event), made by the outbox's
//! trigger in the transaction that writes the event (migration 20261216000001). The
//! delivery log an endpoint's admins read and re-send from; the workers' claims (each a
//! lease, so a delivery an instance died sending is sent again once it lapses) and the
//! outcome of each attempt.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::Value;
use uuid::Uuid;

use crate::store::error::StoreError;
use crate::store::pg::{PgStore, Statement};

/// A delivery as the log shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct DeliveryRecord {
    pub id: i64,
    pub webhook_id: Uuid,
    pub event_id: Uuid,
    pub event_type: String,
    /// `pending`, `delivered` or `failed` (no retry left, or its endpoint answered 410).
    pub state: String,
    pub attempts: i32,
    pub next_attempt_at: DateTime<Utc>,
    pub last_status: Option<i32>,
    pub last_error: Option<String>,
    pub created_at: DateTime<Utc>,
    pub delivered_at: Option<DateTime<Utc>>,
}

/// A delivery a worker holds: what to send, where, signed with which secrets.
#[derive(Debug, Clone)]
pub struct ClaimedDelivery {
    pub id: i64,
    pub webhook_id: Uuid,
    pub space: String,
    pub url: String,
    pub event_id: Uuid,
    pub event_type: String,
    pub payload: Value,
    /// Attempts made before this one.
    pub attempts: i32,
    pub secret: String,
    /// The secret a rotation replaced, while it still signs.
    pub previous_secret: Option<String>,
}

/// What a worker's claim takes.
#[derive(Debug, Clone, Copy)]
pub struct ClaimLimits {
    /// The most deliveries in flight to one endpoint, over every instance.
    pub per_endpoint: i64,
    /// The most deliveries this claim takes.
    pub batch: i64,
    /// How long a claim holds before another instance may send the delivery again.
    pub lease: Duration,
}

/// An attempt that failed.
#[derive(Debug, Clone)]
pub struct Failure<'a> {
    /// The receiver's status (None: no response).
    pub status: Option<i32>,
    pub error: &'a str,
    /// The wait before the next attempt; None: no retry is left.
    pub retry_in: Option<Duration>,
    /// The receiver answered 410 Gone: its endpoint is disabled.
    pub gone: bool,
    /// An endpoint failing this long is disabled.
    pub disable_after: Duration,
}

/// An endpoint an outcome disabled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DisabledEndpoint {
    pub id: Uuid,
    pub space: String,
    pub url: String,
    pub reason: String,
}

impl PgStore {
    /// Up to `limit` deliveries of the endpoint `webhook` of `space`, newest first, before
    /// the delivery `before`.
    pub async fn webhook_deliveries(
        &self,
        space: &str,
        webhook: Uuid,
        before: Option<i64>,
        limit: i64,
    ) -> Result<Vec<DeliveryRecord>, StoreError> {
        let mut tx = self.scoped().await?;
        let rows = sqlx::query_as!(
            DeliveryRecord,
            "SELECT id, webhook_id, event_id, event_type, state, attempts, next_attempt_at, \
                    last_status, last_error, created_at, delivered_at \
             FROM webhook_deliveries \
             WHERE space_id = $1 AND webhook_id = $2 AND ($3::int8 IS NULL OR id < $3) \
             ORDER BY id DESC LIMIT $4",
            space,
            webhook,
            before,
            limit
        )
        .fetch_all(&mut *tx)
        .bounded(self)
        .await?;
        self.commit(tx).await?;
        Ok(rows)
    }

    /// The latest `per` deliveries of each endpoint of `webhooks`, newest first.
    pub async fn latest_deliveries(
        &self,
        webhooks: &[Uuid],
        per: i64,
    ) -> Result<Vec<DeliveryRecord>, StoreError> {
        let mut tx = self.scoped().await?;
        let rows = sqlx::query_as!(
            DeliveryRecord,
            r#"SELECT d.id AS "id!", d.webhook_id AS "webhook_id!", d.event_id AS "event_id!",
                      d.event_type AS "event_type!", d.state AS "state!",
                      d.attempts AS "attempts!", d.next_attempt_at AS "next_attempt_at!",
                      d.last_status, d.last_error, d.created_at AS "created_at!",
                      d.delivered_at
               FROM unnest($1::uuid[]) AS w(id) CROSS JOIN LATERAL (
                 SELECT * FROM webhook_deliveries d
                 WHERE d.webhook_id = w.id ORDER BY d.id DESC LIMIT $2) d
               ORDER BY d.webhook_id, d.id DESC"#,
            webhooks,
            per
        )
        .fetch_all(&mut *tx)
        .bounded(self)
        .await?;
        self.commit(tx).await?;
        Ok(rows)
    }

    /// Sends the delivery `id` of the endpoint `webhook` of `space` again, from its first
    /// attempt, as soon as a worker gets to it (a delivery being sent now is left alone).
    pub async fn resend_delivery(
        &self,
        space: &str,
        webhook: Uuid,
        id: i64,
    ) -> Result<Option<DeliveryRecord>, StoreError> {
        let mut tx = self.scoped().await?;
        let row = sqlx::query_as!(
            DeliveryRecord,
            "UPDATE webhook_deliveries SET \
               state = 'pending', attempts = 0, delivered_at = NULL, \
               next_attempt_at = CASE WHEN claimed_until > now() THEN next_attempt_at \
                                      ELSE now() END \
             WHERE space_id = $1 AND webhook_id = $2 AND id = $3 \
             RETURNING id, webhook_id, event_id, event_type, state, attempts, next_attempt_at, \
                       last_status, last_error, created_at, delivered_at",
            space,
            webhook,
            id
        )
        .fetch_optional(&mut *tx)
        .bounded(self)
        .await?;
        self.commit(tx).await?;
        Ok(row)
    }

    /// Claims the due deliveries of enabled endpoints, oldest first, at most
    /// `limits.per_endpoint` in flight per endpoint: each endpoint's row is locked while
    /// its deliveries are counted and claimed (others' claims skip it), so the cap holds
    /// over every instance.
    pub async fn claim_deliveries(
        &self,
        limits: ClaimLimits,
    ) -> Result<Vec<ClaimedDelivery>, StoreError> {
        let mut tx = self.scoped().await?;
        let rows = sqlx::query_as!(
            ClaimedDelivery,
            r#"WITH due AS (
                 SELECT DISTINCT d.webhook_id FROM webhook_deliveries d
                 WHERE d.state = 'pending' AND d.next_attempt_at <= now()
               ),
               hooks AS (
                 SELECT w.id, w.url, w.secret,
                        CASE WHEN w.previous_until > now() THEN w.previous_secret END
                          AS previous_secret
                 FROM due JOIN webhooks w ON w.id = due.webhook_id
                 WHERE w.enabled
                 FOR UPDATE OF w SKIP LOCKED
               ),
               picked AS (
                 SELECT p.id, h.url, h.secret, h.previous_secret
                 FROM hooks h CROSS JOIN LATERAL (
                   SELECT d.id FROM webhook_deliveries d
                   WHERE d.webhook_id = h.id AND d.state = 'pending'
                     AND d.next_attempt_at <= now()
                   ORDER BY d.next_attempt_at, d.id
                   LIMIT greatest(0, $1 - (
                     SELECT count(*) FROM webhook_deliveries f
                     WHERE f.webhook_id = h.id AND f.state = 'pending'
                       AND f.claimed_until > now()))
                 ) p
                 LIMIT $2
               )
               UPDATE webhook_deliveries d SET
                 claimed_until = now() + make_interval(secs => $3),
                 next_attempt_at = now() + make_interval(secs => $3)
               FROM picked
               WHERE d.id = picked.id
               RETURNING d.id, d.webhook_id, d.space_id AS space, picked.url, d.event_id,
                         d.event_type, d.payload, d.attempts, picked.secret,
                         picked.previous_secret"#,
            limits.per_endpoint,
            limits.batch,
            limits.lease.as_secs_f64()
        )
        .fetch_all(&mut *tx)
        .bounded(self)
        .await?;
        if rows.is_empty() {
            // An idle poll changed nothing: it commits nothing either.
            tx.rollback().await?;
        } else {
            self.commit(tx).await?;
        }
        Ok(rows)
    }

    /// Records that the delivery `id` was accepted with `status`; its endpoint is no
    /// longer failing.
    pub async fn delivery_succeeded(&self, id: i64, status: i32) -> Result<(), StoreError> {
        let mut tx = self.scoped().await?;
        sqlx::query!(
            "WITH d AS ( \
               UPDATE webhook_deliveries SET state = 'delivered', attempts = attempts + 1, \
                 delivered_at = now(), last_status = $2, last_error = NULL, \
                 claimed_until = NULL \
               WHERE id = $1 AND state = 'pending' RETURNING webhook_id) \
             UPDATE webhooks w SET failing_since = NULL FROM d \
             WHERE w.id = d.webhook_id AND w.failing_since IS NOT NULL",
            id,
            status
        )
        .execute(&mut *tx)
        .bounded(self)
        .await?;
        self.commit(tx).await
    }

    /// Records a failed attempt of the delivery `id`: due again after `failure.retry_in`,
    /// or failed. Its endpoint is disabled when the receiver answered 410, or when it has
    /// been failing for `failure.disable_after`: then it is returned (once, whichever
    /// attempt disabled it).
    pub async fn delivery_failed(
        &self,
        id: i64,
        failure: &Failure<'_>,
    ) -> Result<Option<DisabledEndpoint>, StoreError> {
        let retry_secs = failure.retry_in.map(|d| d.as_secs_f64());
        let mut tx = self.scoped().await?;
        let failing = sqlx::query!(
            r#"WITH d AS (
                 UPDATE webhook_deliveries SET
                   state = CASE WHEN $2::float8 IS NULL THEN 'failed' ELSE 'pending' END,
                   attempts = attempts + 1,
                   next_attempt_at = now() + make_interval(secs => coalesce($2, 0)),
                   last_status = $3, last_error = $4, claimed_until = NULL
                 WHERE id = $1 AND state = 'pending' RETURNING webhook_id)
               UPDATE webhooks w SET failing_since = coalesce(w.failing_since, now())
               FROM d WHERE w.id = d.webhook_id
               RETURNING w.id, w.failing_since <= now() - make_interval(secs => $5)
                           AS "too_long!""#,
            id,
            retry_secs,
            failure.status,
            failure.error,
            failure.disable_after.as_secs_f64()
        )
        .fetch_optional(&mut *tx)
        .bounded(self)
        .await?;
        let reason = match &failing {
            Some(_) if failure.gone => Some("the receiver answered 410 Gone".to_string()),
            Some(f) if f.too_long => Some(format!(
                "every delivery failed for {} s",
                failure.disable_after.as_secs()
            )),
            _ => None,
        };
        let disabled = match (failing, reason) {
            (Some(f), Some(reason)) => disable(&mut tx, self, f.id, reason).await?,
            _ => None,
        };
        self.commit(tx).await?;
        Ok(disabled)
    }
}

/// Disables the endpoint `id` for `reason`, unless it is disabled already.
async fn disable(
    tx: &mut sqlx::Transaction<'static, sqlx::Postgres>,
    store: &PgStore,
    id: Uuid,
    reason: String,
) -> Result<Option<DisabledEndpoint>, StoreError> {
    let row = sqlx::query!(
        "UPDATE webhooks SET enabled = false, disabled_reason = $2, disabled_at = now(), \
           updated_at = now() \
         WHERE id = $1 AND enabled RETURNING id, space_id, url",
        id,
        reason
    )
    .fetch_optional(&mut **tx)
    .bounded(store)
    .await?;
    Ok(row.map(|r| DisabledEndpoint {
        id: r.id,
        space: r.space_id,
        url: r.url,
        reason,
    }))
}
