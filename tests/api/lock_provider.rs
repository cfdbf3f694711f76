//! The lock provider contract against real Redis (the in-memory provider runs it in unit
//! tests), plus the Redis-specific fencing guarantees.

use std::time::Duration;

use kh_review::lock::redis::RedisLockProvider;
use kh_review::lock::{LockProvider, Ttl};
use uuid::Uuid;

use crate::support::*;

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

/// `rediss://` with a password, the server's certificate checked against a CA named by
/// `SSL_CERT_FILE` (the real binary, so the variable is its own): the lock guards
/// transitions over TLS. A wrong password, or a certificate nobody vouches for, is Redis
/// being unavailable: degraded, never a failed request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_over_tls_with_a_password_guards_transitions() {
    let dir = std::env::temp_dir().join(format!("kh-tls-{}", Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let (own, ca) = OwnRedis::start_tls(&dir, "s3cret-pw").await;
    let app = spawn_app().await; // for its stores; the binaries below share them
    let url = |pw: &str| format!("rediss://:{pw}@127.0.0.1:{}", own.port);
    let trusted = ca.to_str().unwrap().to_string();
    let nobody = dir.join("none.pem").to_str().unwrap().to_string();
    let cases = [
        ("s3cret-pw", &trusted, "redis"),
        ("wrong", &trusted, "row_lock_only"),
        ("s3cret-pw", &nobody, "row_lock_only"),
    ];
    for (password, roots, guarded) in cases {
        let (_, review_id) = app.pending_review().await;
        let port = dead_port();
        let envs = [
            ("APP__REDIS__URL", url(password)),
            ("SSL_CERT_FILE", roots.clone()),
        ];
        let _binary = serve_binary(&app, port, &envs);
        let base = format!("http://127.0.0.1:{port}");
        listening(&app, &base).await;
        let r = app
            .client
            .post(format!("{base}/api/v1/reviews/{review_id}/approve"))
            .bearer_auth(app.reviewer())
            .json(&serde_json::json!({}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), reqwest::StatusCode::OK);
        let mode = app.approval_lock_mode(&review_id).await;
        assert_eq!(mode, guarded, "password {password}, roots {roots}");
    }
    app.outbox_drained(Duration::from_secs(10)).await;
    app.finish().await;
    let _ = std::fs::remove_dir_all(&dir);
}
