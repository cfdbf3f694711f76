//! The gate every transition passes: try the outer lock, turn contention into an immediate
//! `LOCK_NOT_ACQUIRED`, and degrade to "no outer lock" when Redis is down or slow. Degrading
//! is safe because the PostgreSQL row lock alone keeps state correct.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::breaker::{BreakerState, CircuitBreaker, Permit};
use super::lease::Lease;
use super::{LockError, LockProvider, Ttl};

/// Counters for metrics and tests.
#[derive(Debug, Default)]
pub struct LockStats {
    pub acquired: AtomicU64,
    pub contended: AtomicU64,
    pub degraded: AtomicU64,
    pub renewals: AtomicU64,
    pub lost: AtomicU64,
}

/// The outcome of passing the gate.
pub enum Passage {
    /// The outer lock is ours until released.
    Held(Lease),
    /// Redis is unavailable: go on under the row lock alone.
    Degraded,
}

impl Passage {
    pub fn lease(&self) -> Option<&Lease> {
        match self {
            Passage::Held(l) => Some(l),
            Passage::Degraded => None,
        }
    }
    pub async fn release(self) {
        if let Passage::Held(lease) = self {
            lease.release().await;
        }
    }
}

#[derive(Debug, thiserror::Error)]
#[error("lock {key} is held by another request")]
pub struct Contended {
    pub key: String,
    pub retry_after: Duration,
}

pub struct LockGate {
    provider: Arc<dyn LockProvider>,
    breaker: CircuitBreaker,
    ttl: Ttl,
    renew_every: Duration,
    max_hold: Duration,
    retry_after: Duration,
    stats: Arc<LockStats>,
    shutdown: CancellationToken,
    probe_key: String,
}

impl LockGate {
    pub fn new(
        provider: Arc<dyn LockProvider>,
        breaker: CircuitBreaker,
        ttl: Ttl,
        renew_every: Duration,
        max_hold: Duration,
        retry_after: Duration,
        shutdown: CancellationToken,
    ) -> Self {
        Self {
            provider,
            breaker,
            ttl,
            renew_every,
            max_hold,
            retry_after,
            stats: Arc::new(LockStats::default()),
            shutdown,
            probe_key: "lock:probe".to_string(),
        }
    }

    /// The key the breaker's prober locks (and releases) to test Redis.
    pub fn with_probe_key(mut self, key: String) -> Self {
        self.probe_key = key;
        self
    }

    pub fn stats(&self) -> &LockStats {
        &self.stats
    }

    pub fn breaker_state(&self) -> BreakerState {
        self.breaker.state()
    }

    /// While the breaker is not closed, checks Redis every `every` and closes the breaker
    /// as soon as it answers, so recovery does not wait for the next request.
    pub fn spawn_prober(self: &Arc<Self>, every: Duration) {
        let gate = self.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = gate.shutdown.cancelled() => return,
                    _ = tokio::time::sleep(every) => {}
                }
                if gate.breaker.state() == BreakerState::Closed {
                    continue;
                }
                // A write, not a read: a read-only replica left after a failover answers
                // reads but would refuse every lock.
                let ttl = Ttl::new(Duration::from_secs(1)).expect("non-zero");
                if let Ok(handle) = gate.provider.acquire(&gate.probe_key, ttl).await {
                    if handle.acquired {
                        let _ = gate.provider.release(&handle).await;
                    }
                    gate.breaker.on_success();
                    tracing::info!("redis is back: circuit breaker closed");
                }
            }
        });
    }

    /// Acquires `key` or says who holds it; never waits for a holder.
    #[tracing::instrument(skip_all, fields(lock_key = %key))]
    pub async fn enter(&self, key: &str) -> Result<Passage, Contended> {
        if self.breaker.permit() == Permit::Rejected {
            self.stats.degraded.fetch_add(1, Ordering::Relaxed);
            tracing::debug!("redis circuit open: row lock only");
            return Ok(Passage::Degraded);
        }
        match self.provider.acquire(key, self.ttl).await {
            Ok(handle) if handle.acquired => {
                self.breaker.on_success();
                self.stats.acquired.fetch_add(1, Ordering::Relaxed);
                Ok(Passage::Held(Lease::start(
                    self.provider.clone(),
                    vec![handle],
                    self.ttl,
                    self.renew_every,
                    self.max_hold,
                    self.stats.clone(),
                    &self.shutdown,
                )))
            }
            Ok(handle) => {
                self.breaker.on_success();
                self.stats.contended.fetch_add(1, Ordering::Relaxed);
                let holder = handle.holder_ttl.unwrap_or(self.retry_after);
                Err(Contended {
                    key: handle.lock_key,
                    retry_after: holder.min(self.retry_after).max(Duration::from_secs(1)),
                })
            }
            Err(LockError::Contended { key, holder_ttl }) => {
                self.breaker.on_success();
                self.stats.contended.fetch_add(1, Ordering::Relaxed);
                Err(Contended {
                    key,
                    retry_after: holder_ttl
                        .unwrap_or(self.retry_after)
                        .max(Duration::from_secs(1)),
                })
            }
            Err(LockError::Unavailable(reason)) => {
                let opened = self.breaker.on_failure();
                self.stats.degraded.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(%reason, breaker_opened = opened, "redis unavailable: degraded to row lock only");
                Ok(Passage::Degraded)
            }
        }
    }
}
