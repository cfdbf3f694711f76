//! Leases, pauses and fencing: a holder whose lock moved on can never commit or overwrite.

use std::time::{Duration, Instant};

use kh_review::web::auth::Role;
use kh_review::web::test_hooks::{PAUSE_AFTER_LOCK_HEADER, PAUSE_BEFORE_COMMIT_HEADER};
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::app::{spawn_app_with, AppOptions, TestApp, REVIEWER2};
use crate::support::inspect::{expect_error, poll_until, redis_cmd, redis_get, wait_for};
use crate::support::own_redis::OwnRedis;
use crate::support::views::Transition;
use kh_review_testkit::proxy::Proxy;

/// Waits for a frozen holder to take `key`, then for the key to expire under it.
async fn taken_then_expired(client: &redis::Client, key: &str) {
    wait_for(
        "the first holder to take the lock",
        Duration::from_secs(5),
        || async { redis_get(client, key).await.map(|_| ()) },
    )
    .await;
    wait_for(
        "the frozen holder's lock to expire",
        Duration::from_secs(5),
        || async { redis_get(client, key).await.is_none().then_some(()) },
    )
    .await;
}

async fn state_of(app: &TestApp, doc_id: &str) -> (String, i64, Option<i64>) {
    sqlx::query_as("SELECT status, version, fence_token FROM documents WHERE id = $1::uuid")
        .bind(doc_id)
        .fetch_one(&app.pg)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_renewal_loses_the_lease_and_commits_nothing() {
    let mut own = OwnRedis::start().await;
    let app = spawn_app_with(AppOptions {
        redis_url: Some(own.url()),
        lock_ttl_ms: 600,
        ..Default::default()
    })
    .await;
    let (doc_id, review_id) = app.pending_review().await;
    let client = redis::Client::open(own.url()).unwrap();
    let key = app.lock_key_review(&review_id);
    let req = app
        .approve_paused(&review_id, PAUSE_BEFORE_COMMIT_HEADER, 1500, false)
        .send();
    let kill = async {
        wait_for(
            "the handler to hold the lock",
            Duration::from_secs(5),
            || async { redis_get(&client, &key).await.map(|_| ()) },
        )
        .await;
        own.kill(); // the next renewal fails
    };
    let (r, ()) = tokio::join!(req, kill);
    expect_error(r.unwrap(), StatusCode::CONFLICT, "LOCK_LOST").await;
    let (status, version, _) = state_of(&app, &doc_id).await;
    assert_eq!(
        (status.as_str(), version),
        ("PENDING_REVIEW", 2),
        "nothing committed"
    );
    assert_eq!(
        app.count("SELECT count(*) FROM outbox WHERE event_type = 'document.approved'")
            .await,
        0
    );
    app.finish().await;
}

/// Redis paused for 300 ms (`CLIENT PAUSE`) while a transition holds its lock, with a Redis
/// timeout of 100 ms and a renewal every 100 ms, so at least one renewal times out: it is
/// retried while the lease is still valid (a TTL of 1 s), and the transition commits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renewal_slowed_by_a_redis_pause_is_retried_and_the_transition_commits() {
    let own = OwnRedis::start().await;
    let app = spawn_app_with(AppOptions {
        redis_url: Some(own.url()),
        lock_ttl_ms: 1000,
        redis_timeout_ms: 100,
        configure: Some(Box::new(|s| {
            s.lock.renew_interval = Some(Duration::from_millis(100))
        })),
        ..Default::default()
    })
    .await;
    let (doc_id, review_id) = app.pending_review().await;
    let client = redis::Client::open(own.url()).unwrap();
    let req = app
        .approve_paused(&review_id, PAUSE_BEFORE_COMMIT_HEADER, 1500, false)
        .send();
    let pause = async {
        // Once a renewal went through, the lock is held and its watchdog running: the pause
        // meets renewals, not the acquire (before) or the release (after 1.5 s).
        a_renewal(&app).await;
        redis_cmd(&client, &["CLIENT", "PAUSE", "300", "ALL"]).await;
    };
    let (r, ()) = tokio::join!(req, pause);
    let r = r.unwrap();
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap());
    let (status, version, _) = state_of(&app, &doc_id).await;
    assert_eq!((status.as_str(), version), ("APPROVED", 3));
    assert_eq!(app.approval_lock_mode(&review_id).await, "redis");
    let approved = "SELECT count(*) FROM outbox WHERE event_type = 'document.approved'";
    assert_eq!(app.count(approved).await, 1, "one transition, one event");
    let retried = app.metric("kh_lock_renewal_retries_total").await;
    assert!(
        retried.is_some_and(|n| n >= 1.0),
        "a renewal timed out and was retried: {retried:?}"
    );
    assert_eq!(app.metric("kh_lock_leases_lost_total").await, Some(0.0));
    app.finish().await;
}

/// Every connection to Redis cut (and new ones allowed again at once) while a transition
/// holds its lock: the renewal that meets the dead connection is retried on a fresh one,
/// and the transition commits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renewal_on_a_broken_connection_is_retried_on_a_fresh_one() {
    let own = OwnRedis::start().await;
    let (proxy, via) = Proxy::in_front_of(&own.url()).await;
    let app = spawn_app_with(AppOptions {
        redis_url: Some(via),
        lock_ttl_ms: 1000,
        configure: Some(Box::new(|s| {
            s.lock.renew_interval = Some(Duration::from_millis(150))
        })),
        ..Default::default()
    })
    .await;
    let (doc_id, review_id) = app.pending_review().await;
    let req = app
        .approve_paused(&review_id, PAUSE_BEFORE_COMMIT_HEADER, 1200, false)
        .send();
    let cut = async {
        a_renewal(&app).await;
        proxy.cut();
        proxy.restore();
    };
    let (r, ()) = tokio::join!(req, cut);
    let r = r.unwrap();
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap());
    let (status, version, _) = state_of(&app, &doc_id).await;
    assert_eq!((status.as_str(), version), ("APPROVED", 3));
    assert_eq!(app.approval_lock_mode(&review_id).await, "redis");
    let retried = app.metric("kh_lock_renewal_retries_total").await;
    assert!(
        retried.is_some_and(|n| n >= 1.0),
        "a renewal met the cut connection and was retried: {retried:?}"
    );
    app.finish().await;
}

/// A frozen holder (renewals stopped) pauses before its transaction; its lock expires, a
/// second reviewer takes the lock and commits; the first wakes and is refused by the fence.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_paused_past_its_ttl_is_fenced_off() {
    let app = spawn_app_with(AppOptions {
        lock_ttl_ms: 500,
        ..Default::default()
    })
    .await;
    let (doc_id, review_id) = app.pending_review().await;
    let key = app.lock_key_review(&review_id);
    let stale = app
        .approve_paused(&review_id, PAUSE_AFTER_LOCK_HEADER, 2000, true)
        .send();
    let newer = async {
        taken_then_expired(&app.redis, &key).await;
        let r = app
            .reject(&review_id, &app.token(REVIEWER2, &[Role::Reviewer]))
            .await;
        assert_eq!(r.status(), StatusCode::OK, "the next holder proceeds");
        let v: Transition = r.json().await.unwrap();
        v
    };
    let (stale, won) = tokio::join!(stale, newer);
    expect_error(stale.unwrap(), StatusCode::CONFLICT, "LOCK_LOST").await;
    assert_eq!(won.document.status, "REJECTED");
    let (status, version, fence) = state_of(&app, &doc_id).await;
    assert_eq!((status.as_str(), version), ("REJECTED", 3));
    assert!(
        fence.is_some(),
        "the newer holder's fencing token is stored"
    );
    app.outbox_drained(Duration::from_secs(10)).await;
    let m = app.mongo_doc(&doc_id).await.unwrap();
    assert_eq!(
        (m.get_str("status").unwrap(), m.get_i64("version").unwrap()),
        ("REJECTED", 3)
    );
    let decisions = app.count("SELECT count(*) FROM outbox WHERE event_type IN ('document.approved', 'document.rejected')").await;
    assert_eq!(decisions, 1);
    app.finish().await;
}

/// A frozen holder pauses while holding the row locks; its lease expires; the next holder
/// waits on the row lock; the first wakes, finds its lease gone and rolls back; the next
/// holder commits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_paused_inside_its_transaction_rolls_back() {
    let app = spawn_app_with(AppOptions {
        lock_ttl_ms: 500,
        ..Default::default()
    })
    .await;
    let (doc_id, review_id) = app.pending_review().await;
    let key = app.lock_key_review(&review_id);
    let stale = app
        .approve_paused(&review_id, PAUSE_BEFORE_COMMIT_HEADER, 1200, true)
        .send();
    let newer = async {
        taken_then_expired(&app.redis, &key).await;
        app.reject(&review_id, &app.token(REVIEWER2, &[Role::Reviewer]))
            .await
    };
    let (stale, newer) = tokio::join!(stale, newer);
    expect_error(stale.unwrap(), StatusCode::CONFLICT, "LOCK_LOST").await;
    assert_eq!(newer.status(), StatusCode::OK);
    let (status, version, _) = state_of(&app, &doc_id).await;
    assert_eq!((status.as_str(), version), ("REJECTED", 3));
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_flushed_between_transitions_then_a_stale_holder_is_still_refused() {
    let own = OwnRedis::start().await;
    let app = spawn_app_with(AppOptions {
        redis_url: Some(own.url()),
        lock_ttl_ms: 500,
        ..Default::default()
    })
    .await;
    let client = redis::Client::open(own.url()).unwrap();
    let (doc_id, review_id) = app.pending_review().await;
    let (_, _, fence_after_submit) = state_of(&app, &doc_id).await;
    redis_cmd(&client, &["FLUSHALL"]).await;
    // The next transition succeeds under a fresh lock, with a larger fencing token.
    let r = app.reject(&review_id, &app.reviewer()).await;
    assert_eq!(r.status(), StatusCode::OK);
    // The reject's token is the review lock's, kept on the review (each lock has its own
    // counter); after the FLUSHALL it comes from the time floor, above the earlier one.
    let fence_after_reject: Option<i64> =
        sqlx::query_scalar("SELECT fence_token FROM reviews WHERE id = $1::uuid")
            .bind(&review_id)
            .fetch_one(&app.pg)
            .await
            .unwrap();
    assert!(
        fence_after_reject > fence_after_submit,
        "{fence_after_reject:?} > {fence_after_submit:?}"
    );
    // Resubmit, then a frozen holder, a FLUSHALL while it sleeps, and a newer holder.
    let r = app
        .post(
            &format!("/api/v1/documents/{doc_id}/submit"),
            &app.author(),
            json!({}),
        )
        .await;
    let second: Value = r.json().await.unwrap();
    let review2 = second["review"]["id"].as_str().unwrap().to_string();
    let key = app.lock_key_review(&review2);
    let stale = app
        .approve_paused(&review2, PAUSE_AFTER_LOCK_HEADER, 1500, true)
        .send();
    let newer = async {
        wait_for(
            "the first holder to take the lock",
            Duration::from_secs(5),
            || async { redis_get(&client, &key).await.map(|_| ()) },
        )
        .await;
        redis_cmd(&client, &["FLUSHALL"]).await; // the counter and the lock are gone
        app.reject(&review2, &app.token(REVIEWER2, &[Role::Reviewer]))
            .await
    };
    let (stale, newer) = tokio::join!(stale, newer);
    assert_eq!(newer.status(), StatusCode::OK);
    expect_error(stale.unwrap(), StatusCode::CONFLICT, "LOCK_LOST").await;
    let (status, version, _) = state_of(&app, &doc_id).await;
    assert_eq!((status.as_str(), version), ("REJECTED", 5));
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_restarted_between_transitions() {
    let mut own = OwnRedis::start().await;
    let port = own.port;
    let app = spawn_app_with(AppOptions {
        redis_url: Some(own.url()),
        ..Default::default()
    })
    .await;
    let (doc_id, review_id) = app.pending_review().await;
    own.kill();
    let _restarted = OwnRedis::start_on(port).await;
    let r = app.approve(&review_id, &app.reviewer()).await;
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap());
    let (status, version, _) = state_of(&app, &doc_id).await;
    assert_eq!((status.as_str(), version), ("APPROVED", 3));
    app.finish().await;
}

/// The fence counters under `app`'s prefix.
async fn fence_counters(app: &TestApp) -> Vec<String> {
    let mut c = app.redis_conn().await;
    redis::cmd("KEYS")
        .arg(format!("{}lock:*:fence", app.shared.prefix))
        .query_async(&mut c)
        .await
        .unwrap()
}

/// The fence counters of `reviews` locked since `started`, each kept `lifetime` (max_hold +
/// ttl) from its acquire: all there while less than `lifetime` has passed since `started`
/// (after that the first may be gone, so the count is not asserted), and each one still
/// there expiring within `lifetime`.
async fn fences_expire_within(app: &TestApp, reviews: usize, started: Instant, lifetime: Duration) {
    let seen = fence_counters(app).await;
    if started.elapsed() < lifetime {
        assert_eq!(seen.len(), reviews, "one fence counter per locked review");
    }
    assert!(seen.len() <= reviews, "{seen:?}");
    let mut c = app.redis_conn().await;
    for key in &seen {
        let pttl: i64 = redis::cmd("PTTL")
            .arg(key)
            .query_async(&mut c)
            .await
            .unwrap();
        // -2: expired since it was listed; -1 (no expiry) fails.
        assert!(
            pttl == -2 || (pttl > 0 && pttl <= lifetime.as_millis() as i64),
            "kept max_hold + ttl at most, got {pttl} ms"
        );
    }
}

/// Fence counters live as long as a lease can (max_hold + ttl), not a day: after a burst of
/// transitions and twice the maximum hold time, none is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fence_counters_are_gone_two_max_holds_after_a_burst() {
    let max_hold = Duration::from_millis(1200);
    let app = spawn_app_with(AppOptions {
        lock_ttl_ms: 600,
        configure: Some(Box::new(move |s| s.lock.max_hold = max_hold)),
        ..Default::default()
    })
    .await;
    let reviews: Vec<String> = app.pending_reviews_in_db(20).await;
    let token = app.reviewer();
    let started = Instant::now();
    let burst = reviews.iter().map(|r| app.approve(r, &token));
    for r in futures_util::future::join_all(burst).await {
        assert_eq!(r.status(), StatusCode::OK);
    }
    let done = Instant::now();
    let lifetime = max_hold + Duration::from_millis(600);
    fences_expire_within(&app, reviews.len(), started, lifetime).await;
    let rest = (2 * max_hold).saturating_sub(done.elapsed());
    let left = poll_until(rest, || async {
        fence_counters(&app).await.is_empty().then_some(())
    })
    .await;
    assert!(
        left.is_some(),
        "fence counters left {:?} after the burst: {:?}",
        done.elapsed(),
        fence_counters(&app).await
    );
    app.finish().await;
}

/// Waits until a renewal went through: the lock is held and its watchdog running.
async fn a_renewal(app: &TestApp) {
    wait_for("a renewal", Duration::from_secs(5), || async {
        let n = app.metric("kh_lock_renewals_total").await;
        n.filter(|n| *n >= 1.0)
    })
    .await;
}
