//! Statements on idempotency records. The primary key (owner_id, key) is the guarantee that
//! one key runs once per caller, whatever the instances do. The policy that strings these
//! statements together (replay, mismatch, in flight, takeover) is `usecases::idempotency`.

use std::time::Duration;

use uuid::Uuid;

use super::error::StoreError;
use super::pg::{PgStore, Statement};
use super::tx::Staged;

/// A key a running request holds: whose, which, and under which token (the column `claim`:
/// a takeover changes it, so a request that lost its key can no longer write to it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldKey {
    pub owner: String,
    pub key: String,
    pub token: Uuid,
}

/// A record as stored.
#[derive(Debug, Clone)]
pub struct KeyRecord {
    pub fingerprint: String,
    pub done: bool,
    pub response_status: Option<i16>,
    pub response_body: Option<serde_json::Value>,
    /// Its request's in-flight time passed without an outcome (its instance died).
    pub stale: bool,
}

impl PgStore {
    /// Deletes the record of (owner, key) if it has expired.
    pub async fn delete_expired_key(&self, owner: &str, key: &str) -> Result<(), StoreError> {
        sqlx::query!(
            "DELETE FROM idempotency_keys WHERE owner_id = $1 AND key = $2 AND expires_at < now()",
            owner,
            key
        )
        .execute(&self.pool)
        .bounded(self)
        .await?;
        Ok(())
    }

    /// Inserts an IN_FLIGHT record for `held`; false when (owner, key) already has one.
    pub async fn insert_key(
        &self,
        held: &HeldKey,
        fingerprint: &str,
        in_flight_for: Duration,
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        let inserted = sqlx::query_scalar!(
            "INSERT INTO idempotency_keys \
               (owner_id, key, fingerprint, state, locked_until, expires_at, claim) \
             VALUES ($1, $2, $3, 'IN_FLIGHT', now() + make_interval(secs => $4), \
                     now() + make_interval(secs => $5), $6) \
             ON CONFLICT (owner_id, key) DO NOTHING RETURNING 1",
            held.owner,
            held.key,
            fingerprint,
            in_flight_for.as_secs_f64(),
            ttl.as_secs_f64(),
            held.token
        )
        .fetch_optional(&self.pool)
        .bounded(self)
        .await?;
        Ok(inserted.is_some())
    }

    pub async fn find_key(&self, owner: &str, key: &str) -> Result<Option<KeyRecord>, StoreError> {
        sqlx::query_as!(
            KeyRecord,
            r#"SELECT fingerprint, state = 'DONE' AS "done!", response_status, response_body,
                      locked_until < now() AS "stale!"
               FROM idempotency_keys WHERE owner_id = $1 AND key = $2"#,
            owner,
            key
        )
        .fetch_optional(&self.pool)
        .bounded(self)
        .await
    }

    /// Takes over a stale IN_FLIGHT record for `held`; false when it is no longer stale.
    pub async fn take_over_key(
        &self,
        held: &HeldKey,
        in_flight_for: Duration,
    ) -> Result<bool, StoreError> {
        let taken = sqlx::query_scalar!(
            "UPDATE idempotency_keys SET locked_until = now() + make_interval(secs => $3), \
             claim = $4 WHERE owner_id = $1 AND key = $2 AND state = 'IN_FLIGHT' \
             AND locked_until < now() RETURNING 1",
            held.owner,
            held.key,
            in_flight_for.as_secs_f64(),
            held.token
        )
        .fetch_optional(&self.pool)
        .bounded(self)
        .await?;
        Ok(taken.is_some())
    }

    /// Stores the response to replay, if the key is still `held`'s.
    pub async fn finish_key(
        &self,
        held: &HeldKey,
        status: u16,
        body: &serde_json::Value,
    ) -> Result<(), StoreError> {
        self.bounded(write_response(&self.pool, held, status, body))
            .await?;
        Ok(())
    }

    /// Forgets a key whose request ended in a retryable failure, so a retry runs again.
    pub async fn abandon_key(&self, held: &HeldKey) -> Result<(), StoreError> {
        sqlx::query!(
            "DELETE FROM idempotency_keys \
             WHERE owner_id = $1 AND key = $2 AND state = 'IN_FLIGHT' AND claim = $3",
            held.owner,
            held.key,
            held.token
        )
        .execute(&self.pool)
        .bounded(self)
        .await?;
        Ok(())
    }

    /// Deletes expired records; returns how many.
    pub async fn purge_expired_keys(&self) -> Result<u64, StoreError> {
        Ok(
            sqlx::query!("DELETE FROM idempotency_keys WHERE expires_at < now()")
                .execute(&self.pool)
                .bounded(self)
                .await?
                .rows_affected(),
        )
    }
}

impl<T> Staged<T> {
    /// Records the response of the request's key in this write's transaction, so the
    /// change and its record commit together. False: the key was taken over by a retry
    /// (this request ran past its in-flight time), and this write must not commit.
    pub async fn save_reply(
        &mut self,
        held: &HeldKey,
        status: u16,
        body: &serde_json::Value,
    ) -> Result<bool, StoreError> {
        Ok(write_response(&mut *self.tx, held, status, body).await? == 1)
    }
}

/// Marks the key DONE with the response to replay, if `held` still holds it; returns how
/// many records that touched (0 or 1).
async fn write_response<'e>(
    executor: impl sqlx::PgExecutor<'e>,
    held: &HeldKey,
    status: u16,
    body: &serde_json::Value,
) -> Result<u64, StoreError> {
    Ok(sqlx::query!(
        "UPDATE idempotency_keys SET state = 'DONE', response_status = $3, \
         response_body = $4, locked_until = now() \
         WHERE owner_id = $1 AND key = $2 AND claim = $5",
        held.owner,
        held.key,
        status as i16,
        body,
        held.token
    )
    .execute(executor)
    .await?
    .rows_affected())
}
