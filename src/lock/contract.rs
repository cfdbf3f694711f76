//! The contract every [`LockProvider`] must pass, run against both providers: the in-memory
//! one in unit tests, Redis in the integration tests. Panics on the first violation.

use std::time::Duration;

use super::{Attempt, LockProvider, OwnerToken, Ownership, Ttl};

fn ttl(ms: u64) -> Ttl {
    Ttl::new(Duration::from_millis(ms)).expect("non-zero")
}

/// Runs every check with keys under `prefix`.
pub async fn run_all<P: LockProvider + ?Sized>(p: &P, prefix: &str) {
    exclusive_and_released_by_owner_only(p, &format!("{prefix}c1")).await;
    wrong_owner_cannot_extend(p, &format!("{prefix}c2")).await;
    fencing_tokens_strictly_increase(p, &format!("{prefix}c3")).await;
    expiry_frees_the_key(p, &format!("{prefix}c4")).await;
    assert!(
        Ttl::new(Duration::ZERO).is_none(),
        "a zero TTL must be refused"
    );
}

async fn exclusive_and_released_by_owner_only<P: LockProvider + ?Sized>(p: &P, key: &str) {
    // An acquired handle carries a fencing token: `LockHandle::fencing_token` is no option.
    let Attempt::Held(a) = p.acquire(key, ttl(10_000)).await.unwrap() else {
        panic!("first acquire must succeed");
    };
    let Attempt::Busy { holder_ttl } = p.acquire(key, ttl(10_000)).await.unwrap() else {
        panic!("second acquire must see contention");
    };
    assert!(
        holder_ttl.is_some(),
        "contention reports the holder's remaining ttl"
    );
    assert!(p.require_acquire(key, ttl(10_000)).await.is_err());
    let other = Ownership {
        key: key.to_string(),
        token: OwnerToken::generate(),
    };
    assert!(
        !p.release(&other).await.unwrap(),
        "a non-owner must not release"
    );
    assert!(
        p.locked(key).await.unwrap(),
        "still held after a foreign release"
    );
    assert!(p.release(&a.ownership).await.unwrap(), "the owner releases");
    assert!(!p.locked(key).await.unwrap());
    assert!(
        !p.release(&a.ownership).await.unwrap(),
        "a second release is a no-op"
    );
}

async fn wrong_owner_cannot_extend<P: LockProvider + ?Sized>(p: &P, key: &str) {
    let a = p.require_acquire(key, ttl(10_000)).await.unwrap().ownership;
    let mut forged = a.clone();
    forged.token = OwnerToken::generate();
    assert!(!p.extend(&forged, ttl(10_000)).await.unwrap());
    assert!(p.extend(&a, ttl(10_000)).await.unwrap());
    p.release(&a).await.unwrap();
    assert!(
        !p.extend(&a, ttl(10_000)).await.unwrap(),
        "a released lock cannot be extended"
    );
}

async fn fencing_tokens_strictly_increase<P: LockProvider + ?Sized>(p: &P, key: &str) {
    let mut last = None;
    for _ in 0..20 {
        let h = p.require_acquire(key, ttl(10_000)).await.unwrap();
        let f = h.fencing_token;
        if let Some(prev) = last {
            assert!(f > prev, "fencing token {f:?} not above {prev:?}");
        }
        last = Some(f);
        assert!(p.release(&h.ownership).await.unwrap());
    }
}

async fn expiry_frees_the_key<P: LockProvider + ?Sized>(p: &P, key: &str) {
    let a = p.require_acquire(key, ttl(50)).await.unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while p.locked(key).await.unwrap() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "a 50 ms lock did not expire"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let b = p.require_acquire(key, ttl(10_000)).await.unwrap();
    assert!(b.fencing_token > a.fencing_token);
    assert!(
        !p.extend(&a.ownership, ttl(10_000)).await.unwrap(),
        "an expired owner cannot extend"
    );
    assert!(
        !p.release(&a.ownership).await.unwrap(),
        "an expired owner cannot release the new one"
    );
    assert!(p.release(&b.ownership).await.unwrap());
}
