//! The outer lock: a fast gate that turns concurrent duplicates into an immediate 409.
//!
//! It is an optimisation, never the guarantee: the PostgreSQL row lock keeps state correct
//! on its own. So this layer must never make a request fail because Redis is down (that is
//! what [`gate::LockGate`] and its circuit breaker are for), and it must never hold a lock
//! without a TTL.

#[doc(hidden)]
pub mod contract;
pub mod gate;
pub mod lease;
pub mod local;
pub mod memory;
pub mod postgres;
pub mod redis;
mod settings;
mod stats;

use std::fmt;
use std::time::{Duration, Instant};

use async_trait::async_trait;

pub use crate::domain::FencingToken;
pub use settings::{LockSettings, RedisMode, RedisSettings};

/// A lock time-to-live. It cannot be zero: there are no permanent locks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ttl(Duration);

impl Ttl {
    /// Refuses zero and anything under a millisecond (Redis `PX` works in milliseconds).
    pub fn new(d: Duration) -> Option<Self> {
        (d.as_millis() > 0).then_some(Self(d))
    }
    pub fn as_duration(self) -> Duration {
        self.0
    }
    pub fn as_millis(self) -> u64 {
        self.0.as_millis() as u64
    }
}

/// A random owner token: only its holder can release or extend the lock.
#[derive(Clone, PartialEq, Eq)]
pub struct OwnerToken(String);

impl OwnerToken {
    pub fn generate() -> Self {
        let mut bytes = [0u8; 16];
        rand::fill(&mut bytes);
        Self(bytes.iter().map(|b| format!("{b:02x}")).collect())
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for OwnerToken {
    // Enough to correlate in logs, not enough to steal the lock.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "OwnerToken({}…)", &self.0[..6])
    }
}

/// A lock key and the token of its owner: only the owner may release or extend it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ownership {
    pub key: String,
    pub token: OwnerToken,
}

/// A lock that is ours.
#[derive(Debug, Clone)]
pub struct LockHandle {
    pub ownership: Ownership,
    /// Monotonic deadline after which the lock may belong to someone else.
    pub expires_at: Instant,
    /// Strictly above every token issued for this key before.
    pub fencing_token: FencingToken,
}

/// What one try at a key found.
#[derive(Debug, Clone)]
pub enum Attempt {
    /// The lock is ours.
    Held(LockHandle),
    /// Someone else holds the key, for about `holder_ttl` more when the backend says.
    Busy { holder_ttl: Option<Duration> },
}

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("lock {key} is held by another owner")]
    Contended {
        key: String,
        holder_ttl: Option<Duration>,
    },
    #[error("lock backend unavailable: {0}")]
    Unavailable(String),
}

/// A lock backend. Implementations: [`redis::RedisLockProvider`] (the outer locks),
/// [`postgres::PgLockProvider`] (the edit leases of documents) and
/// [`memory::MemoryLockProvider`] (unit tests, single process).
#[async_trait]
pub trait LockProvider: Send + Sync + 'static {
    /// Tries once; never waits and never errors on contention.
    async fn acquire(&self, key: &str, ttl: Ttl) -> Result<Attempt, LockError>;

    /// Like `acquire`, but contention is an error.
    async fn require_acquire(&self, key: &str, ttl: Ttl) -> Result<LockHandle, LockError> {
        match self.acquire(key, ttl).await? {
            Attempt::Held(handle) => Ok(handle),
            Attempt::Busy { holder_ttl } => Err(LockError::Contended {
                key: key.to_string(),
                holder_ttl,
            }),
        }
    }

    /// Deletes the key only if it still holds this owner's token. `Ok(false)`: not ours.
    async fn release(&self, owner: &Ownership) -> Result<bool, LockError>;

    /// Resets the TTL only if the key still holds this owner's token. `Ok(false)`: the key
    /// is gone or owned by someone else.
    async fn extend(&self, owner: &Ownership, ttl: Ttl) -> Result<bool, LockError>;

    /// Whether anyone holds the key.
    async fn locked(&self, key: &str) -> Result<bool, LockError>;

    /// Whether the backend answers (readiness).
    async fn ping(&self) -> Result<(), LockError>;
}

/// Builds lock key names with the configured prefix. The id is a Redis Cluster hash tag
/// (`{...}`): the lock key and its fence counter land in one slot, so the acquire script
/// never spans two (`CROSSSLOT`). The prefix may hold no braces (config check).
#[derive(Debug, Clone)]
pub struct LockKeys {
    prefix: String,
}

impl LockKeys {
    pub fn new(prefix: impl Into<String>) -> Self {
        Self {
            prefix: prefix.into(),
        }
    }
    /// The outer lock of a document's submit.
    pub fn for_submit(&self, document_id: uuid::Uuid) -> String {
        format!("{}lock:doc:submit:{{{document_id}}}", self.prefix)
    }
    /// The outer lock of a review's decision.
    pub fn for_review(&self, review_id: uuid::Uuid) -> String {
        format!("{}lock:doc:review:{{{review_id}}}", self.prefix)
    }
    /// The outer lock of one voter's vote on a review whose stage needs several approvals:
    /// a double click of one reviewer meets it, other reviewers do not. `<voter>` is the
    /// first 16 hex digits of SHA-256 of `sub` (no user id in key names).
    pub fn for_voter(&self, review_id: uuid::Uuid, sub: &str) -> String {
        use sha2::{Digest, Sha256};
        let digest = Sha256::digest(sub.as_bytes());
        let voter: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
        format!(
            "{}lock:doc:review:{{{review_id}}}:voter:{voter}",
            self.prefix
        )
    }
    /// The key the breaker's prober locks to test Redis.
    pub fn probe(&self) -> String {
        format!("{}lock:probe:{{probe}}", self.prefix)
    }
}

/// The fence counter key that belongs to a lock key.
pub(crate) fn fence_key(lock_key: &str) -> String {
    format!("{lock_key}:fence")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttl_refuses_zero() {
        assert!(Ttl::new(Duration::ZERO).is_none());
        assert!(Ttl::new(Duration::from_micros(500)).is_none());
        assert_eq!(Ttl::new(Duration::from_millis(5)).unwrap().as_millis(), 5);
    }

    /// Redis Cluster's rule: the part between the first `{` and the next `}`, if not empty.
    fn hash_tag(key: &str) -> &str {
        match key.find('{') {
            Some(open) => match key[open + 1..].find('}') {
                Some(len) if len > 0 => &key[open + 1..open + 1 + len],
                _ => key,
            },
            None => key,
        }
    }

    #[test]
    fn a_lock_key_and_its_fence_counter_share_one_hash_slot() {
        let keys = LockKeys::new("kh:");
        let id = uuid::Uuid::new_v4();
        for key in [keys.for_submit(id), keys.for_review(id)] {
            assert_eq!(hash_tag(&key), id.to_string(), "{key}");
            assert_eq!(hash_tag(&fence_key(&key)), hash_tag(&key));
        }
        assert_eq!(keys.for_review(id), format!("kh:lock:doc:review:{{{id}}}"));
        let probe = keys.probe();
        assert_eq!(hash_tag(&fence_key(&probe)), hash_tag(&probe));
        assert_ne!(hash_tag(&probe), probe, "the probe key is tagged too");
    }

    #[test]
    fn owner_tokens_are_random_and_redacted() {
        let a = OwnerToken::generate();
        let b = OwnerToken::generate();
        assert_ne!(a, b);
        assert_eq!(a.as_str().len(), 32);
        assert!(!format!("{a:?}").contains(a.as_str()));
    }
}
