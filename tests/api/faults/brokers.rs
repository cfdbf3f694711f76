//! RabbitMQ as operations run it: several nodes (the first one down), and an archive queue
//! that already exists with other arguments (a quorum queue, another length bound).

use std::time::Duration;

use kh_review::outbox::QueueType;
use lapin::options::{BasicGetOptions, QueueDeclareOptions, QueueDeleteOptions};
use lapin::types::{AMQPValue, FieldTable};
use lapin::{Channel, Connection};
use serde_json::Value;

use crate::support::app::{spawn_app_with, AppOptions, TestApp};
use crate::support::events::conforming;
use kh_review_testkit::amqp::amqp_connection;
use kh_review_testkit::proxy::{blackhole, dead_port, Proxy};

async fn channel() -> (Connection, Channel) {
    let conn = amqp_connection().await.unwrap_or_else(|e| panic!("{e:#}"));
    let ch = conn.create_channel().await.unwrap();
    (conn, ch)
}

fn types(events: &[Value]) -> Vec<&str> {
    events
        .iter()
        .map(|e| e["event_type"].as_str().unwrap())
        .collect()
}

/// A test app whose archive queue is `queue`, declared as `wanted` if it does not exist.
async fn app_with_archive(queue: &str, wanted: QueueType) -> TestApp {
    let queue = queue.to_string();
    spawn_app_with(AppOptions {
        configure: Some(Box::new(move |s| {
            s.amqp.bind_queue = queue.clone();
            s.amqp.bind_queue_type = wanted;
        })),
        ..Default::default()
    })
    .await
}

fn args(pairs: &[(&str, AMQPValue)]) -> FieldTable {
    let mut t = FieldTable::default();
    for (k, v) in pairs {
        t.insert((*k).into(), v.clone());
    }
    t
}

fn durable() -> QueueDeclareOptions {
    QueueDeclareOptions {
        durable: true,
        ..Default::default()
    }
}

/// Whether declaring `queue` with `with` is accepted (a fresh channel: a refusal closes it).
async fn declares_as(queue: &str, with: FieldTable) -> bool {
    let (_conn, ch) = channel().await;
    ch.queue_declare(queue.into(), durable(), with)
        .await
        .is_ok()
}

/// Every event now on `queue`, each checked against `/asyncapi.json`.
async fn drain(app: &TestApp, ch: &Channel, queue: &str) -> Vec<Value> {
    let mut out = Vec::new();
    while let Some(m) = ch
        .basic_get(queue.into(), BasicGetOptions { no_ack: true })
        .await
        .unwrap()
    {
        let (data, props) = (&m.delivery.data, &m.delivery.properties);
        out.push(conforming(&app.settings, data, props));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_are_published_through_the_second_node_when_the_first_is_down() {
    let dead = format!("amqp://guest:guest@127.0.0.1:{}/%2f", dead_port());
    let app = spawn_app_with(AppOptions {
        configure: Some(Box::new(move |s| {
            let live = s.amqp.urls[0].clone();
            s.amqp.urls = vec![dead.clone().into(), live];
        })),
        ..Default::default()
    })
    .await;
    app.approved_review().await;
    let events = app.wait_events(2, Duration::from_secs(10)).await;
    assert_eq!(types(&events), ["document.submitted", "document.approved"]);
    app.finish().await;
}

/// The first node accepts TCP and never answers (a node that drops packets, not one that
/// refuses): it costs one connect timeout, not the publish, so the event goes out through
/// the second node, and `/readyz` (capped at 2 s) still answers that RabbitMQ is up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_first_node_is_given_up_on_within_the_publish_deadline() {
    let (silent, _stop) = blackhole().await;
    let silent = format!("amqp://guest:guest@127.0.0.1:{silent}/%2f");
    let app = spawn_app_with(AppOptions {
        configure: Some(Box::new(move |s| {
            let live = s.amqp.urls[0].clone();
            s.amqp.urls = vec![silent.clone().into(), live];
            s.amqp.connect_timeout = Duration::from_millis(500);
        })),
        ..Default::default()
    })
    .await;
    app.approved_review().await;
    let events = app.wait_events(2, Duration::from_secs(10)).await;
    assert_eq!(types(&events), ["document.submitted", "document.approved"]);
    let ready: Value = app.public_json("/readyz").await;
    assert_eq!(ready["checks"]["rabbitmq"]["status"], "up", "{ready}");
    app.finish().await;
}

/// The node the service is connected to stops forwarding without closing (a partition):
/// the unconfirmed publish times out, and the reconnect starts at the next node rather than
/// knocking at the silent one first. The event is delivered, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connected_node_that_goes_silent_is_left_for_the_next() {
    let live = kh_review_testkit::stores::amqp_url();
    let (proxy, through) = Proxy::in_front_of(&live).await;
    let app = spawn_app_with(AppOptions {
        configure: Some(Box::new(move |s| {
            s.amqp.urls = vec![through.clone().into(), live.clone().into()];
        })),
        ..Default::default()
    })
    .await;
    app.approved_review().await;
    app.wait_events(2, Duration::from_secs(10)).await;
    proxy.freeze();
    let frozen = std::time::Instant::now();
    app.approved_review().await;
    let events = app.wait_events(2, Duration::from_secs(15)).await;
    println!(
        "node 1 silent: its events were published through node 2 {:.1} s after the freeze",
        frozen.elapsed().as_secs_f64()
    );
    assert_eq!(types(&events), ["document.submitted", "document.approved"]);
    app.outbox_drained(Duration::from_secs(10)).await;
    proxy.cut();
    app.finish().await;
}

/// The archive queue exists already, made by operations with `existing`; the service is
/// configured for `wanted`. Events must still be published, and land in that queue.
async fn publishes_to_an_archive_made_elsewhere(existing: FieldTable, wanted: QueueType) {
    let archive = format!("kh.test.archive.{}", uuid::Uuid::new_v4().simple());
    let (_conn, ch) = channel().await;
    ch.queue_declare(archive.as_str().into(), durable(), existing)
        .await
        .unwrap();
    let app = app_with_archive(&archive, wanted).await;
    app.approved_review().await;
    app.outbox_drained(Duration::from_secs(10)).await;
    let archived = drain(&app, &ch, &archive).await;
    assert_eq!(
        types(&archived),
        ["document.submitted", "document.approved"],
        "published to the archive"
    );
    assert_eq!(
        app.take_events().await.len(),
        2,
        "and to the consumers' queue"
    );
    ch.queue_delete(archive.as_str().into(), QueueDeleteOptions::default())
        .await
        .unwrap();
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_archive_queue_made_as_a_quorum_queue_is_used_as_it_is() {
    let quorum = args(&[("x-queue-type", AMQPValue::LongString("quorum".into()))]);
    publishes_to_an_archive_made_elsewhere(quorum, QueueType::Classic).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_archive_queue_with_another_length_bound_is_used_as_it_is() {
    let shorter = args(&[("x-max-length", AMQPValue::LongLongInt(500))]);
    publishes_to_an_archive_made_elsewhere(shorter, QueueType::Classic).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_archive_queue_is_declared_as_the_configured_type() {
    for wanted in [QueueType::Quorum, QueueType::Classic] {
        let archive = format!("kh.test.archive.{}", uuid::Uuid::new_v4().simple());
        let app = app_with_archive(&archive, wanted).await;
        let (_, review_id) = app.pending_review().await;
        app.outbox_drained(Duration::from_secs(10)).await;
        assert_eq!(app.take_events().await.len(), 1, "{review_id} submitted");
        // A declare with the same arguments is accepted, one with the other type refused.
        let bound = ("x-max-length", AMQPValue::LongLongInt(100_000));
        let same = args(&[
            bound.clone(),
            (
                "x-queue-type",
                AMQPValue::LongString(wanted.as_str().into()),
            ),
        ]);
        let other = match wanted {
            QueueType::Quorum => QueueType::Classic,
            QueueType::Classic => QueueType::Quorum,
        };
        let differs = args(&[
            bound,
            ("x-queue-type", AMQPValue::LongString(other.as_str().into())),
        ]);
        assert!(
            declares_as(&archive, same).await,
            "{archive} is a {} queue",
            wanted.as_str()
        );
        assert!(
            !declares_as(&archive, differs).await,
            "{archive} is no {} queue",
            other.as_str()
        );
        let (_conn, ch) = channel().await;
        ch.queue_delete(archive.as_str().into(), QueueDeleteOptions::default())
            .await
            .unwrap();
        app.finish().await;
    }
}
