//! The example consumer (examples/consumer.rs) against real events: it binds its own durable
//! queue, handles each event once (skipping a redelivered duplicate), indexes an approved
//! document's published text (even when it handles the approval after the next revision
//! was started), and removes an archived document from its index.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use lapin::options::{
    BasicPublishOptions, QueueBindOptions, QueueDeclareOptions, QueueDeleteOptions,
};
use lapin::types::FieldTable;
use reqwest::StatusCode;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::event_docs::as_documented;
use crate::support::app::{spawn_app, TestApp};
use kh_review_testkit::stores::{amqp_url, mongo_url};

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

/// A running example consumer: its stdout lines as they come, its stderr at the end.
/// Killed when dropped, so that a test that fails leaves no consumer running.
struct Consumer {
    child: Option<Child>,
    lines: mpsc::UnboundedReceiver<Value>,
    stderr: BufReader<std::process::ChildStderr>,
}

impl Drop for Consumer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The consumer's durable queue, `<the test's queue>.<suffix>`: deleted when dropped, also
/// when the test fails (the harness deletes only the test's own queue).
struct OwnQueue {
    amqp: lapin::Channel,
    name: String,
}

impl OwnQueue {
    fn of(app: &TestApp, suffix: &str) -> Self {
        let name = format!("{}.{suffix}", app.shared.queue);
        OwnQueue {
            amqp: app.amqp.clone(),
            name,
        }
    }
}

impl Drop for OwnQueue {
    fn drop(&mut self) {
        let delete = self
            .amqp
            .queue_delete(self.name.as_str().into(), QueueDeleteOptions::default());
        let handle = tokio::runtime::Handle::current();
        let _ = tokio::task::block_in_place(|| handle.block_on(delete));
    }
}

impl Consumer {
    /// Starts the consumer on `queue` for `max` messages; returns once its queue is bound.
    fn start(app: &TestApp, queue: &str, max: usize) -> Consumer {
        let mut child = Command::new(example_binary())
            .args([queue, &max.to_string()])
            .env("APP__AMQP__URLS", amqp_url())
            .env("APP__AMQP__EXCHANGE", &app.shared.exchange)
            .env("APP__MONGO__URL", mongo_url())
            .env("APP__MONGO__DATABASE", &app.shared.mongo_db)
            .env("APP__MONGO__COLLECTION", &app.settings.mongo.collection)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Wait until it has bound its queue (it says so on stderr).
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        stderr.read_line(&mut line).unwrap();
        assert!(line.contains("consuming from queue"), "{line}");
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for l in stdout.lines().map_while(Result::ok) {
                let _ = tx.send(serde_json::from_str(&l).unwrap());
            }
        });
        Consumer {
            child: Some(child),
            lines,
            stderr,
        }
    }

    /// The next `n` lines it prints (one per event handled).
    async fn next(&mut self, n: usize) -> Vec<Value> {
        let mut out = Vec::new();
        while out.len() < n {
            let line = tokio::time::timeout(Duration::from_secs(20), self.lines.recv()).await;
            out.push(line.expect("the consumer printed in time").expect("a line"));
        }
        out
    }

    /// Waits (up to 20 s) for it to exit after its `max` messages: its index, and its
    /// stderr. Its output ends when it exits, which closes the channel of its lines.
    async fn finish(mut self) -> (Value, String) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        let mut tail = Vec::new();
        while let Some(line) = tokio::time::timeout_at(deadline, self.lines.recv())
            .await
            .expect("the consumer did not exit")
        {
            tail.push(line);
        }
        let mut child = self.child.take().unwrap();
        let status = tokio::task::block_in_place(|| child.wait()).unwrap();
        let mut rest = String::new();
        self.stderr.read_to_string(&mut rest).unwrap();
        assert!(
            status.success(),
            "the consumer exits after its messages: {rest}"
        );
        let last = tail.pop().expect("the index, printed at exit");
        (last["index"].clone(), rest)
    }
}

/// Declares `queue` as the consumer does, so that it collects events before it runs.
async fn bound_queue(app: &TestApp, queue: &str) {
    let durable = QueueDeclareOptions {
        durable: true,
        ..Default::default()
    };
    let ch = &app.amqp;
    ch.queue_declare(queue.into(), durable, FieldTable::default())
        .await
        .unwrap();
    let (exchange, key) = (app.shared.exchange.as_str(), "document.*");
    ch.queue_bind(
        queue.into(),
        exchange.into(),
        key.into(),
        QueueBindOptions::default(),
        FieldTable::default(),
    )
    .await
    .unwrap();
}

/// Deletes the consumer's queue, checks every event the test's own queue got (and those
/// in `taken`, got earlier) against docs/events.md, and tears the app down.
async fn wrap_up(app: TestApp, queue: OwnQueue, taken: Vec<Value>) {
    drop(queue);
    app.outbox_drained(Duration::from_secs(10)).await;
    let rest = app.take_events().await.into_iter().map(|(e, _)| e);
    for event in taken.into_iter().chain(rest) {
        as_documented(&event);
    }
    app.finish().await;
}

/// What each line says was done: (event type, action).
fn actions(lines: &[Value]) -> Vec<(&str, &str)> {
    lines
        .iter()
        .map(|l| {
            (
                l["event_type"].as_str().unwrap(),
                l["action"].as_str().unwrap(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_consumer_processes_each_event_once() {
    let app = spawn_app().await;
    let queue = OwnQueue::of(&app, "example");
    let mut consumer = Consumer::start(&app, &queue.name, 3);
    let (doc_id, _) = app.approved_review().await;
    app.outbox_drained(Duration::from_secs(10)).await;
    // Redeliver the approval, as an at-least-once broker may.
    let events = app.take_events().await;
    let (approved, props) = events
        .iter()
        .find(|(e, _)| e["event_type"] == "document.approved")
        .unwrap();
    // The same message again: its body and properties (headers included) as first sent.
    app.amqp
        .basic_publish(
            app.shared.exchange.as_str().into(),
            "document.approved".into(),
            BasicPublishOptions::default(),
            &serde_json::to_vec(approved).unwrap(),
            props.clone(),
        )
        .await
        .unwrap()
        .await
        .unwrap();

    let printed = consumer.next(2).await;
    let (index, rest) = consumer.finish().await;
    assert_eq!(
        actions(&printed),
        [
            ("document.submitted", "none"),
            ("document.approved", "index")
        ],
        "each event once, in order"
    );
    assert!(printed.iter().all(|e| e["document_id"] == doc_id.as_str()));
    assert!(
        rest.contains("duplicate"),
        "the redelivery was recognised: {rest}"
    );
    assert_eq!(index[&doc_id]["version"], 3);
    assert_eq!(index[&doc_id]["body"], "Numbers and words.");
    wrap_up(app, queue, events.into_iter().map(|(e, _)| e).collect()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_approval_indexes_the_published_text_never_the_draft() {
    let app = spawn_app().await;
    let queue = OwnQueue::of(&app, "late");
    bound_queue(&app, &queue.name).await;
    let (doc_id, _) = app.approved_review().await;
    // The author starts a revision before the consumer has seen the approval (version 3).
    let draft = "Draft of the next revision.";
    let path = format!("/api/v1/documents/{doc_id}");
    let r = app
        .client
        .put(app.url(&path))
        .bearer_auth(app.author())
        .json(&json!({ "body": draft }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap());
    app.outbox_drained(Duration::from_secs(10)).await;
    let projected = app.mongo_doc(&doc_id).await.unwrap();
    assert_eq!(projected.get_i64("head_version").unwrap(), 4);
    assert_eq!(
        projected
            .get_document("working")
            .unwrap()
            .get_str("body")
            .unwrap(),
        draft
    );

    let mut consumer = Consumer::start(&app, &queue.name, 4);
    let first = consumer.next(2).await;
    assert_eq!(
        actions(&first),
        [
            ("document.submitted", "none"),
            ("document.approved", "index")
        ]
    );
    assert_eq!(first[1]["version"], 3, "{}", first[1]);
    assert_eq!(
        first[1]["body"], "Numbers and words.",
        "the published text, not the draft"
    );

    // The revision is submitted (version 5) and approved (version 6): now its text is published.
    let review_id = app.submitted(&doc_id).await;
    let r = app.approve(&review_id, &app.reviewer()).await;
    assert_eq!(r.status(), StatusCode::OK);
    let then = consumer.next(2).await;
    let (index, _) = consumer.finish().await;
    assert_eq!(
        actions(&then),
        [
            ("document.submitted", "none"),
            ("document.approved", "index")
        ]
    );
    assert_eq!(then[1]["version"], 6);
    assert_eq!(then[1]["body"], draft);
    let drafts = first
        .iter()
        .filter(|l| l.to_string().contains(draft))
        .count();
    assert_eq!(drafts, 0, "the draft was never indexed before its approval");
    assert_eq!(index.as_object().unwrap().len(), 1);
    let entry = json!({ "version": 6, "title": "Quarterly report", "body": draft });
    assert_eq!(index[&doc_id], entry, "the index holds version 6 alone");
    wrap_up(app, queue, Vec::new()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_archive_removes_the_document_from_the_index() {
    let app = spawn_app().await;
    let queue = OwnQueue::of(&app, "archive");
    // Two documents approved; one is commented on and archived, the other stays.
    let mut consumer = Consumer::start(&app, &queue.name, 6);
    let (kept, _) = app.approved_review().await;
    let (gone, _) = app.approved_review().await;
    let comment = json!({ "body": "Superseded by the new runbook." });
    let path = format!("/api/v1/documents/{gone}/comments");
    let r = app.post(&path, &app.reviewer(), comment).await;
    assert_eq!(
        r.status(),
        StatusCode::CREATED,
        "{}",
        r.text().await.unwrap()
    );
    let path = format!("/api/v1/documents/{gone}/archive");
    let r = app
        .post(&path, &app.author(), json!({ "reason": "superseded" }))
        .await;
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap());

    let printed = consumer.next(6).await;
    let (index, _) = consumer.finish().await;
    let of_gone: Vec<Value> = printed
        .iter()
        .filter(|l| l["document_id"] == gone.as_str())
        .cloned()
        .collect();
    assert_eq!(
        actions(&of_gone),
        [
            ("document.submitted", "none"),
            ("document.approved", "index"),
            ("document.commented", "none"),
            ("document.archived", "remove"),
        ]
    );
    assert_eq!(of_gone[3]["document_version"], 4, "the archived version");
    let ids: Vec<&String> = index.as_object().unwrap().keys().collect();
    assert_eq!(ids, [&kept], "only the document not archived is left");
    wrap_up(app, queue, Vec::new()).await;
}
