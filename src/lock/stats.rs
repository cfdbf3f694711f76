//! What the lock layer counts, read by `/metrics` at scrape time.

use std::sync::atomic::AtomicU64;

/// Counters of the gate and its leases.
#[derive(Debug, Default)]
pub struct LockStats {
    pub acquired: AtomicU64,
    pub contended: AtomicU64,
    pub degraded: AtomicU64,
    pub renewals: AtomicU64,
    pub lost: AtomicU64,
}
