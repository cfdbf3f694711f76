//! SQL of idempotency records. The primary key (owner_id, key) is the guarantee that one
//! key runs once per caller, whatever the instances do.

use std::time::Duration;

use sqlx::PgPool;
use uuid::Uuid;

use super::StoreError;

/// The key a running request owns; lets a transition record its response in its own
/// transaction, so a COMMIT and its idempotency record stand or fall together.
#[derive(Debug, Clone)]
pub struct Receipt {
    pub owner: String,
    pub key: String,
    pub claim: Uuid,
}

/// Marks the key DONE with `status` and `body`, inside the caller's transaction.
pub async fn record_in_tx(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    receipt: &Receipt,
    status: u16,
    body: &serde_json::Value,
) -> Result<(), StoreError> {
    let n = sqlx::query(
        "UPDATE idempotency_keys SET state = 'DONE', response_status = $3, response_body = $4, \
         locked_until = now() WHERE owner_id = $1 AND key = $2 AND claim = $5",
    )
    .bind(&receipt.owner)
    .bind(&receipt.key)
    .bind(status as i16)
    .bind(body)
    .bind(receipt.claim)
    .execute(&mut **tx)
    .await?
    .rows_affected();
    if n != 1 {
        // The key was taken over (this request ran past in_flight_timeout_ms): roll back,
        // so the change happens once, under whoever owns the key now.
        return Err(StoreError::KeyTakenOver);
    }
    Ok(())
}

/// What to do with a request that carries an idempotency key.
#[derive(Debug, Clone, PartialEq)]
pub enum Begin {
    /// This request owns the key now (with this claim): run it, then `finish` or `abandon`.
    Proceed(Uuid),
    /// The key already ran with this request: replay its response.
    Replay {
        status: u16,
        body: serde_json::Value,
    },
    /// The key was used with a different request.
    Mismatch,
    /// The first request with this key is still running.
    InFlight,
}

/// fingerprint, state, response status, response body, whether its in-flight time passed
type Existing = (String, String, Option<i16>, Option<serde_json::Value>, bool);

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// Claims `key` for `owner`, or says why not.
pub async fn begin(
    pool: &PgPool,
    owner: &str,
    key: &str,
    fingerprint: &str,
    in_flight_for: Duration,
    ttl: Duration,
) -> Result<Begin, StoreError> {
    sqlx::query(
        "DELETE FROM idempotency_keys WHERE owner_id = $1 AND key = $2 AND expires_at < now()",
    )
    .bind(owner)
    .bind(key)
    .execute(pool)
    .await?;
    let claim = Uuid::new_v4();
    for _ in 0..3 {
        let inserted: Option<i32> = sqlx::query_scalar(
            "INSERT INTO idempotency_keys (owner_id, key, fingerprint, state, locked_until, expires_at, claim) \
             VALUES ($1, $2, $3, 'IN_FLIGHT', now() + make_interval(secs => $4), now() + make_interval(secs => $5), $6) \
             ON CONFLICT (owner_id, key) DO NOTHING RETURNING 1",
        )
        .bind(owner)
        .bind(key)
        .bind(fingerprint)
        .bind(secs(in_flight_for))
        .bind(secs(ttl))
        .bind(claim)
        .fetch_optional(pool)
        .await?;
        if inserted.is_some() {
            return Ok(Begin::Proceed(claim));
        }
        let existing: Option<Existing> = sqlx::query_as(
            "SELECT fingerprint, state, response_status, response_body, locked_until < now() \
             FROM idempotency_keys WHERE owner_id = $1 AND key = $2",
        )
        .bind(owner)
        .bind(key)
        .fetch_optional(pool)
        .await?;
        let Some((fp, state, status, body, stale)) = existing else {
            continue; // purged between the two statements: try the insert again
        };
        if fp != fingerprint {
            return Ok(Begin::Mismatch);
        }
        if state == "DONE" {
            return Ok(Begin::Replay {
                status: status.unwrap_or(200) as u16,
                body: body.unwrap_or(serde_json::Value::Null),
            });
        }
        if !stale {
            return Ok(Begin::InFlight);
        }
        // The first request never finished (its instance died): take the key over.
        let taken: Option<i32> = sqlx::query_scalar(
            "UPDATE idempotency_keys SET locked_until = now() + make_interval(secs => $3), claim = $4 \
             WHERE owner_id = $1 AND key = $2 AND state = 'IN_FLIGHT' AND locked_until < now() \
             RETURNING 1",
        )
        .bind(owner)
        .bind(key)
        .bind(secs(in_flight_for))
        .bind(claim)
        .fetch_optional(pool)
        .await?;
        return Ok(if taken.is_some() {
            Begin::Proceed(claim)
        } else {
            Begin::InFlight
        });
    }
    Ok(Begin::InFlight)
}

/// Stores the response to replay, if the key is still this request's.
pub async fn finish(
    pool: &PgPool,
    owner: &str,
    key: &str,
    claim: Uuid,
    status: u16,
    body: &serde_json::Value,
) -> Result<(), StoreError> {
    sqlx::query(
        "UPDATE idempotency_keys SET state = 'DONE', response_status = $3, response_body = $4, \
         locked_until = now() WHERE owner_id = $1 AND key = $2 AND claim = $5",
    )
    .bind(owner)
    .bind(key)
    .bind(status as i16)
    .bind(body)
    .bind(claim)
    .execute(pool)
    .await?;
    Ok(())
}

/// Forgets a key whose request ended in a retryable failure, so a retry runs again.
pub async fn abandon(pool: &PgPool, owner: &str, key: &str, claim: Uuid) -> Result<(), StoreError> {
    sqlx::query(
        "DELETE FROM idempotency_keys \
         WHERE owner_id = $1 AND key = $2 AND state = 'IN_FLIGHT' AND claim = $3",
    )
    .bind(owner)
    .bind(key)
    .bind(claim)
    .execute(pool)
    .await?;
    Ok(())
}

/// Deletes expired records; returns how many.
pub async fn purge_expired(pool: &PgPool) -> Result<u64, StoreError> {
    Ok(
        sqlx::query("DELETE FROM idempotency_keys WHERE expires_at < now()")
            .execute(pool)
            .await?
            .rows_affected(),
    )
}
