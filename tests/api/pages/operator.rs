//! The console's operator page in a real headless Chromium: dependencies with their
//! circuit breakers, delivery figures, parked events with retry and skip; and Redis going
//! away under a reviewer's approve.

use std::time::Duration;

use kh_review::web::auth::Role;

use crate::faults::parked::{parked_submission, with_max_attempts, ADMIN};
use crate::support::app::{spawn_app_with, AppOptions};
use crate::support::browser::{Browser, Window};
use crate::support::console::{fits_and_is_labelled, signed_in, text};
use crate::support::own_redis::OwnRedis;

/// Waits until the page shows `dependency` in `status` with its breaker `breaker` (the page
/// reloads itself every 5 s).
async fn shows(b: &Browser, dependency: &str, status: &str, breaker: &str) {
    let row = format!(
        "tr[data-dependency='{dependency}'][data-status='{status}'][data-breaker='{breaker}']"
    );
    b.wait_until(
        &format!("{dependency} {status}, breaker {breaker}"),
        &format!("return document.querySelector(\"{row}\");"),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parked_events_are_retried_and_skipped_from_the_operator_page() {
    let app = spawn_app_with(with_max_attempts(1)).await;
    let (doc, id) = parked_submission(&app, 1).await;
    let admin = app.token(ADMIN, &[Role::Admin]);
    for window in [Window::PHONE, Window::DESKTOP] {
        let b = signed_in(&app, &admin, window).await;
        b.goto("/console/operator").await;
        b.wait_for(&format!("tr[data-row='{id}']")).await;
        for dep in ["PostgreSQL", "RabbitMQ"] {
            shows(&b, dep, "up", "").await;
        }
        for dep in ["Redis", "MongoDB"] {
            shows(&b, dep, "up", "closed").await;
        }
        assert_eq!(text(&b, "#parked-count").await, "1");
        let undelivered = text(&b, "#undelivered").await;
        assert_eq!(
            undelivered, "2",
            "the parked submission and the approval behind it"
        );
        fits_and_is_labelled(&b, "operator").await;
        b.screenshot(&format!("console-operator-parked-{}", window.width))
            .await;
        b.close().await;
    }
    let b = signed_in(&app, &admin, Window::DESKTOP).await;
    b.goto("/console/operator").await;
    b.click(&format!(
        "tr[data-row='{id}'] button[aria-label='Retry event {id}']"
    ))
    .await;
    b.wait_for_text(&format!("Event {id} is back in line."))
        .await;
    let audited = format!(
        "SELECT count(*) FROM outbox_admin_actions WHERE outbox_id = {id} AND action = 'retry' AND actor_id = '{ADMIN}'"
    );
    assert_eq!(app.count(&audited).await, 1);
    // Still unroutable: parked again after its one attempt, and the page shows it again.
    b.wait_for(&format!("tr[data-row='{id}']")).await;
    b.click(&format!(
        "tr[data-row='{id}'] button[aria-label='Skip event {id}']"
    ))
    .await;
    b.client().accept_alert().await.expect("skip asks first");
    b.wait_for_text(&format!("Event {id} was skipped")).await;
    b.screenshot("console-operator-skipped").await;
    // The approval it held back goes out.
    let events = app.wait_events(1, Duration::from_secs(15)).await;
    assert_eq!(events[0]["event_type"], "document.approved");
    assert_eq!(events[0]["document_id"], doc.as_str());
    b.close().await;
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_redis_down_approving_works_and_the_operator_page_says_so() {
    let mut redis = OwnRedis::start().await;
    let app = spawn_app_with(AppOptions {
        redis_url: Some(redis.url()),
        breaker_open_ms: 60_000,
        ..Default::default()
    })
    .await;
    let (doc, _) = app.pending_review().await;
    let admin = app.token(ADMIN, &[Role::Admin]);
    let operator = signed_in(&app, &admin, Window::DESKTOP).await;
    operator.goto("/console/operator").await;
    shows(&operator, "Redis", "up", "closed").await;

    redis.kill();
    let reviewer = signed_in(&app, &app.reviewer(), Window::DESKTOP).await;
    reviewer.goto(&format!("/console/documents/{doc}")).await;
    reviewer.click("#approve").await;
    reviewer.wait_for("#flash").await;
    assert_eq!(text(&reviewer, "#doc-status").await, "APPROVED");
    reviewer.screenshot("console-approved-redis-down").await;
    let row_lock_only = format!(
        "SELECT count(*) FROM audit_log WHERE document_id = '{doc}' AND lock_mode = 'row_lock_only'"
    );
    assert_eq!(
        app.count(&row_lock_only).await,
        1,
        "decided on the row lock alone"
    );

    shows(&operator, "Redis", "down", "open").await;
    assert_eq!(text(&operator, "#ready").await, "degraded");
    operator.screenshot("console-operator-redis-down").await;
    let events = app.wait_events(2, Duration::from_secs(15)).await;
    let types: Vec<_> = events
        .iter()
        .map(|e| e["event_type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["document.submitted", "document.approved"]);
    reviewer.close().await;
    operator.close().await;
    app.finish().await;
}
