//! The operator page's charts in a real headless Chromium, under the console's
//! Content-Security-Policy: events published per minute (the figures match the events the
//! test made, and the canvas is drawn), the backlog and parked rows now, and a required
//! queue present, then missing.

use kh_review::web::auth::Role;
use lapin::options::{QueueDeclareOptions, QueueDeleteOptions};
use lapin::types::FieldTable;
use serde_json::{json, Value};
use std::time::Duration;

use crate::faults::parked::ADMIN;
use crate::support::app::{spawn_app_with, AppOptions};
use crate::support::browser::{Browser, Window};
use crate::support::console::{fits_and_is_labelled, signed_in, text};

/// The canvas of `chart`, once uPlot has drawn on it: its size on the page and how many
/// of its pixels are painted.
async fn drawn(b: &Browser, chart: &str) -> Value {
    let script = format!(
        "const c = document.querySelector('#{chart} canvas');
         if (!c || c.width === 0 || c.height === 0) return null;
         const px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
         let painted = 0;
         for (let i = 3; i < px.length; i += 4) if (px[i] > 0) painted++;
         const r = c.getBoundingClientRect();
         return painted > 0 ? {{ width: r.width, height: r.height, painted }} : null;"
    );
    b.wait_until(&format!("{chart} drawn"), &script).await
}

/// What the console says the Content-Security-Policy refused, and the scripts' errors
/// (a failed request of the sign-in, or the favicon's 404, is the network's, not theirs).
async fn complaints(b: &Browser) -> Vec<String> {
    let console = b.console().await;
    let refused = |e: &Value| {
        e["message"]
            .as_str()
            .is_some_and(|m| m.contains("Content Security Policy"))
    };
    console
        .iter()
        .filter(|e| refused(e) || (e["level"] == "SEVERE" && e["source"] != "network"))
        .map(|e| e.to_string())
        .collect()
}

async fn attribute(b: &Browser, css: &str, name: &str) -> Value {
    b.eval_with(
        "const e = document.querySelector(arguments[0]); return e ? e.getAttribute(arguments[1]) : null;",
        vec![json!(css), json!(name)],
    )
    .await
}

/// The page at `window`: both charts drawn, the figures those of the `published` events,
/// nothing waiting, the required `queue` present, no refusal.
async fn charts_shown(b: &Browser, queue: &str, published: i64, window: Window) {
    b.goto("/console/operator").await;
    b.wait_for("#published-chart").await;
    let chart = drawn(b, "published-chart").await;
    assert!(chart["width"].as_f64().unwrap() >= 200.0, "{chart}");
    assert!(chart["height"].as_f64().unwrap() > 0.0, "{chart}");
    drawn(b, "waiting-chart").await;
    let per_minute: Vec<i64> = serde_json::from_str(
        attribute(b, "#published-chart", "data-published")
            .await
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(per_minute.len(), 60, "an hour of minutes");
    assert_eq!(per_minute.iter().sum::<i64>(), published, "{per_minute:?}");
    assert_eq!(
        attribute(b, "#waiting-chart", "data-undelivered").await,
        "0"
    );
    assert_eq!(attribute(b, "#waiting-chart", "data-parked").await, "0");
    b.wait_for("tr[data-dependency='Required queues'][data-status='up']")
        .await;
    let line = format!("li[data-queue='{queue}'][data-state='present']");
    b.wait_for(&line).await;
    fits_and_is_labelled(b, "operator charts").await;
    b.screenshot(&format!("console-operator-charts-{}", window.width))
        .await;
    assert_eq!(
        complaints(b).await,
        Vec::<String>::new(),
        "no CSP refusal, no error"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_page_charts_the_events_published_and_the_required_queue() {
    let app = spawn_app_with(AppOptions {
        configure: Some(Box::new(|s| {
            s.amqp.required_queues = vec![format!("{}.required", s.amqp.exchange)];
        })),
        ..Default::default()
    })
    .await;
    let queue = app.settings.amqp.required_queues[0].clone();
    app.amqp
        .queue_declare(
            queue.as_str().into(),
            QueueDeclareOptions::default(),
            FieldTable::default(),
        )
        .await
        .unwrap();
    for _ in 0..3 {
        app.approved_review().await;
    }
    app.outbox_drained(Duration::from_secs(15)).await;
    let published = app
        .count("SELECT count(*) FROM outbox WHERE published_at IS NOT NULL")
        .await;
    assert_eq!(published, 6, "three submissions and three approvals");
    let admin = app.token(ADMIN, &[Role::Admin]);
    for window in [Window::PHONE, Window::DESKTOP] {
        let b = signed_in(&app, &admin, window).await;
        charts_shown(&b, &queue, published, window).await;
        b.close().await;
    }

    let b = signed_in(&app, &admin, Window::DESKTOP).await;
    b.goto("/console/operator").await;
    drawn(&b, "published-chart").await;
    app.amqp
        .queue_delete(queue.as_str().into(), QueueDeleteOptions::default())
        .await
        .unwrap();
    // The page refreshes itself every 5 s, and draws its charts again each time.
    b.wait_for("tr[data-dependency='Required queues'][data-status='down']")
        .await;
    b.wait_for(&format!("li[data-queue='{queue}'][data-state='missing']"))
        .await;
    assert_eq!(text(&b, "#ready").await, "degraded");
    drawn(&b, "published-chart").await;
    let charts = b
        .eval("return document.querySelectorAll('.uplot').length;")
        .await;
    assert_eq!(charts, 2, "the charts of a replaced fragment are gone");
    b.screenshot("console-operator-queue-missing").await;
    assert_eq!(complaints(&b).await, Vec::<String>::new());
    b.close().await;
    app.finish().await;
}
