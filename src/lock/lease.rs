//! A lease: a held lock, kept alive by a watchdog that renews it every `renew_every`. Once
//! LOST (renewal refused or failed, or deadline passed) a lease stays lost: a late renewal
//! reply never revives it. Deadlines use the monotonic clock.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::stats::LockStats;
use super::{FencingToken, LockHandle, LockProvider, Ttl};

struct Shared {
    lost: AtomicBool,
    /// Test hook: renewals stop as if the process were frozen.
    suspended: AtomicBool,
    valid_until: Mutex<Instant>,
}

impl Shared {
    fn mark_lost(&self) {
        self.lost.store(true, Ordering::SeqCst);
    }
}

/// A held lock plus its watchdog. Release explicitly with [`Lease::release`]; dropping a
/// lease stops the watchdog and leaves the key to expire by TTL.
pub struct Lease {
    provider: Arc<dyn LockProvider>,
    handle: LockHandle,
    shared: Arc<Shared>,
    stop: CancellationToken,
}

#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("the lease on the lock was lost")]
pub struct LeaseLost;

/// How the watchdog renews: every `every` by `ttl`, until `max_hold` has passed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Renewal {
    pub ttl: Ttl,
    pub every: Duration,
    pub max_hold: Duration,
}

impl Lease {
    /// Starts the watchdog for `handle` (acquired).
    pub(crate) fn start(
        provider: Arc<dyn LockProvider>,
        handle: LockHandle,
        renewal: Renewal,
        stats: Arc<LockStats>,
        shutdown: &CancellationToken,
    ) -> Self {
        debug_assert!(handle.acquired);
        let shared = Arc::new(Shared {
            lost: AtomicBool::new(false),
            suspended: AtomicBool::new(false),
            valid_until: Mutex::new(handle.expires_at),
        });
        let stop = shutdown.child_token();
        tokio::spawn(watchdog(
            provider.clone(),
            handle.clone(),
            renewal,
            shared.clone(),
            stats,
            stop.clone(),
        ));
        Self {
            provider,
            handle,
            shared,
            stop,
        }
    }

    /// Ok while the lock is still ours; call right before COMMIT.
    pub fn check(&self) -> Result<(), LeaseLost> {
        if self.shared.lost.load(Ordering::SeqCst) {
            return Err(LeaseLost);
        }
        if Instant::now() >= *self.shared.valid_until.lock().expect("lease poisoned") {
            self.shared.mark_lost();
            return Err(LeaseLost);
        }
        Ok(())
    }

    /// Test hook: stop renewing, as a frozen process would.
    pub fn suspend_renewal(&self) {
        self.shared.suspended.store(true, Ordering::SeqCst);
    }

    pub fn fencing_token(&self) -> Option<FencingToken> {
        self.handle.fencing_token
    }

    /// Stops the watchdog and releases the lock by owner token.
    pub async fn release(self) {
        self.stop.cancel();
        let h = &self.handle;
        match self.provider.release(h).await {
            Ok(true) => {}
            Ok(false) => {
                tracing::info!(lock_key = %h.lock_key, "lock was no longer ours at release")
            }
            Err(e) => {
                tracing::warn!(lock_key = %h.lock_key, error = %e, "lock release failed; it will expire by ttl")
            }
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Renews the lock every `renewal.every` until stopped, lost, or past its maximum hold.
async fn watchdog(
    provider: Arc<dyn LockProvider>,
    handle: LockHandle,
    renewal: Renewal,
    shared: Arc<Shared>,
    stats: Arc<LockStats>,
    stop: CancellationToken,
) {
    let hard_stop = Instant::now() + renewal.max_hold;
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(renewal.every) => {}
        }
        if shared.lost.load(Ordering::SeqCst) {
            return;
        }
        if shared.suspended.load(Ordering::SeqCst) {
            continue;
        }
        if Instant::now() >= hard_stop {
            // Maximum hold time reached: stop renewing; the lease ends at its expiry.
            tracing::warn!("lock held past its maximum hold time; renewal stopped");
            return;
        }
        let sent_at = Instant::now();
        let renewed = provider.extend(&handle, renewal.ttl).await;
        let mut until = shared.valid_until.lock().expect("lease poisoned");
        match renewed {
            Ok(true) if !shared.lost.load(Ordering::SeqCst) && sent_at < *until => {
                stats.renewals.fetch_add(1, Ordering::Relaxed);
                *until = sent_at + renewal.ttl.as_duration();
            }
            Ok(_) => {
                shared.mark_lost();
                stats.lost.fetch_add(1, Ordering::Relaxed);
                tracing::warn!("lock renewal refused: lease lost");
                return;
            }
            Err(e) => {
                shared.mark_lost();
                stats.lost.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(error = %e, "lock renewal failed: lease lost");
                return;
            }
        }
    }
}
