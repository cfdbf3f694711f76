//! The example consumer (examples/consumer.rs) against real events: it binds its own durable
//! queue, prints each event once, and skips a redelivered duplicate.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use lapin::options::{BasicPublishOptions, QueueDeleteOptions};
use lapin::BasicProperties;
use reqwest::StatusCode;
use serde_json::Value;

use crate::support::app::spawn_app;
use kh_review_testkit::stores::amqp_url;

fn example_binary() -> std::path::PathBuf {
    // tests run from <target>/debug/deps; examples are built into <target>/debug/examples.
    let exe = std::env::current_exe().unwrap();
    let path = exe
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples")
        .join("consumer");
    assert!(
        path.exists(),
        "{} is missing: build it with `cargo build --example consumer` (make test does)",
        path.display()
    );
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_consumer_processes_each_event_once() {
    let app = spawn_app().await;
    let queue = format!("{}.example", app.shared.queue);
    let mut child = Command::new(example_binary())
        .args([queue.as_str(), "3"])
        .env("APP__AMQP__URLS", amqp_url())
        .env("APP__AMQP__EXCHANGE", &app.shared.exchange)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until it has bound its queue (it says so on stderr).
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    assert!(line.contains("consuming from queue"), "{line}");

    let (doc_id, review_id) = app.pending_review().await;
    assert_eq!(
        app.approve(&review_id, &app.reviewer()).await.status(),
        StatusCode::OK
    );
    app.outbox_drained(Duration::from_secs(10)).await;
    // Redeliver the approval, as an at-least-once broker may.
    let events = app.take_events().await;
    let (approved, _) = events
        .iter()
        .find(|(e, _)| e["event_type"] == "document.approved")
        .unwrap();
    app.amqp
        .basic_publish(
            app.shared.exchange.as_str().into(),
            "document.approved".into(),
            BasicPublishOptions::default(),
            &serde_json::to_vec(approved).unwrap(),
            BasicProperties::default(),
        )
        .await
        .unwrap()
        .await
        .unwrap();

    let out = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert!(out.status.success(), "the consumer exits after 3 messages");
    let printed: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<&str> = printed
        .iter()
        .map(|e| e["event_type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["document.submitted", "document.approved"],
        "each event once, in order"
    );
    assert!(printed.iter().all(|e| e["document_id"] == doc_id.as_str()));
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    assert!(
        rest.contains("duplicate"),
        "the redelivery was recognised: {rest}"
    );
    app.amqp
        .queue_delete(queue.as_str().into(), QueueDeleteOptions::default())
        .await
        .unwrap();
    app.finish().await;
}
