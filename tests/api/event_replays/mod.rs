//! Replays of the events to one consumer's queue, against the real stores: history and
//! snapshot replays rebuild a consumer that lost its queue, live events keep flowing while
//! a replay runs, a replay resumes after `kill -9` of the instance running it, and the API's
//! refusals (one replay per queue, a missing queue, non-admins). Part of the parallel run.

mod api;
mod history;
mod resume;

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use lapin::options::{BasicGetOptions, QueueBindOptions, QueueDeclareOptions, QueueDeleteOptions};
use lapin::types::{AMQPValue, FieldTable};
use lapin::BasicProperties;
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::app::TestApp;
use crate::support::inspect::wait_for;

/// The header a replayed message carries.
pub const REPLAY_HEADER: &str = "kh-replay-id";

/// A message read off a queue: its body and its properties.
pub struct Message {
    pub body: Value,
    pub properties: BasicProperties,
}

impl Message {
    /// The replay it belongs to (its `kh-replay-id` header), if any.
    pub fn replay_id(&self) -> Option<String> {
        let headers = self.properties.headers().as_ref()?;
        match headers.inner().get(REPLAY_HEADER)? {
            AMQPValue::LongString(s) => Some(s.to_string()),
            _ => None,
        }
    }

    pub fn event_id(&self) -> String {
        self.body["event_id"].as_str().unwrap().to_string()
    }
}

impl TestApp {
    /// A queue of this test's own, bound to nothing (a consumer's queue); `name` made
    /// unique to the test.
    pub async fn consumer_queue(&self, name: &str) -> String {
        self.declare_queue(format!("{}.{name}", self.shared.exchange))
            .await
    }

    /// The queue `queue`, declared (bound to nothing); delete it at the end of the test.
    pub async fn declare_queue(&self, queue: String) -> String {
        self.amqp
            .queue_declare(
                queue.as_str().into(),
                QueueDeclareOptions::default(),
                FieldTable::default(),
            )
            .await
            .unwrap();
        queue
    }

    /// Binds `queue` to every document event of the test's exchange, as a consumer does.
    pub async fn bind_to_events(&self, queue: &str) {
        let exchange = self.shared.exchange.as_str();
        self.amqp
            .queue_bind(
                queue.into(),
                exchange.into(),
                "document.#".into(),
                QueueBindOptions::default(),
                FieldTable::default(),
            )
            .await
            .unwrap();
    }

    pub async fn delete_queue(&self, queue: &str) {
        self.amqp
            .queue_delete(queue.into(), QueueDeleteOptions::default())
            .await
            .unwrap();
    }

    /// Every message now on `queue`, in order.
    pub async fn drain(&self, queue: &str) -> Vec<Message> {
        let mut out = Vec::new();
        let no_ack = BasicGetOptions { no_ack: true };
        while let Some(m) = self.amqp.basic_get(queue.into(), no_ack).await.unwrap() {
            out.push(Message {
                body: serde_json::from_slice(&m.delivery.data).unwrap(),
                properties: m.delivery.properties.clone(),
            });
        }
        out
    }

    /// POSTs a replay as the admin; returns the status and the body.
    pub async fn ask_replay(&self, body: Value) -> (StatusCode, Value) {
        let r = self
            .post("/api/v1/admin/replays", &self.admin(), body)
            .await;
        let status = r.status();
        (status, r.json().await.unwrap())
    }

    /// Starts a replay (expecting 202); returns its id.
    pub async fn started_replay(&self, body: Value) -> String {
        let (status, replay) = self.ask_replay(body).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{replay}");
        assert_eq!(replay["state"], "running", "{replay}");
        replay["id"].as_str().unwrap().to_string()
    }

    pub async fn replay_state(&self, id: &str) -> Value {
        let r = self
            .get(&format!("/api/v1/admin/replays/{id}"), &self.admin())
            .await;
        assert_eq!(r.status(), StatusCode::OK);
        r.json().await.unwrap()
    }

    /// Waits until the replay `id` is `state`; returns it.
    pub async fn replay_ends(&self, id: &str, state: &str, deadline: Duration) -> Value {
        wait_for(&format!("replay {id} {state}"), deadline, || async {
            let r = self.replay_state(id).await;
            (r["state"] == state).then_some(r)
        })
        .await
    }

    /// Edits the approved document `id` and approves the revision.
    pub async fn approved_revision(&self, id: &str) {
        let path = format!("/api/v1/documents/{id}");
        let r = self
            .put(&path, &self.author(), json!({"body": "Newer words."}))
            .await;
        assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap());
        let review = self.submitted(id).await;
        let r = self.approve(&review, &self.reviewer()).await;
        assert_eq!(r.status(), StatusCode::OK);
    }

    /// Every published document and its published version, as PostgreSQL holds them.
    pub async fn published(&self) -> BTreeMap<String, i64> {
        let rows: Vec<(uuid::Uuid, i64)> = sqlx::query_as(
            "SELECT id, published_version FROM documents WHERE published_version IS NOT NULL",
        )
        .fetch_all(&self.pg)
        .await
        .unwrap();
        rows.into_iter().map(|(d, v)| (d.to_string(), v)).collect()
    }
}

/// What a consumer's index ends with after reading `messages` as the events contract says:
/// deduplicated by `event_id` (unless the message carries `kh-replay-id`), each document at
/// the highest published version it heard of (approvals and snapshots), archives removed.
pub fn index_of(messages: &[Message]) -> BTreeMap<String, i64> {
    let mut seen = HashSet::new();
    let mut index: BTreeMap<String, i64> = BTreeMap::new();
    for m in messages {
        if !seen.insert(m.event_id()) && m.replay_id().is_none() {
            continue;
        }
        let doc = m.body["document_id"].as_str().unwrap().to_string();
        let version = m.body["document_version"].as_i64().unwrap();
        match m.body["event_type"].as_str().unwrap() {
            "document.approved" | "document.snapshot" => {
                let v = index.entry(doc).or_insert(version);
                *v = (*v).max(version);
            }
            "document.archived" => {
                index.remove(&doc);
            }
            _ => {}
        }
    }
    index
}
