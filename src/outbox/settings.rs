//! The outbox layer's configuration (`[amqp]` and `[outbox]` in `config/default.toml`).

use std::time::Duration;

use secrecy::SecretString;
use serde::Deserialize;
use serde_with::{serde_as, DurationMilliSeconds};

/// The kind of queue the archive queue is declared as (`amqp.bind_queue_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub enum QueueType {
    Classic,
    /// Replicated over the cluster's nodes (Raft); survives the loss of a minority.
    Quorum,
}

impl TryFrom<String> for QueueType {
    type Error = String;

    fn try_from(kind: String) -> Result<Self, String> {
        match kind.as_str() {
            "classic" => Ok(QueueType::Classic),
            "quorum" => Ok(QueueType::Quorum),
            _ => Err(format!(
                "amqp.bind_queue_type: must be classic or quorum, not {kind:?}"
            )),
        }
    }
}

impl QueueType {
    pub fn as_str(self) -> &'static str {
        match self {
            QueueType::Classic => "classic",
            QueueType::Quorum => "quorum",
        }
    }
}

#[serde_as]
#[derive(Debug, Clone, Deserialize)]
pub struct AmqpSettings {
    /// The broker's nodes. A (re)connect tries each once, starting at the node after the
    /// one it last used (see `outbox::nodes`).
    pub urls: Vec<SecretString>,
    /// How long one node may take to accept a connection and finish the AMQP handshake;
    /// less when the nodes still to be tried need their share of a publish's `timeout`.
    #[serde_as(as = "DurationMilliSeconds<u64>")]
    #[serde(rename = "connect_timeout_ms")]
    pub connect_timeout: Duration,
    pub exchange: String,
    /// When not empty, a bounded durable queue of this name bound to every routing key.
    pub bind_queue: String,
    /// How the archive queue is declared when it does not exist yet. One that exists with
    /// other arguments is used as it is.
    pub bind_queue_type: QueueType,
    #[serde_as(as = "DurationMilliSeconds<u64>")]
    #[serde(rename = "timeout_ms")]
    pub timeout: Duration,
    /// A larger event body is refused without being sent: the broker would close the
    /// channel (and so fail every publish pipelined on it), not refuse that one message.
    pub max_message_bytes: usize,
    /// Consumer queues that must receive every event: each gets its own copy through the
    /// default exchange, and an event is delivered only once each of them took it.
    #[serde(default)]
    pub required_queues: Vec<String>,
}

impl AmqpSettings {
    /// What is wrong with `amqp.required_queues`, if anything: a name must be 1 to 255
    /// bytes, named once, and not the archive queue (which is bound to the exchange).
    pub fn required_queues_problem(&self) -> Option<String> {
        let mut seen = std::collections::HashSet::new();
        self.required_queues.iter().find_map(|q| {
            if q.trim().is_empty() || q.len() > 255 {
                Some(format!("{q:?}: a queue name is 1 to 255 bytes"))
            } else if !seen.insert(q.as_str()) {
                Some(format!("{q:?} is named twice"))
            } else if *q == self.bind_queue {
                Some(format!("{q:?} is the archive queue (amqp.bind_queue)"))
            } else {
                None
            }
        })
    }
}

#[serde_as]
#[derive(Debug, Clone, Deserialize)]
pub struct OutboxSettings {
    #[serde_as(as = "DurationMilliSeconds<u64>")]
    #[serde(rename = "poll_interval_ms")]
    pub poll_interval: Duration,
    pub batch_size: i64,
    #[serde_as(as = "DurationMilliSeconds<u64>")]
    #[serde(rename = "backoff_base_ms")]
    pub backoff_base: Duration,
    #[serde_as(as = "DurationMilliSeconds<u64>")]
    #[serde(rename = "backoff_max_ms")]
    pub backoff_max: Duration,
    /// How long the request that commits a change owns its outbox row: it delivers the row
    /// itself, and only after this may a dispatcher take the row over (the instance died
    /// after COMMIT). Longer than one delivery attempt (MongoDB, then RabbitMQ).
    #[serde_as(as = "DurationMilliSeconds<u64>")]
    #[serde(rename = "inline_lease_ms")]
    pub inline_lease: std::time::Duration,
    /// The done marks of rows delivered by their requests are written by groups: the rows
    /// delivered within this of the first are marked by one statement. Zero: each request
    /// marks its own row before it answers. Far below `inline_lease`.
    #[serde_as(as = "DurationMilliSeconds<u64>")]
    #[serde(rename = "mark_window_ms")]
    pub mark_window: std::time::Duration,
    /// Failed attempts the broker's refusals (unroutable, nacked) may cost a row before it
    /// is parked for an admin. A dependency that is down costs no attempt.
    pub max_attempts: i32,
    /// Run the background dispatcher in this process.
    pub run_dispatcher: bool,
    /// Delivered outbox rows are deleted after this many hours.
    pub retention_hours: u64,
    /// How often an instance tries to purge (only the one holding the purge lock does).
    #[serde_as(as = "DurationMilliSeconds<u64>")]
    #[serde(rename = "purge_interval_ms")]
    pub purge_interval: Duration,
    /// Rows one purge statement deletes at most.
    pub purge_batch: i64,
    /// The pause between two purge statements, so a long purge leaves the disk to others.
    #[serde_as(as = "DurationMilliSeconds<u64>")]
    #[serde(rename = "purge_pause_ms")]
    pub purge_pause: Duration,
}

impl OutboxSettings {
    /// How long delivered rows are kept.
    pub fn retention(&self) -> Duration {
        Duration::from_secs(self.retention_hours * 3600)
    }
}
