//! Statements on idempotency records. The primary key (owner_id, key) is the guarantee that
//! one key runs once per caller, whatever the instances do. The policy that strings these
//! statements together (repeat, mismatch, in flight, takeover) is `usecases::idempotency`.

use std::time::Duration;

use uuid::Uuid;

use super::error::StoreError;
use super::pg::{PgStore, Statement};
use super::tx::Uncommitted;

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
    pub state: KeyState,
}

/// Where the request of a key got to.
#[derive(Debug, Clone, PartialEq)]
pub enum KeyState {
    /// Still running; `stale` when its in-flight time passed without an ending (its
    /// instance died).
    InFlight { stale: bool },
    /// Refused for good (or succeeded before results were recorded typed): the reply as
    /// it was sent.
    Replied {
        status: u16,
        body: serde_json::Value,
    },
    /// Succeeded: the use case's result, as `usecases::idempotency::Recordable` records it.
    Succeeded(serde_json::Value),
}

impl PgStore {
    /// Deletes the record of (owner, key) if it has expired and is tied to no space (the
    /// statements on records still running need no scope: such a record is in none until
    /// its result is saved; `find_key` deletes the others).
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

    /// The record of (owner, key), if any and not expired. Runs in the caller's scope: a
    /// record of a write's result is in that write's space, and hidden (as if absent) from
    /// a caller no longer in it. An expired record is deleted here, in the same scope (the
    /// unscoped `delete_expired_key` only reaches records tied to no space).
    pub async fn find_key(&self, owner: &str, key: &str) -> Result<Option<KeyRecord>, StoreError> {
        let mut tx = self.scoped().await?;
        let found = sqlx::query!(
            r#"WITH gone AS (
                 DELETE FROM idempotency_keys
                 WHERE owner_id = $1 AND key = $2 AND expires_at < now())
               SELECT fingerprint, state, response_status, response_body, result,
                      locked_until < now() AS "stale!"
               FROM idempotency_keys WHERE owner_id = $1 AND key = $2 AND expires_at >= now()"#,
            owner,
            key
        )
        .fetch_optional(&mut *tx)
        .bounded(self)
        .await?;
        self.commit(tx).await?;
        let Some(row) = found else {
            return Ok(None);
        };
        let state = match (row.state.as_str(), row.result) {
            ("SUCCEEDED", Some(result)) => KeyState::Succeeded(result),
            ("DONE", _) => KeyState::Replied {
                status: row.response_status.unwrap_or(200) as u16,
                body: row.response_body.unwrap_or(serde_json::Value::Null),
            },
            ("IN_FLIGHT", _) => KeyState::InFlight { stale: row.stale },
            (other, _) => {
                let e = anyhow::anyhow!("idempotency record in an unknown state {other:?}");
                return Err(e.into());
            }
        };
        Ok(Some(KeyRecord {
            fingerprint: row.fingerprint,
            state,
        }))
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

    /// Records a refusal's reply, as it was sent, to repeat to retries; only while `held`
    /// still holds the key.
    pub async fn finish_key(
        &self,
        held: &HeldKey,
        status: u16,
        body: &serde_json::Value,
    ) -> Result<(), StoreError> {
        sqlx::query!(
            "UPDATE idempotency_keys SET state = 'DONE', response_status = $3, \
             response_body = $4, locked_until = now() \
             WHERE owner_id = $1 AND key = $2 AND claim = $5",
            held.owner,
            held.key,
            status as i16,
            body,
            held.token
        )
        .execute(&self.pool)
        .bounded(self)
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
}

impl<T> Uncommitted<T> {
    /// Records the result of the request of `held` (the write's, as
    /// `usecases::idempotency::Recordable` records it) in this write's transaction, so the
    /// change and its record commit together. False: the key was taken over by a retry
    /// (this request ran past its in-flight time), and this write must not commit.
    pub async fn save_result(
        &mut self,
        held: &HeldKey,
        result: &serde_json::Value,
    ) -> Result<bool, StoreError> {
        let saved = sqlx::query!(
            "UPDATE idempotency_keys SET state = 'SUCCEEDED', result = $3, locked_until = now(), \
             space_id = COALESCE($5, space_id) \
             WHERE owner_id = $1 AND key = $2 AND claim = $4",
            held.owner,
            held.key,
            result,
            held.token,
            self.space.as_deref(),
        )
        .execute(&mut *self.tx)
        .await?;
        Ok(saved.rows_affected() == 1)
    }
}
