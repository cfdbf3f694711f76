//! The gate every transition passes: try the outer lock, turn contention into an immediate
//! `LOCK_NOT_ACQUIRED`, and degrade to "no outer lock" when Redis is down or slow. Degrading
//! is safe because the PostgreSQL row lock alone keeps state correct; while degraded, the
//! instance's own per-key gate (`local.rs`) refuses duplicates beyond
//! `lock.degraded_per_key` at once, so they do not each hold a pooled connection waiting
//! on the row lock.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::lease::{Lease, Renewal};
use super::local::{LocalGate, LocalPass};
pub use super::stats::LockStats;
use super::{Attempt, LockError, LockProvider, LockSettings, Ttl};
use crate::breaker::{BreakerState, CircuitBreaker, Permit};

/// The outcome of passing the gate.
pub enum Passage {
    /// The outer lock is ours until released.
    Held(Lease),
    /// Redis is unavailable: go on under the row lock alone, holding a place at this
    /// instance's per-key gate until released.
    Degraded(LocalPass),
}

impl Passage {
    pub fn lease(&self) -> Option<&Lease> {
        match self {
            Passage::Held(l) => Some(l),
            Passage::Degraded(_) => None,
        }
    }
    pub async fn release(self) {
        match self {
            Passage::Held(lease) => lease.release().await,
            Passage::Degraded(place) => drop(place),
        }
    }
}

#[derive(Debug, thiserror::Error)]
#[error("lock {key} is held by another request")]
pub struct LockBusy {
    pub key: String,
    pub retry_after: Duration,
}

pub struct LockGate {
    provider: Arc<dyn LockProvider>,
    breaker: CircuitBreaker,
    renewal: Renewal,
    retry_after: Duration,
    stats: Arc<LockStats>,
    shutdown: CancellationToken,
    probe_key: String,
    /// Who may wait on a row lock while the outer lock is unavailable.
    local: Arc<LocalGate>,
}

impl LockGate {
    /// The gate `[lock]` describes, in front of `provider`. The breaker's prober locks
    /// `probe_key` to test the backend.
    pub fn from_settings(
        provider: Arc<dyn LockProvider>,
        settings: &LockSettings,
        probe_key: String,
        shutdown: CancellationToken,
    ) -> anyhow::Result<Self> {
        let ttl = settings.ttl;
        Ok(Self {
            provider,
            breaker: CircuitBreaker::new(settings.breaker_failure_threshold, settings.breaker_open),
            renewal: Renewal {
                ttl,
                every: settings.renew_every(),
                max_hold: settings.max_hold,
            },
            retry_after: settings.retry_after,
            stats: Arc::new(LockStats::default()),
            shutdown,
            probe_key,
            local: LocalGate::new(settings.degraded_per_key),
        })
    }

    pub fn stats(&self) -> &LockStats {
        &self.stats
    }

    pub fn breaker_state(&self) -> BreakerState {
        self.breaker.state()
    }

    /// Whether the lock backend answers (readiness; does not touch the breaker).
    pub async fn ping(&self) -> Result<(), LockError> {
        self.provider.ping().await
    }

    /// The breaker's prober, until `shutdown`: while the breaker is not closed, checks
    /// Redis every `every` and closes the breaker as soon as it answers, so recovery does
    /// not wait for the next request. (Started and supervised by the wiring.)
    pub async fn run_prober(self: Arc<Self>, every: Duration, shutdown: CancellationToken) {
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(every) => {}
            }
            if self.breaker.state() == BreakerState::Closed {
                continue;
            }
            // A write, not a read: a read-only replica left after a failover answers
            // reads but would refuse every lock.
            let ttl = Ttl::new(Duration::from_secs(1)).expect("non-zero");
            if let Ok(attempt) = self.provider.acquire(&self.probe_key, ttl).await {
                if let Attempt::Held(handle) = attempt {
                    let _ = self.provider.release(&handle.ownership).await;
                }
                self.breaker.on_success();
                tracing::info!("redis is back: circuit breaker closed");
            }
        }
    }

    /// Acquires `key` or says who holds it; never waits for a holder.
    #[tracing::instrument(name = "lock.acquire", level = "debug", skip_all, fields(lock_key = %key))]
    pub async fn enter(&self, key: &str) -> Result<Passage, LockBusy> {
        if self.breaker.permit() == Permit::Rejected {
            tracing::debug!("redis circuit open: row lock only");
            return self.degraded(key);
        }
        // `acquire` reports contention as `Busy`, never as an error: any error means the
        // backend is unavailable.
        match self.provider.acquire(key, self.renewal.ttl).await {
            Ok(Attempt::Held(handle)) => {
                self.breaker.on_success();
                self.stats.acquired.fetch_add(1, Ordering::Relaxed);
                Ok(Passage::Held(Lease::start(
                    self.provider.clone(),
                    handle,
                    self.renewal,
                    self.stats.clone(),
                    &self.shutdown,
                )))
            }
            Ok(Attempt::Busy { holder_ttl }) => {
                self.breaker.on_success();
                self.stats.contended.fetch_add(1, Ordering::Relaxed);
                let holder = holder_ttl.unwrap_or(self.retry_after);
                Err(LockBusy {
                    key: key.to_string(),
                    retry_after: holder.min(self.retry_after).max(Duration::from_secs(1)),
                })
            }
            Err(e) => {
                let opened = self.breaker.on_failure();
                tracing::warn!(reason = %e, breaker_opened = opened, "redis unavailable: degraded to row lock only");
                self.degraded(key)
            }
        }
    }

    /// On under the row lock alone, if this instance's gate has a place for `key`; else the
    /// refusal of a held lock, at once.
    fn degraded(&self, key: &str) -> Result<Passage, LockBusy> {
        match self.local.try_enter(key) {
            Some(place) => {
                self.stats.degraded.fetch_add(1, Ordering::Relaxed);
                Ok(Passage::Degraded(place))
            }
            None => {
                self.stats.contended.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(
                    "redis unavailable and this key already waits on its row lock here: refused"
                );
                Err(LockBusy {
                    key: key.to_string(),
                    retry_after: self.retry_after.max(Duration::from_secs(1)),
                })
            }
        }
    }
}
