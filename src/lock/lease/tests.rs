//! Unit tests of the lease's watchdog and release, with a scripted provider.

use std::collections::VecDeque;

use async_trait::async_trait;

use super::*;
use crate::lock::memory::MemoryLockProvider;
use crate::lock::{Attempt, LockError};

/// The in-memory provider, except that `extend` answers from a script (then `Ok(true)`),
/// and `release` fails while its script says so.
struct Scripted {
    inner: MemoryLockProvider,
    extends: Mutex<VecDeque<Result<bool, LockError>>>,
    releases: Mutex<VecDeque<Result<bool, LockError>>>,
}

#[async_trait]
impl LockProvider for Scripted {
    async fn acquire(&self, key: &str, ttl: Ttl) -> Result<Attempt, LockError> {
        self.inner.acquire(key, ttl).await
    }
    async fn release(&self, owner: &Ownership) -> Result<bool, LockError> {
        let next = self.releases.lock().unwrap().pop_front();
        match next {
            Some(Err(e)) => Err(e),
            _ => self.inner.release(owner).await,
        }
    }
    async fn extend(&self, _: &Ownership, _: Ttl) -> Result<bool, LockError> {
        let next = self.extends.lock().unwrap().pop_front();
        next.unwrap_or(Ok(true))
    }
    async fn locked(&self, key: &str) -> Result<bool, LockError> {
        self.inner.locked(key).await
    }
    async fn ping(&self) -> Result<(), LockError> {
        Ok(())
    }
}

fn down() -> Result<bool, LockError> {
    Err(LockError::Unavailable("redis did not answer".into()))
}

/// A lease with a 300 ms TTL renewed every 60 ms, whose extends answer `script`.
async fn lease(script: Vec<Result<bool, LockError>>) -> (Lease, Arc<LockStats>) {
    let provider = Arc::new(Scripted {
        inner: MemoryLockProvider::new(),
        extends: Mutex::new(script.into()),
        releases: Mutex::default(),
    });
    let ttl = Ttl::new(Duration::from_millis(300)).unwrap();
    let handle = provider.require_acquire("k", ttl).await.unwrap();
    let renewal = Renewal {
        ttl,
        every: Duration::from_millis(60),
        max_hold: Duration::from_secs(30),
    };
    let stats = Arc::new(LockStats::default());
    let stop = CancellationToken::new();
    let lease = Lease::start(provider, handle, renewal, stats.clone(), &stop);
    (lease, stats)
}

#[tokio::test]
async fn failed_renewals_are_retried_while_the_lease_is_valid() {
    let (lease, stats) = lease(vec![down(), down(), down()]).await;
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert!(lease.check().is_ok(), "two TTLs later, still held");
    assert_eq!(stats.renewal_retries.load(Ordering::Relaxed), 3);
    assert_eq!(stats.lost.load(Ordering::Relaxed), 0);
    assert!(stats.renewals.load(Ordering::Relaxed) >= 2);
}

#[tokio::test]
async fn renewals_failing_until_the_validity_runs_out_lose_the_lease() {
    let (lease, stats) = lease((0..1000).map(|_| down()).collect()).await;
    tokio::time::sleep(Duration::from_millis(450)).await;
    assert!(lease.check().is_err());
    assert_eq!(stats.lost.load(Ordering::Relaxed), 1);
    let retries = stats.renewal_retries.load(Ordering::Relaxed);
    assert!(
        (2..=10).contains(&retries),
        "a few retries, backing off: {retries}"
    );
}

#[tokio::test]
async fn a_refused_renewal_loses_the_lease_at_once() {
    let (lease, stats) = lease(vec![Ok(false)]).await;
    tokio::time::sleep(Duration::from_millis(120)).await;
    assert!(lease.check().is_err(), "lost well before the TTL ends");
    assert_eq!(stats.lost.load(Ordering::Relaxed), 1);
    assert_eq!(stats.renewal_retries.load(Ordering::Relaxed), 0);
}

/// A release that fails (Redis unreachable, a failover under way) is retried in the
/// background: the key is given back once Redis answers, not a TTL later.
#[tokio::test]
async fn a_failed_release_is_retried_until_it_gives_the_key_back() {
    let provider = Arc::new(Scripted {
        inner: MemoryLockProvider::new(),
        extends: Mutex::default(),
        releases: Mutex::new(vec![down(), down()].into()),
    });
    let ttl = Ttl::new(Duration::from_secs(30)).unwrap();
    let handle = provider.require_acquire("k", ttl).await.unwrap();
    let renewal = Renewal {
        ttl,
        every: Duration::from_secs(10),
        max_hold: Duration::from_secs(30),
    };
    let stats = Arc::new(LockStats::default());
    let lease = Lease::start(
        provider.clone(),
        handle,
        renewal,
        stats.clone(),
        &CancellationToken::new(),
    );
    lease.release().await; // fails; the retries follow in the background
    assert!(
        provider.locked("k").await.unwrap(),
        "still held after the failed release"
    );
    assert_eq!(
        stats.release_retries.load(Ordering::Relaxed),
        1,
        "counted once"
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    while provider.locked("k").await.unwrap() {
        assert!(
            Instant::now() < deadline,
            "not given back within 5 s of a 30 s TTL"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        provider.releases.lock().unwrap().is_empty(),
        "both failures were met"
    );
}
