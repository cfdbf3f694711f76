//! Redis unreachable, hung, or stopped mid-test: requests go on under the row lock alone.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use reqwest::StatusCode;

use crate::routes::concurrency::{exactly_one_winner, one_decision_everywhere, storm, timed_storm};
use crate::support::app::{spawn_app_with, AppOptions, TestApp};
use crate::support::own_redis::OwnRedis;
use kh_review_testkit::proxy::{blackhole, dead_port};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_on_a_dead_port_degrades_to_the_row_lock() {
    let app = spawn_app_with(AppOptions {
        redis_url: Some(format!("redis://127.0.0.1:{}", dead_port())),
        ..Default::default()
    })
    .await;
    let (doc_id, review_id) = app.pending_review().await;
    let winner = exactly_one_winner(&storm(&app, &review_id, 20).await);
    one_decision_everywhere(&app, &doc_id, &winner).await;
    let modes = app
        .count("SELECT count(*) FROM audit_log WHERE lock_mode = 'row_lock_only'")
        .await;
    assert_eq!(
        modes, 2,
        "submit and the decision ran without the outer lock"
    );
    let r = app.client.get(app.url("/readyz")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let v: serde_json::Value = r.json().await.unwrap();
    assert_eq!(v["status"], "degraded");
    assert_eq!(v["checks"]["redis"]["status"], "down");
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_redis_costs_one_timeout_not_one_per_request() {
    let (port, _stop) = blackhole().await;
    let timeout_ms = 1500;
    let app = spawn_app_with(AppOptions {
        redis_url: Some(format!("redis://127.0.0.1:{port}")),
        redis_timeout_ms: timeout_ms,
        breaker_open_ms: 30_000,
        ..Default::default()
    })
    .await;
    // The first request pays the timeout and opens the breaker.
    let (doc_id, review_id) = app.pending_review().await;
    let timed = timed_storm(&app, &review_id, 20).await;
    let mut storm_latencies: Vec<Duration> = timed.iter().map(|t| t.2).collect();
    storm_latencies.sort();
    let storm_p50 = storm_latencies[storm_latencies.len() / 2];
    assert!(
        storm_p50 < Duration::from_millis(timeout_ms / 2),
        "p50 of 20 concurrent decisions {storm_p50:?} should be far below the Redis timeout of {timeout_ms} ms"
    );
    let results: Vec<_> = timed.into_iter().map(|(s, v, _)| (s, v)).collect();
    let winner = exactly_one_winner(&results);
    // Sequential requests while the breaker is open: each one must skip Redis.
    let mut latencies = Vec::new();
    for _ in 0..10 {
        let t = Instant::now();
        let doc = app.create_document("x", "y").await;
        let id = doc.id;
        let r = app
            .post(
                &format!("/api/v1/documents/{id}/submit"),
                &app.author(),
                serde_json::json!({}),
            )
            .await;
        assert_eq!(r.status(), StatusCode::CREATED);
        latencies.push(t.elapsed());
    }
    latencies.sort();
    let p50 = latencies[latencies.len() / 2];
    assert!(
        p50 < Duration::from_millis(timeout_ms / 2),
        "p50 {p50:?} should be far below the Redis timeout of {timeout_ms} ms (circuit breaker open)"
    );
    one_decision_everywhere(&app, &doc_id, &winner).await;
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_stopped_mid_test() {
    let mut redis = OwnRedis::start().await;
    let app = spawn_app_with(AppOptions {
        redis_url: Some(format!("redis://127.0.0.1:{}", redis.port)),
        ..Default::default()
    })
    .await;
    app.approved_review().await;
    assert_eq!(
        app.count("SELECT count(*) FROM audit_log WHERE lock_mode = 'redis'")
            .await,
        2,
        "the outer lock was used while Redis was up"
    );
    redis.kill();
    let (doc_id, review_id) = app.pending_review().await;
    let winner = exactly_one_winner(&storm(&app, &review_id, 20).await);
    app.outbox_drained(Duration::from_secs(15)).await;
    let _ = app.take_events().await; // events of the first document
    let (s, v): (String, i64) =
        sqlx::query_as("SELECT status, version FROM documents WHERE id = $1::uuid")
            .bind(&doc_id)
            .fetch_one(&app.pg)
            .await
            .unwrap();
    assert_eq!(s, winner.document.status);
    assert_eq!(v, 3);
    assert_eq!(
        app.count("SELECT count(*) FROM audit_log WHERE lock_mode = 'row_lock_only'")
            .await,
        2,
        "after Redis stopped, submit and decision ran on the row lock alone"
    );
    app.finish().await;
}

/// `n` approvals of one review at once, each pausing `pause_ms` before its COMMIT: each
/// one's status, body, `Retry-After` and the instant its answer was read.
async fn paused_storm(
    app: &TestApp,
    review_id: &str,
    n: usize,
    pause_ms: u64,
) -> Vec<(StatusCode, serde_json::Value, Option<String>, Instant)> {
    use kh_review::web::test_hooks::PAUSE_BEFORE_COMMIT_HEADER;
    let calls = (0..n).map(|_| async move {
        let r = app
            .approve_paused(review_id, PAUSE_BEFORE_COMMIT_HEADER, pause_ms, false)
            .send()
            .await
            .unwrap();
        let retry_after = r.headers().get("retry-after");
        let retry_after = retry_after.map(|h| h.to_str().unwrap().to_string());
        let status = r.status();
        let v: serde_json::Value = r.json().await.unwrap();
        (status, v, retry_after, Instant::now())
    });
    futures_util::future::join_all(calls).await
}

/// Until `done`: the most pooled connections in use, and the most sessions of the
/// database waiting on a lock (the test's own connection reads pg_stat_activity), at any
/// sample.
async fn most_in_use_and_waiting(app: &TestApp, done: &AtomicBool) -> (f64, i64) {
    let in_use = r#"kh_db_pool_connections{state="in_use"}"#;
    let (mut most, mut waiting) = (0.0f64, 0i64);
    while !done.load(Ordering::Relaxed) {
        most = most.max(app.metric(in_use).await.expect("the pool gauge"));
        let now: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity \
             WHERE datname = current_database() AND wait_event_type = 'Lock'",
        )
        .fetch_one(&app.pg)
        .await
        .unwrap();
        waiting = waiting.max(now);
    }
    (most, waiting)
}

/// Redis down, 50 approvals of one review at once, each pausing 1.5 s before its COMMIT (so
/// that the first holds its row lock while the others arrive): one goes on to the row
/// lock, the 49 others get `409 LOCK_NOT_ACQUIRED` with `Retry-After: 1` at once instead of
/// each holding a pooled connection while it waits on the row lock. No session of the
/// database ever waits on a lock, the pool's connections in use stay at a few all along,
/// and another review's approval and a create go through meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_redis_down_duplicates_are_refused_at_once_and_hold_no_connection() {
    let app = spawn_app_with(AppOptions {
        redis_url: Some(format!("redis://127.0.0.1:{}", dead_port())),
        // The sampling below reads /metrics in a loop: its outbox counts at most once a second.
        probe_cache_ms: 1000,
        // Every connection in use is one of the requests' (each delivers its own event).
        run_dispatcher: false,
        ..Default::default()
    })
    .await;
    let (doc_id, review_id) = app.pending_review().await;
    let (_, other_review) = app.pending_review().await;
    let done = AtomicBool::new(false);
    let sample = most_in_use_and_waiting(&app, &done);
    let storm = async {
        let results = paused_storm(&app, &review_id, 50, 1500).await;
        done.store(true, Ordering::Relaxed);
        results
    };
    let others = async {
        // While the winner holds its row lock: other documents' writes go through.
        let started = Instant::now();
        let approved = app.approve(&other_review, &app.reviewer()).await.status();
        let created = app.create_document("Another", "Unrelated.").await;
        (approved, created, started.elapsed())
    };
    let ((most_in_use, most_waiting), results, (other_approved, _, others_took)) =
        tokio::join!(sample, storm, others);
    eprintln!(
        "50 approvals of one review with Redis down: at most {most_in_use} pool connections \
         in use, {most_waiting} sessions waiting on a lock"
    );
    let winners: Vec<_> = results.iter().filter(|r| r.0 == StatusCode::OK).collect();
    assert_eq!(winners.len(), 1, "exactly one approval wins");
    let won_at = winners[0].3;
    for (status, v, retry_after, answered_at) in results.iter().filter(|r| r.0 != StatusCode::OK) {
        assert_eq!(*status, StatusCode::CONFLICT, "{v}");
        assert_eq!(v["code"], "LOCK_NOT_ACQUIRED", "{v}");
        assert_eq!(retry_after.as_deref(), Some("1"), "{v}");
        // At once: while the winner still held its row lock (it pauses 1.5 s before its
        // COMMIT), not after waiting for it.
        assert!(
            *answered_at < won_at,
            "a duplicate was answered {:?} after the winner",
            answered_at.duration_since(won_at)
        );
    }
    assert_eq!(other_approved, StatusCode::OK, "another review's approval");
    assert!(others_took < Duration::from_secs(3), "{others_took:?}");
    // Without the local gate each duplicate would hold a connection waiting on the
    // winner's row lock: 29 sessions waiting, and the whole pool (30) in use.
    assert_eq!(
        most_waiting, 0,
        "sessions waited on a lock during the storm: a duplicate went on to the row lock"
    );
    // The winner's transaction, the other writes' (one at a time) and the grouped mark of
    // their events, a refresh of the outbox counts of /metrics (two), and connections
    // released but not yet back among the idle ones (the pool counts them in use until its
    // release task has run, later on a loaded machine): a handful, never the pool.
    assert!(
        most_in_use <= 8.0,
        "{most_in_use} pooled connections in use at once during the storm"
    );
    let modes = app
        .count("SELECT count(*) FROM audit_log WHERE lock_mode = 'row_lock_only' AND action = 'approve'")
        .await;
    assert_eq!(modes, 2, "the two approvals ran on the row lock alone");
    app.outbox_drained(Duration::from_secs(15)).await;
    let version = app.document_version_in_db(&doc_id).await;
    assert_eq!(version, 3, "one submit, one approval");
    app.finish().await;
}
