//! Redis unreachable, hung, or stopped mid-test: requests go on under the row lock alone.

use std::time::{Duration, Instant};

use reqwest::StatusCode;

use crate::routes::concurrency::{exactly_one_winner, one_decision_everywhere, storm, timed_storm};
use crate::support::app::{spawn_app_with, AppOptions};
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
    let (_, first) = app.pending_review().await;
    assert_eq!(
        app.approve(&first, &app.reviewer()).await.status(),
        StatusCode::OK
    );
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
