//! A consumer in Python reads a published approval with the CloudEvents SDK's RabbitMQ
//! binding (tests/consumers/cloudevents_consumer.py, in the virtualenv that
//! scripts/events_venv.sh installs) and gets every attribute right: id, source, type,
//! subject, time, dataschema, datacontenttype, specversion, the extension attribute
//! khspace (the document's space), and the data.

use std::time::Duration;

use lapin::options::{QueueBindOptions, QueueDeclareOptions, QueueDeleteOptions};
use lapin::types::FieldTable;
use serde_json::{json, Value};

use crate::support::app::{spawn_app, TestApp};
use crate::support::receiver::venv_python;
use kh_review_testkit::stores::amqp_url;

/// A queue of the test's own bound to `document.approved`; deleted when dropped.
struct ApprovalsQueue {
    amqp: lapin::Channel,
    name: String,
}

impl ApprovalsQueue {
    async fn bind(app: &TestApp) -> Self {
        let name = format!("{}.cloudevents", app.shared.queue);
        let q = ApprovalsQueue {
            amqp: app.amqp.clone(),
            name,
        };
        let ch = &app.amqp;
        ch.queue_declare(
            q.name.as_str().into(),
            QueueDeclareOptions::default(),
            FieldTable::default(),
        )
        .await
        .unwrap();
        let exchange = app.shared.exchange.as_str();
        ch.queue_bind(
            q.name.as_str().into(),
            exchange.into(),
            "document.approved".into(),
            QueueBindOptions::default(),
            FieldTable::default(),
        )
        .await
        .unwrap();
        q
    }
}

impl Drop for ApprovalsQueue {
    fn drop(&mut self) {
        let delete = self
            .amqp
            .queue_delete(self.name.as_str().into(), QueueDeleteOptions::default());
        let handle = tokio::runtime::Handle::current();
        let _ = tokio::task::block_in_place(|| handle.block_on(delete));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_cloudevents_sdk_reads_every_attribute_of_an_event() {
    let python = venv_python();
    let app = spawn_app().await;
    let queue = ApprovalsQueue::bind(&app).await;
    let (doc, _) = app.approved_review().await;
    app.outbox_drained(Duration::from_secs(10)).await;
    let events = app.take_events().await;
    let (event, _) = events.last().unwrap();
    assert_eq!(event["event_type"], "document.approved");
    let expected = json!({
        "attributes": {
            "specversion": "1.0",
            "id": event["event_id"],
            "source": app.settings.events.source,
            "type": "document.approved",
            "subject": doc,
            "time": event["occurred_at"],
            "dataschema": app.settings.events.schema_url("document.approved"),
            "datacontenttype": "application/json",
            "khspace": "default",
        },
        "data": event,
    });
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/consumers/cloudevents_consumer.py"
    );
    let out = tokio::process::Command::new(&python)
        .args([script, &amqp_url(), &queue.name, &expected.to_string()])
        .output();
    let out = tokio::time::timeout(Duration::from_secs(30), out)
        .await
        .expect("the Python consumer ends within 30 s")
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the Python consumer failed: {stderr}");
    let seen: Value = serde_json::from_slice(&out.stdout).expect("one JSON line");
    let attributes = &seen["attributes"];
    for name in [
        "specversion",
        "id",
        "source",
        "type",
        "subject",
        "dataschema",
        "datacontenttype",
        "khspace",
    ] {
        assert_eq!(attributes[name], expected["attributes"][name], "{name}");
    }
    let time = |v: &Value| chrono::DateTime::parse_from_rfc3339(v.as_str().unwrap()).unwrap();
    assert_eq!(time(&attributes["time"]), time(&event["occurred_at"]));
    assert_eq!(seen["data"], *event);
    assert_eq!(
        attributes["khspace"], event["space"],
        "the extension is the body's space"
    );
    drop(queue);
    app.finish().await;
}
