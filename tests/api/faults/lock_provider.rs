//! The lock provider contract against real Redis (the in-memory provider runs it in unit
//! tests), plus the Redis-specific fencing guarantees.

use std::time::{Duration, Instant};

use kh_review::lock::redis::RedisLockProvider;
use kh_review::lock::{LockProvider, Ttl};
use uuid::Uuid;

use crate::support::app::spawn_app;
use crate::support::binary::{listening, serve_binary};
use crate::support::inspect::{poll_until, redis_cmd, wait_for};
use crate::support::own_redis::OwnRedis;
use kh_review_testkit::proxy::{dead_port, Proxy};
use kh_review_testkit::stores::redis_url;

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
    p.release(&a.ownership).await.unwrap();
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
    p.release(&b.ownership).await.unwrap();
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
        let binary = serve_binary(&app, port, &envs);
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
        // Stopped as an orchestrator stops it: the delivery mark of its approval, still
        // waiting for its group, is written before it exits (killed, it would be left to
        // the takeover once the row's inline lease ends).
        binary.terminate().await;
    }
    app.outbox_drained(Duration::from_secs(10)).await;
    app.finish().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// An acquire that times out client-side still runs on the server when its request arrives.
/// Its clean-up release must not overtake it on another pooled connection, or the key is
/// held by no one for a whole TTL. Here the acquire's request reaches Redis 1.5 s late (a
/// stalled connection, through a proxy), its connection goes to a waiter when the 500 ms
/// timeout ends, and the other pooled connection is free for the clean-up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_acquire_leaves_no_ghost_lock() {
    let own = OwnRedis::start().await;
    let (proxy, via) = Proxy::in_front_of(&own.url()).await;
    let p = RedisLockProvider::new(&via, 2, Duration::from_millis(500)).unwrap();
    let ttl = Ttl::new(Duration::from_secs(10)).unwrap();
    // The server knows both scripts, so the late acquire runs by its hash.
    let warm = p.require_acquire("warm-up", ttl).await.unwrap();
    assert!(p.release(&warm.ownership).await.unwrap());
    let key = format!("lock:doc:review:{{{}}}", Uuid::new_v4());
    let fence = format!("{key}:fence");
    proxy.delay_requests_containing(fence.as_bytes(), Duration::from_millis(1500));
    // A full pool: one connection held here, the other by the acquire, and a waiter queued.
    let other = p.pool().get().await.unwrap();
    let started = Instant::now();
    let attempt = tokio::spawn({
        let (p, key) = (p.clone(), key.clone());
        async move { p.acquire(&key, ttl).await }
    });
    let status = || async { Some(p.pool().status()) };
    wait_for(
        "the acquire to take the second connection",
        Duration::from_secs(2),
        || async { status().await.filter(|s| s.size == 2 && s.available == 0) },
    )
    .await;
    let waiter = tokio::spawn({
        let p = p.clone();
        async move { p.pool().get().await.unwrap() }
    });
    wait_for("a waiter for the pool", Duration::from_secs(2), || async {
        status().await.filter(|s| s.waiting == 1)
    })
    .await;
    assert!(attempt.await.unwrap().is_err(), "the acquire timed out");
    drop(other); // the only connection left for the clean-up release
    let _stalled = waiter.await.unwrap(); // the waiter got the acquire's connection
    let direct = redis::Client::open(own.url()).unwrap();
    let exists = |k: String| {
        let direct = direct.clone();
        async move {
            let mut c = direct.get_multiplexed_async_connection().await.unwrap();
            let n: i64 = redis::cmd("EXISTS")
                .arg(&k)
                .query_async(&mut c)
                .await
                .unwrap();
            n == 1
        }
    };
    wait_for(
        "the late acquire to run",
        Duration::from_secs(3),
        || async { exists(fence.clone()).await.then_some(()) },
    )
    .await;
    let gone = poll_until(Duration::from_secs(2), || async {
        (!exists(key.clone()).await).then_some(())
    })
    .await;
    assert!(
        gone.is_some(),
        "a ghost lock: {key} still held {:?} after the timed-out acquire (ttl {ttl:?})",
        started.elapsed()
    );
    // Another owner takes the lock at once, long before the TTL would have freed it.
    let q = RedisLockProvider::new(&own.url(), 1, Duration::from_millis(500)).unwrap();
    let next = q.require_acquire(&key, ttl).await.expect("the key is free");
    assert!(started.elapsed() < ttl.as_duration() / 2);
    q.release(&next.ownership).await.unwrap();
}
