//! The background tasks are supervised: one that panics is logged, counted in
//! `kh_task_restarts_total{task}` and started again after a backoff; at shutdown they are
//! all signalled and joined.

use std::time::Duration;

use kh_review::web::test_hooks::LEAVE_TO_DISPATCHER_HEADER;
use reqwest::StatusCode;
use serde_json::json;

use crate::support::app::spawn_app;
use crate::support::inspect::wait_for;

/// The outbox's publish loop panics (the test hook); the restart is counted, the loop runs
/// again (an approval left to the dispatchers reaches the queue), and stopping the app
/// joins every task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_task_is_counted_restarted_and_joined_at_shutdown() {
    let app = spawn_app().await;
    let (_, review_id) = app.pending_review().await;
    let line = r#"kh_task_restarts_total{task="outbox.publisher"}"#;
    assert_eq!(app.metric(line).await, Some(0.0));
    assert!(app.tasks.faults().panic_once("outbox.publisher"));
    wait_for(
        "the restart to be counted",
        Duration::from_secs(10),
        || async { (app.metric(line).await == Some(1.0)).then_some(()) },
    )
    .await;
    let others = ["outbox.projector", "purger", "redis.prober"];
    for task in others {
        let other = format!(r#"kh_task_restarts_total{{task="{task}"}}"#);
        assert_eq!(app.metric(&other).await, Some(0.0), "{task}");
    }
    let r = app
        .client
        .post(app.url(&format!("/api/v1/reviews/{review_id}/approve")))
        .bearer_auth(app.reviewer())
        .header(LEAVE_TO_DISPATCHER_HEADER, "true")
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let events = app.wait_events(2, Duration::from_secs(15)).await;
    let types: Vec<&str> = events
        .iter()
        .map(|e| e["event_type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["document.submitted", "document.approved"]);
    let tasks = app.tasks.clone();
    assert_eq!(
        tasks.live(),
        9,
        "the two outbox loops, the purger, the prober, the overdue sweeper, the re-verification \
         scheduler, the replay runner, the audit checkpointer, the webhooks' deliverer"
    );
    app.finish().await;
    assert_eq!(
        tasks.live(),
        0,
        "every background task was joined at shutdown"
    );
}
