//! A lease: a held lock, kept alive by a watchdog that renews it every `renew_every`. A
//! renewal that times out or meets a broken connection is retried while the lease is still
//! valid. The lease is LOST only when a renewal finds the key gone or owned by another
//! token, or its validity runs out; once lost it stays lost: a late renewal reply never
//! revives it. Deadlines use the monotonic clock.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::stats::LockStats;
use super::{FencingToken, LockHandle, LockProvider, Ownership, Ttl};

struct Shared {
    lost: AtomicBool,
    /// Test hook: renewals stop as if the process were frozen.
    suspended: AtomicBool,
    /// The last confirmed start of the lock (the acquire or the last renewal, as sent) plus
    /// its TTL, less the safety margin.
    valid_until: Mutex<Instant>,
}

impl Shared {
    fn mark_lost(&self) {
        self.lost.store(true, Ordering::SeqCst);
    }
    fn is_lost(&self) -> bool {
        self.lost.load(Ordering::SeqCst)
    }
    fn valid_until(&self) -> Instant {
        *self.valid_until.lock().expect("lease poisoned")
    }
}

/// A held lock plus its watchdog. Release explicitly with [`Lease::release`]; dropping a
/// lease stops the watchdog and leaves the key to expire by TTL.
pub struct Lease {
    provider: Arc<dyn LockProvider>,
    handle: LockHandle,
    shared: Arc<Shared>,
    stop: CancellationToken,
    /// The key's TTL: no extend sent before now keeps it past now + this.
    key_ttl: Duration,
    stats: Arc<LockStats>,
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

impl Renewal {
    /// The part of each TTL the lease does not count on: a tenth, or less when renewals
    /// come late in the TTL (half the time left after one), so the first renewal always
    /// goes out while the lease is valid. The Redis host's clock may run a little ahead of
    /// ours, and a renewal sent later would arrive too late to matter.
    fn margin(&self) -> Duration {
        let ttl = self.ttl.as_duration();
        (ttl / 10).min(ttl.saturating_sub(self.every) / 2)
    }
    /// How long a lock confirmed now is ours by the local clock.
    fn validity(&self) -> Duration {
        self.ttl.as_duration() - self.margin()
    }
    /// The first pause before retrying a failed renewal; it doubles up to `every`.
    fn first_retry_pause(&self) -> Duration {
        (self.every / 4)
            .min(Duration::from_millis(100))
            .max(Duration::from_millis(1))
    }
}

impl Lease {
    /// Starts the watchdog for `handle`.
    pub(crate) fn start(
        provider: Arc<dyn LockProvider>,
        handle: LockHandle,
        renewal: Renewal,
        stats: Arc<LockStats>,
        shutdown: &CancellationToken,
    ) -> Self {
        let shared = Arc::new(Shared {
            lost: AtomicBool::new(false),
            suspended: AtomicBool::new(false),
            valid_until: Mutex::new(handle.expires_at - renewal.margin()),
        });
        let stop = shutdown.child_token();
        tokio::spawn(watchdog(
            provider.clone(),
            handle.clone(),
            renewal,
            shared.clone(),
            stats.clone(),
            stop.clone(),
        ));
        Self {
            provider,
            handle,
            shared,
            stop,
            key_ttl: renewal.ttl.as_duration(),
            stats,
        }
    }

    /// Ok while the lock is still ours; call right before COMMIT.
    pub fn check(&self) -> Result<(), LeaseLost> {
        if self.shared.is_lost() {
            return Err(LeaseLost);
        }
        if Instant::now() >= self.shared.valid_until() {
            self.shared.mark_lost();
            return Err(LeaseLost);
        }
        Ok(())
    }

    /// Test hook: stop renewing, as a frozen process would.
    pub fn suspend_renewal(&self) {
        self.shared.suspended.store(true, Ordering::SeqCst);
    }

    pub fn fencing_token(&self) -> FencingToken {
        self.handle.fencing_token
    }

    /// Stops the watchdog and releases the lock by owner token.
    pub async fn release(self) {
        self.stop.cancel();
        let h = &self.handle.ownership;
        match self.provider.release(h).await {
            Ok(true) => {}
            Ok(false) => {
                tracing::info!(lock_key = %h.key, "lock was no longer ours at release")
            }
            Err(e) => {
                self.stats.release_retries.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(lock_key = %h.key, error = %e, "lock release failed; retried until its ttl ends");
                let (provider, owner) = (self.provider.clone(), h.clone());
                let until = Instant::now() + self.key_ttl;
                tokio::spawn(async move {
                    give_back_until(provider.as_ref(), &owner, until, true).await
                });
            }
        }
    }
}

/// Retries the compare-and-delete of `owner`'s key, after pauses from 100 ms doubling to
/// 1 s, until it deletes the key, until `until` (by when the key has expired anyway), or,
/// when `absent_is_final`, until it finds the key not ours. For a release that failed
/// (Redis unreachable, a failover under way: the key may live on in a promoted replica)
/// and for the key a timed-out acquire may still take later: either is given back when
/// Redis answers again, not a whole TTL later.
pub(crate) async fn give_back_until(
    provider: &dyn LockProvider,
    owner: &Ownership,
    until: Instant,
    absent_is_final: bool,
) {
    let mut pause = Duration::from_millis(100);
    while Instant::now() + pause < until {
        tokio::time::sleep(pause).await;
        match provider.release(owner).await {
            Ok(true) => return,
            Ok(false) if absent_is_final => return,
            Ok(false) | Err(_) => {}
        }
        pause = (pause * 2).min(Duration::from_secs(1));
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
    let renewer = Renewer {
        provider: provider.as_ref(),
        handle: &handle,
        renewal,
        shared: &shared,
        stats: &stats,
        stop: &stop,
    };
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(renewal.every) => {}
        }
        if shared.is_lost() {
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
        if !renewer.renew().await {
            return;
        }
    }
}

/// What one renewal works with.
struct Renewer<'a> {
    provider: &'a dyn LockProvider,
    handle: &'a LockHandle,
    renewal: Renewal,
    shared: &'a Shared,
    stats: &'a LockStats,
    stop: &'a CancellationToken,
}

impl Renewer<'_> {
    /// One renewal. A timeout or a connection error says nothing about the lock, so the
    /// extend is retried, after a pause that doubles, for as long as the lease is valid (the
    /// provider gives a broken connection up, so a retry goes out on a sound one). False
    /// when the lease is lost or the watchdog stopped.
    async fn renew(&self) -> bool {
        let mut pause = self.renewal.first_retry_pause();
        loop {
            let sent_at = Instant::now();
            if self.shared.is_lost() {
                return false;
            }
            if sent_at >= self.shared.valid_until() {
                return self.lose("no lock renewal got through before the lease ran out");
            }
            let error = match self
                .provider
                .extend(&self.handle.ownership, self.renewal.ttl)
                .await
            {
                Ok(true) => return self.confirm(sent_at),
                Ok(false) => return self.lose("lock renewal refused: key gone or not ours"),
                Err(e) => e,
            };
            let left = self
                .shared
                .valid_until()
                .saturating_duration_since(Instant::now());
            if left.is_zero() {
                return self.lose("no lock renewal got through before the lease ran out");
            }
            self.stats.renewal_retries.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(error = %error, retry_in = ?pause.min(left), "lock renewal failed; retrying while the lease is valid");
            tokio::select! {
                _ = self.stop.cancelled() => return false,
                _ = tokio::time::sleep(pause.min(left)) => {}
            }
            pause = (pause * 2).min(self.renewal.every);
        }
    }

    /// The key still held our token when the extend sent at `sent_at` ran: valid for
    /// another TTL from then. A lease lost meanwhile stays lost.
    fn confirm(&self, sent_at: Instant) -> bool {
        let mut until = self.shared.valid_until.lock().expect("lease poisoned");
        if self.shared.is_lost() {
            return false;
        }
        *until = sent_at + self.renewal.validity();
        self.stats.renewals.fetch_add(1, Ordering::Relaxed);
        true
    }

    fn lose(&self, why: &'static str) -> bool {
        self.shared.mark_lost();
        self.stats.lost.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(lock_key = %self.handle.ownership.key, "{why}: lease lost");
        false
    }
}

#[cfg(test)]
mod tests;
