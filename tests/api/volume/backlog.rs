//! Backlogs: other documents' undelivered events never hold back a fresh approval's event,
//! and a broker that is down is retried at a bounded rate however many rows wait.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use lapin::options::BasicConsumeOptions;
use lapin::types::FieldTable;
use lapin::BasicProperties;
use reqwest::StatusCode;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::support::app::{spawn_app, spawn_app_with, AppOptions, TestApp};
use crate::support::events::conforming;
use crate::support::inspect::wait_for;
use kh_review::web::test_hooks::LEAVE_TO_DISPATCHER_HEADER;
use kh_review_testkit::proxy::Proxy;
use kh_review_testkit::stores::amqp_url;

/// `n` other approved documents, each with one undelivered `document.approved` row: an
/// outage's leftovers, due now and claimed by no one.
async fn backlog(app: &TestApp, n: usize) {
    let documents = app.documents_in_db(n, "APPROVED", 3).await;
    sqlx::query(
        "WITH e AS (SELECT gen_random_uuid() AS event_id, d AS id FROM unnest($1::uuid[]) AS d) \
         INSERT INTO outbox (event_id, document_id, document_version, event_type, routing_key, payload) \
         SELECT event_id, id, 3, 'document.approved', 'document.approved', \
                jsonb_build_object('event_id', event_id, 'event_type', 'document.approved', \
                  'occurred_at', now(), 'document_id', id, 'review_id', NULL, \
                  'document_version', 3, 'actor_id', 'someone', \
                  'data', jsonb_build_object('title', 'Seeded', 'comment', NULL, \
                                             'replaced_version', NULL)) FROM e",
    )
    .bind(&documents)
    .execute(&app.pg)
    .await
    .unwrap();
}

/// What the listener saw: when each review's event arrived, how many others did, and the
/// reviews' messages themselves (checked against `/asyncapi.json` once all are in; the
/// backlog's rows are the test's own, written by SQL: events of the schema without a review).
type Seen = (
    HashMap<Uuid, Instant>,
    usize,
    Vec<(Vec<u8>, BasicProperties)>,
);

/// Notes when each review's event reaches the test's queue, and counts the others.
fn listen(mut consumer: lapin::Consumer) -> Arc<Mutex<Seen>> {
    let seen = Arc::new(Mutex::new((HashMap::new(), 0, Vec::new())));
    let noted = seen.clone();
    tokio::spawn(async move {
        while let Some(Ok(delivery)) = consumer.next().await {
            let at = Instant::now();
            let body: Value = serde_json::from_slice(&delivery.data).unwrap();
            let mut seen = noted.lock().unwrap();
            match body["review_id"].as_str().and_then(|s| s.parse().ok()) {
                Some(review) => {
                    seen.0.insert(review, at);
                    seen.2
                        .push((delivery.data.clone(), delivery.properties.clone()));
                }
                None => seen.1 += 1,
            }
        }
    });
    seen
}

/// With 20,000 undelivered rows of other documents, the time from an approval's 200 to its
/// event on the queue stays under a second (p50): fresh events do not queue behind old ones,
/// whether the request delivers its event or leaves it to the background dispatcher (which
/// takes the newest due rows along with the oldest).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fresh_event_never_waits_behind_other_documents_backlog() {
    let app = spawn_app().await;
    let reviews = app.pending_reviews_in_db(20).await;
    let consume = BasicConsumeOptions {
        no_ack: true,
        ..Default::default()
    };
    let consumer = app.amqp.basic_consume(
        app.shared.queue.as_str().into(),
        "backlog".into(),
        consume,
        FieldTable::default(),
    );
    let seen = listen(consumer.await.unwrap());
    backlog(&app, 20_000).await;
    let mut replied = HashMap::new();
    for (i, review) in reviews.iter().enumerate() {
        // Half the requests deliver their own events; the other half leave them to the
        // background dispatcher, as while inline delivery is paused after a failure.
        let leave = if i % 2 == 0 { "true" } else { "false" };
        let r = app
            .client
            .post(app.url(&format!("/api/v1/reviews/{review}/approve")))
            .bearer_auth(app.reviewer())
            .header(LEAVE_TO_DISPATCHER_HEADER, leave)
            .json(&json!({}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        replied.insert(review.parse::<Uuid>().unwrap(), Instant::now());
    }
    assert!(
        app.undelivered().await > 10_000,
        "the backlog was still there"
    );
    wait_for("every event", Duration::from_secs(120), || async {
        let seen = seen.lock().unwrap();
        (seen.0.len() == reviews.len() && seen.1 == 20_000).then_some(())
    })
    .await;
    let arrived = seen.lock().unwrap().0.clone();
    for (data, props) in &seen.lock().unwrap().2 {
        conforming(&app.settings, data, props);
    }
    let mut late: Vec<f64> = replied
        .iter()
        .map(|(review, at)| arrived[review].saturating_duration_since(*at).as_secs_f64())
        .collect();
    late.sort_by(f64::total_cmp);
    let p50 = late[late.len() / 2];
    assert!(
        p50 < 1.0,
        "p50 from 200 to event was {p50:.3} s behind the backlog"
    );
    app.finish().await;
}

/// `kh_publish_failures_total` off the app's `/metrics`.
async fn publish_failures(app: &TestApp) -> u64 {
    let text = app.client.get(app.url("/metrics")).send().await.unwrap();
    let text = text.text().await.unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("kh_publish_failures_total "))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .expect("kh_publish_failures_total in /metrics") as u64
}

/// RabbitMQ refusing connections while 1,000 events wait: the dispatcher tries a few times
/// a second at most (not once per row, and never in a tight loop), counts no attempt against
/// the rows (the broker being down says nothing about them), and delivers every one of them
/// once RabbitMQ is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_broker_is_retried_at_a_bounded_rate_whatever_the_backlog() {
    let (proxy, via_proxy) = Proxy::in_front_of(&amqp_url()).await;
    proxy.cut();
    let app = spawn_app_with(AppOptions {
        amqp_url: Some(via_proxy),
        ..Default::default()
    })
    .await;
    backlog(&app, 1_000).await;
    wait_for(
        "the backlog's projections",
        Duration::from_secs(60),
        || async {
            let left = app
                .count("SELECT count(*) FROM outbox WHERE projected_at IS NULL")
                .await;
            (left == 0).then_some(())
        },
    )
    .await;
    // Four more attempts: back to back if nothing bounded the rate, over a second or more
    // while the pass waits between them (100 ms doubling to 1 s here).
    let (before, started) = (publish_failures(&app).await, Instant::now());
    wait_for(
        "four more publish attempts",
        Duration::from_secs(30),
        || async { (publish_failures(&app).await >= before + 4).then_some(()) },
    )
    .await;
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(1),
        "four publish attempts in {took:?} while RabbitMQ refused"
    );
    let counted = app
        .count("SELECT count(*) FROM outbox WHERE attempts > 0")
        .await;
    assert_eq!(counted, 0, "a refused connection counted against rows");
    proxy.restore();
    app.outbox_drained(Duration::from_secs(30)).await;
    app.finish().await;
}
