//! The replays section of the operator's page in a real headless Chromium: a running
//! replay with its progress bar, events sent and left, rate and expected end, cancelled
//! with its button; then shown among the recent replays.

use std::time::Duration;

use serde_json::json;

use crate::support::app::{spawn_app_with, AppOptions};
use crate::support::browser::Window;
use crate::support::console::{fits_and_is_labelled, signed_in, text};
use crate::support::inspect::wait_for;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_replay_shows_its_progress_and_is_cancelled_from_the_operator_page() {
    let app = spawn_app_with(AppOptions {
        // One event a second: the replay runs while the page is looked at.
        configure: Some(Box::new(|s| s.replay.max_per_sec = 1)),
        ..Default::default()
    })
    .await;
    for _ in 0..4 {
        app.approved_review().await;
    }
    app.outbox_drained(Duration::from_secs(10)).await;
    let queue = app.consumer_queue("page").await;
    let id = app
        .started_replay(json!({"mode": "history", "target_queue": queue}))
        .await;
    wait_for("a first event sent", Duration::from_secs(10), || async {
        (app.replay_state(&id).await["sent"].as_i64() >= Some(1)).then_some(())
    })
    .await;
    let b = signed_in(&app, &app.admin(), Window::PHONE).await;
    b.goto("/console/operator").await;
    let running = format!("div[data-replay='{id}'][data-state='running']");
    b.wait_for(&running).await;
    let bar = b
        .eval_with(
            "const p = document.querySelector(arguments[0] + ' progress'); \
             return p ? [p.max, p.value] : null;",
            vec![json!(running)],
        )
        .await;
    assert_eq!(bar[0], 8, "a bar to the total: {bar}");
    let sent = text(&b, &format!("{running} .replay-sent")).await;
    let left = text(&b, &format!("{running} .replay-left")).await;
    let (sent, left): (i64, i64) = (
        sent.as_str().unwrap().parse().unwrap(),
        left.as_str().unwrap().parse().unwrap(),
    );
    assert!(sent >= 1 && sent + left == 8, "{sent} sent, {left} left");
    assert!(text(&b, &format!("{running} .replay-rate"))
        .await
        .as_str()
        .unwrap()
        .ends_with("events/s"));
    assert!(text(&b, &format!("{running} .replay-end"))
        .await
        .as_str()
        .unwrap()
        .ends_with("UTC"));
    fits_and_is_labelled(&b, "operator with a replay").await;
    b.screenshot("console-operator-replay-running").await;

    b.click(&format!(
        "{running} button[aria-label='Cancel the replay to {queue}']"
    ))
    .await;
    b.client().accept_alert().await.expect("cancel asks first");
    b.wait_for_text(&format!("The replay to {queue} is cancelled"))
        .await;
    assert_eq!(app.replay_state(&id).await["state"], "cancelled");
    b.wait_for(&format!(
        "#finished-replays tr[data-replay='{id}'][data-state='cancelled']"
    ))
    .await;
    b.screenshot("console-operator-replay-cancelled").await;
    b.close().await;
    app.delete_queue(&queue).await;
    app.finish().await;
}
