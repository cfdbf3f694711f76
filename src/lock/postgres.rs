//! The database lock provider: locks as rows of the `locks` table, for what must outlive a
//! Redis loss and needs no watchdog, the edit leases of documents (a person's check-out, held
//! for minutes). Every statement is one atomic statement against the database's clock, the
//! one clock every instance shares:
//!
//! - acquire: an upsert that takes the row when it is free or expired (or, for
//!   [`PgLockProvider::take`], renews it when the same holder has it), bumping its fence;
//! - release and extend: compare-and-set on the owner token, while the lock is live.
//!
//! A row stays after its release, its owner token null: the key's fence strictly increases
//! for its lifetime, so an expired holder's token is always below the next holder's. Every
//! call is bounded by `op_timeout`.

use std::future::Future;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::PgPool;

use super::{
    Attempt, FencingToken, LockError, LockHandle, LockProvider, OwnerToken, Ownership, Ttl,
};

/// Locks kept in PostgreSQL.
#[derive(Clone)]
pub struct PgLockProvider {
    pool: PgPool,
    op_timeout: Duration,
}

/// A live lock as the table holds it: who holds it, its fence, when it ends (by the
/// database's clock, and how long that is from now).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldLock {
    pub holder: Option<String>,
    pub fence: FencingToken,
    pub expires_at: DateTime<Utc>,
    pub expires_in: Duration,
}

/// What [`PgLockProvider::take`] found.
#[derive(Debug, Clone)]
pub enum Taken {
    /// The lock is the holder's, newly or renewed: its token and the lock.
    Held(OwnerToken, HeldLock),
    /// Someone else holds it.
    Busy(HeldLock),
}

/// One row the take statement returns: the lock as taken, or as someone else holds it.
struct Row {
    owner_token: Option<String>,
    holder: Option<String>,
    fence: Option<i64>,
    expires_at: Option<DateTime<Utc>>,
    taken: Option<bool>,
    now: Option<DateTime<Utc>>,
}

impl PgLockProvider {
    pub fn new(pool: PgPool, op_timeout: Duration) -> Self {
        Self { pool, op_timeout }
    }

    async fn bounded<T>(
        &self,
        call: impl Future<Output = Result<T, sqlx::Error>>,
    ) -> Result<T, LockError> {
        match tokio::time::timeout(self.op_timeout, call).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(LockError::Unavailable(format!("postgresql: {e}"))),
            Err(_) => Err(LockError::Unavailable(format!(
                "postgresql did not answer within {:?}",
                self.op_timeout
            ))),
        }
    }

    /// Takes `key` for `holder` (any holder for `None`) for `ttl`, when it is free or its
    /// lock expired; when `holder` holds it already, renews it for `ttl` from now, with the
    /// same token and fence. Held by another: `Busy`, naming it.
    pub async fn take(
        &self,
        key: &str,
        ttl: Ttl,
        holder: Option<&str>,
    ) -> Result<Taken, LockError> {
        let token = OwnerToken::generate();
        let secs = ttl.as_duration().as_secs_f64();
        let row = sqlx::query_file_as!(
            Row,
            "src/lock/sql/take.sql",
            key,
            token.as_str(),
            holder,
            secs
        );
        let r = self.bounded(row.fetch_one(&self.pool)).await?;
        let (Some(fence), Some(expires_at), Some(now)) = (r.fence, r.expires_at, r.now) else {
            // Free and never taken, yet not taken now: only a concurrent first take does that.
            let held = HeldLock {
                holder: None,
                fence: FencingToken::new(1),
                expires_at: Utc::now(),
                expires_in: Duration::from_millis(1),
            };
            return Ok(Taken::Busy(held));
        };
        let held = HeldLock {
            holder: r.holder,
            fence: FencingToken::new(fence),
            expires_at,
            expires_in: (expires_at - now).to_std().unwrap_or_default(),
        };
        match (r.taken, r.owner_token) {
            (Some(true), Some(t)) => Ok(Taken::Held(OwnerToken(t), held)),
            _ => Ok(Taken::Busy(held)),
        }
    }

    /// The live lock of `key`, if any.
    pub async fn held(&self, key: &str) -> Result<Option<HeldLock>, LockError> {
        let q = sqlx::query!(
            r#"SELECT holder, fence, expires_at, clock_timestamp() AS "now!" FROM locks
               WHERE key = $1 AND owner_token IS NOT NULL AND expires_at > clock_timestamp()"#,
            key
        );
        let row = self.bounded(q.fetch_optional(&self.pool)).await?;
        Ok(row.map(|r| HeldLock {
            holder: r.holder,
            fence: FencingToken::new(r.fence),
            expires_at: r.expires_at,
            expires_in: (r.expires_at - r.now).to_std().unwrap_or_default(),
        }))
    }

    /// Frees `key` if `holder` holds it, whatever its token. `Ok(false)`: it did not.
    pub async fn give_back(&self, key: &str, holder: &str) -> Result<bool, LockError> {
        let q = sqlx::query!(
            "UPDATE locks SET owner_token = NULL WHERE key = $1 AND holder = $2 \
             AND owner_token IS NOT NULL AND expires_at > clock_timestamp()",
            key,
            holder
        );
        Ok(self.bounded(q.execute(&self.pool)).await?.rows_affected() == 1)
    }
}

#[async_trait]
impl LockProvider for PgLockProvider {
    async fn acquire(&self, key: &str, ttl: Ttl) -> Result<Attempt, LockError> {
        let started = Instant::now();
        match self.take(key, ttl, None).await? {
            Taken::Held(token, held) => Ok(Attempt::Held(LockHandle {
                ownership: Ownership {
                    key: key.to_string(),
                    token,
                },
                // Counted from before the statement was sent: never later than the row's.
                expires_at: started + ttl.as_duration(),
                fencing_token: held.fence,
            })),
            Taken::Busy(held) => Ok(Attempt::Busy {
                holder_ttl: Some(held.expires_in.max(Duration::from_millis(1))),
            }),
        }
    }

    async fn release(&self, owner: &Ownership) -> Result<bool, LockError> {
        let q = sqlx::query!(
            "UPDATE locks SET owner_token = NULL WHERE key = $1 AND owner_token = $2 \
             AND expires_at > clock_timestamp()",
            owner.key,
            owner.token.as_str()
        );
        Ok(self.bounded(q.execute(&self.pool)).await?.rows_affected() == 1)
    }

    async fn extend(&self, owner: &Ownership, ttl: Ttl) -> Result<bool, LockError> {
        let q = sqlx::query!(
            "UPDATE locks SET expires_at = clock_timestamp() + make_interval(secs => $3) \
             WHERE key = $1 AND owner_token = $2 AND expires_at > clock_timestamp()",
            owner.key,
            owner.token.as_str(),
            ttl.as_duration().as_secs_f64()
        );
        Ok(self.bounded(q.execute(&self.pool)).await?.rows_affected() == 1)
    }

    async fn locked(&self, key: &str) -> Result<bool, LockError> {
        Ok(self.held(key).await?.is_some())
    }

    async fn ping(&self) -> Result<(), LockError> {
        let q = sqlx::query!("SELECT 1 AS one");
        self.bounded(q.fetch_one(&self.pool)).await.map(|_| ())
    }
}
