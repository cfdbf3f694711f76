//! What the lock layer counts, read by `/metrics` at scrape time.

use std::sync::atomic::AtomicU64;

/// Counters of the gate and its leases.
#[derive(Debug, Default)]
pub struct LockStats {
    pub acquired: AtomicU64,
    pub contended: AtomicU64,
    pub degraded: AtomicU64,
    pub renewals: AtomicU64,
    /// Renewal attempts that timed out or failed to reach Redis, and were retried.
    pub renewal_retries: AtomicU64,
    pub lost: AtomicU64,
    /// Releases that timed out or failed to reach Redis: each key is given back in the
    /// background, retried until its TTL ends.
    pub release_retries: AtomicU64,
}
