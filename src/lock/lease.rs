//! A lease: the locks a handler holds, kept alive by a watchdog that renews them all every
//! ttl/3. Once LOST (renewal refused or failed, or deadline passed) a lease stays lost: a
//! late renewal reply never revives it. Deadlines use the monotonic clock.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::{FencingToken, LockHandle, LockProvider, Ttl};
use crate::lock::gate::LockStats;

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

/// Held locks plus their watchdog. Release explicitly with [`Lease::release`]; dropping a
/// lease stops the watchdog and leaves the keys to expire by TTL.
pub struct Lease {
    provider: Arc<dyn LockProvider>,
    handles: Vec<LockHandle>,
    shared: Arc<Shared>,
    stop: CancellationToken,
}

#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("the lease on the lock was lost")]
pub struct LeaseLost;

impl Lease {
    /// Starts the watchdog for `handles` (all acquired).
    pub(crate) fn start(
        provider: Arc<dyn LockProvider>,
        handles: Vec<LockHandle>,
        ttl: Ttl,
        every: Duration,
        max_hold: Duration,
        stats: Arc<LockStats>,
        shutdown: &CancellationToken,
    ) -> Self {
        debug_assert!(handles.iter().all(|h| h.acquired));
        let valid_until = handles
            .iter()
            .map(|h| h.expires_at)
            .min()
            .unwrap_or_else(Instant::now);
        let shared = Arc::new(Shared {
            lost: AtomicBool::new(false),
            suspended: AtomicBool::new(false),
            valid_until: Mutex::new(valid_until),
        });
        let stop = shutdown.child_token();
        let lease = Self {
            provider: provider.clone(),
            handles: handles.clone(),
            shared: shared.clone(),
            stop: stop.clone(),
        };
        let hard_stop = Instant::now() + max_hold;
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tokio::time::sleep(every) => {}
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
                let renewed = provider.extend_all(&handles, ttl).await;
                let mut until = shared.valid_until.lock().expect("lease poisoned");
                match renewed {
                    Ok(true) if !shared.lost.load(Ordering::SeqCst) && sent_at < *until => {
                        stats.renewals.fetch_add(1, Ordering::Relaxed);
                        *until = sent_at + ttl.as_duration();
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
        });
        lease
    }

    /// Ok while every lock is still ours; call right before COMMIT.
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

    /// The highest fencing token among the held locks.
    pub fn fencing_token(&self) -> Option<FencingToken> {
        self.handles.iter().filter_map(|h| h.fencing_token).max()
    }

    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.handles.iter().map(|h| h.lock_key.as_str())
    }

    /// Stops the watchdog and releases every lock by owner token.
    pub async fn release(self) {
        self.stop.cancel();
        for h in &self.handles {
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
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}
