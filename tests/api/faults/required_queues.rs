//! Required queues (`amqp.required_queues`) on the real RabbitMQ: a required queue deleted
//! while reviewers approve, then declared again. No event is lost for it (every event
//! arrives once it is back), nothing is parked and no attempt is counted, `/readyz` names
//! the queue while it is missing, and the queue bound to the exchange gets each event once
//! (no duplicate at every retry).

use std::cell::RefCell;
use std::collections::HashMap;
use std::time::Duration;

use lapin::options::{BasicGetOptions, QueueDeclareOptions, QueueDeleteOptions};
use lapin::types::FieldTable;
use lapin::Channel;
use reqwest::StatusCode;
use serde_json::Value;

use crate::support::app::{spawn_app_with, AppOptions, TestApp};
use crate::support::inspect::wait_for;

/// The required queue of the app: the test's exchange name with `.required`.
fn required_queue(app: &TestApp) -> String {
    app.settings.amqp.required_queues[0].clone()
}

async fn declare(ch: &Channel, queue: &str) {
    ch.queue_declare(
        queue.into(),
        QueueDeclareOptions::default(),
        FieldTable::default(),
    )
    .await
    .unwrap();
}

/// The event ids now on `queue`, taken off it.
async fn take_ids(ch: &Channel, queue: &str) -> Vec<String> {
    let mut ids = Vec::new();
    while let Some(m) = ch
        .basic_get(queue.into(), BasicGetOptions { no_ack: true })
        .await
        .unwrap()
    {
        let event: Value = serde_json::from_slice(&m.delivery.data).unwrap();
        ids.push(event["event_id"].as_str().unwrap().to_string());
    }
    ids
}

/// Makes `n` documents, submits and approves each; returns how many events that is.
async fn approvals(app: &TestApp, n: usize) -> usize {
    for _ in 0..n {
        app.approved_review().await;
    }
    2 * n
}

/// The events the outbox holds: (event id, published or not).
async fn outbox_events(app: &TestApp) -> HashMap<String, bool> {
    let rows: Vec<(String, bool)> = sqlx::query_as(
        "SELECT event_id::text, done_at IS NOT NULL FROM outbox WHERE routing_key IS NOT NULL",
    )
    .fetch_all(&app.pg)
    .await
    .unwrap();
    rows.into_iter().collect()
}

async fn readyz(app: &TestApp) -> Value {
    let r = app.client.get(app.url("/readyz")).send().await.unwrap();
    assert_eq!(
        r.status(),
        StatusCode::OK,
        "a missing queue is not PostgreSQL"
    );
    r.json().await.unwrap()
}

const NO_ATTEMPT: &str = "SELECT count(*) FROM outbox WHERE attempts > 0 OR parked_at IS NOT NULL";

/// Takes what reaches `queue` into `got` until `done` holds of it.
async fn collect_until(
    app: &TestApp,
    queue: &str,
    got: &RefCell<Vec<String>>,
    what: &str,
    done: impl Fn(&[String]) -> bool,
) {
    wait_for(what, Duration::from_secs(20), || async {
        let more = take_ids(&app.amqp, queue).await;
        let mut got = got.borrow_mut();
        got.extend(more);
        done(&got).then_some(())
    })
    .await;
}

/// Waits until `/readyz` names `queue` as missing: degraded, the queues' check down.
async fn named_missing(app: &TestApp, queue: &str) {
    let missing = wait_for(
        "/readyz to name the queue",
        Duration::from_secs(10),
        || async {
            let r = readyz(app).await;
            (r["checks"]["required_queues"]["missing"][0] == queue).then_some(r)
        },
    )
    .await;
    assert_eq!(missing["status"], "degraded", "{missing}");
    assert_eq!(missing["checks"]["required_queues"]["status"], "down");
}

/// The `during` events made while the queue is missing wait, with no attempt counted.
async fn waiting_without_attempts(app: &TestApp, during: usize) {
    let waiting = outbox_events(app).await;
    let undone = waiting.values().filter(|done| !**done).count();
    assert_eq!(undone, during, "they wait");
    assert_eq!(app.count(NO_ATTEMPT).await, 0, "an outage costs no attempt");
}

/// Each of `all` reached the queue bound to the exchange exactly once: while the required
/// queue was missing, nothing was published anywhere.
async fn bound_queue_got_each_once(app: &TestApp, all: &HashMap<String, bool>) {
    let mut bound: HashMap<String, usize> = HashMap::new();
    for (event, _) in app.take_events().await {
        let id = event["event_id"].as_str().unwrap().to_string();
        *bound.entry(id).or_default() += 1;
    }
    assert_eq!(
        bound.len(),
        all.len(),
        "every event reached the bound queue"
    );
    assert!(bound.values().all(|n| *n == 1), "no duplicates: {bound:?}");
}

async fn queues_up(app: &TestApp) {
    let ready = readyz(app).await;
    let status = &ready["checks"]["required_queues"]["status"];
    assert_eq!(status, "up", "{ready}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_required_queue_deleted_and_recreated_loses_no_event_and_parks_nothing() {
    let app = spawn_app_with(AppOptions {
        configure: Some(Box::new(|s| {
            s.amqp.required_queues = vec![format!("{}.required", s.amqp.exchange)];
        })),
        ..Default::default()
    })
    .await;
    let queue = required_queue(&app);
    declare(&app.amqp, &queue).await;
    let before = approvals(&app, 2).await;
    let got = RefCell::new(Vec::new());
    let what = "the events before the outage";
    collect_until(&app, &queue, &got, what, |got| got.len() >= before).await;
    queues_up(&app).await;

    // The consumer's queue goes away (a redeploy) while reviewers go on approving.
    app.amqp
        .queue_delete(queue.as_str().into(), QueueDeleteOptions::default())
        .await
        .unwrap();
    named_missing(&app, &queue).await;
    let during = approvals(&app, 3).await;
    waiting_without_attempts(&app, during).await;

    declare(&app.amqp, &queue).await;
    let all = outbox_events(&app).await;
    let what = "every event on the queue once it is back";
    collect_until(&app, &queue, &got, what, |got| {
        all.keys().all(|id| got.contains(id))
    })
    .await;
    app.outbox_drained(Duration::from_secs(10)).await;
    assert_eq!(all.len(), before + during);
    assert_eq!(app.count(NO_ATTEMPT).await, 0, "nothing parked, no attempt");
    bound_queue_got_each_once(&app, &all).await;
    queues_up(&app).await;
    app.amqp
        .queue_delete(queue.as_str().into(), QueueDeleteOptions::default())
        .await
        .unwrap();
    app.finish().await;
}
