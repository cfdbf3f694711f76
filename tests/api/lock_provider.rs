//! The lock provider contract against real Redis (the in-memory provider runs it in unit
//! tests), plus the Redis-specific fencing guarantees.

use std::time::Duration;

use kh_review::lock::redis::RedisLockProvider;
use kh_review::lock::{LockProvider, Ttl};
use uuid::Uuid;

use crate::support::{redis_cmd, redis_url};

fn provider() -> RedisLockProvider {
    RedisLockProvider::new(&redis_url(), 4, Duration::from_millis(500)).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_provider_passes_the_contract() {
    let p = provider();
    p.ping()
        .await
        .expect("Redis unreachable: run `make services`");
    kh_review::lock::contract::run_all(&p, &format!("t:{}:", Uuid::new_v4().simple())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fencing_tokens_keep_increasing_after_the_counter_is_lost() {
    let p = provider();
    let key = format!("t:{}:lock:doc:review:x", Uuid::new_v4().simple());
    let ttl = Ttl::new(Duration::from_secs(5)).unwrap();
    let a = p.require_acquire(&key, ttl).await.unwrap();
    p.release(&a).await.unwrap();
    // What FLUSHALL or a restart does to this key's counter.
    let client = redis::Client::open(redis_url()).unwrap();
    let fence = format!("{key}:fence");
    redis_cmd(&client, &["DEL", &fence]).await;
    let b = p.require_acquire(&key, ttl).await.unwrap();
    assert!(
        b.fencing_token > a.fencing_token,
        "{:?} then {:?}",
        a.fencing_token,
        b.fencing_token
    );
    // Fence counters expire: none piles up forever.
    let mut c = client.get_multiplexed_async_connection().await.unwrap();
    let pttl: i64 = redis::cmd("PTTL")
        .arg(&fence)
        .query_async(&mut c)
        .await
        .unwrap();
    assert!(
        pttl > 0 && pttl <= 60_000,
        "fence counter must carry a TTL of minutes at most, got {pttl}"
    );
    p.release(&b).await.unwrap();
    redis_cmd(&client, &["DEL", &fence]).await;
}
