//! The `audit.checkpoint` event: each checkpoint of the audit chains announced on the
//! topic exchange (routing key `audit.checkpoint`), so that a consumer can keep the
//! checkpoints' sequence and links somewhere neither PostgreSQL's nor MongoDB's operators
//! reach. It is published directly, with publisher confirms, not through the outbox table:
//! it is about no document (the table's rows are a document's, published in that
//! document's order), and the checkpoint it announces is already stored in MongoDB, so an
//! event the broker did not confirm is sent again with the next round (the same
//! `event_id`). Its body has the envelope of the service's own events (no document).

use chrono::SecondsFormat;
use serde_json::json;
use uuid::Uuid;

use super::envelope::{service_headers, EventSettings};
use super::publisher::{AmqpPublisher, Destination, PublishError};
use crate::domain::audit::checkpoint::Checkpoint;
use crate::domain::audit::hex;

/// The event type and routing key.
pub const CHECKPOINT_EVENT: &str = "audit.checkpoint";

/// The `actor_id` of the service's own events.
const SERVICE_ACTOR: &str = "kh-review";

/// One checkpoint's event, ready to send (and to send again: its id is fixed).
#[derive(Debug, Clone)]
pub struct CheckpointEvent {
    pub event_id: Uuid,
    pub sequence: i64,
    body: serde_json::Value,
}

impl CheckpointEvent {
    /// The event of `cp`, stored in the collection `collection`.
    pub fn of(cp: &Checkpoint, collection: &str) -> Self {
        let event_id = Uuid::now_v7();
        let body = json!({
            "event_id": event_id,
            "event_type": CHECKPOINT_EVENT,
            "occurred_at": cp.taken_at.to_rfc3339_opts(SecondsFormat::Micros, true),
            "actor_id": SERVICE_ACTOR,
            "data": {
                "sequence": cp.sequence,
                "chains": cp.chains.len(),
                "rows": cp.rows(),
                "link": hex(&cp.link),
                "prev": hex(&cp.prev),
                "collection": collection,
            }
        });
        Self {
            event_id,
            sequence: cp.sequence,
            body,
        }
    }

    /// Publishes the event and waits for the broker's confirm.
    pub async fn publish(
        &self,
        publisher: &AmqpPublisher,
        events: &EventSettings,
    ) -> Result<(), PublishError> {
        let body = serde_json::to_vec(&self.body).expect("a JSON value serializes");
        let id = self.event_id.to_string();
        let headers = service_headers(self.event_id, CHECKPOINT_EVENT, &self.body, events);
        let to = Destination::topic(CHECKPOINT_EVENT);
        publisher
            .publish(&to, &id, CHECKPOINT_EVENT, headers, &body)
            .await
    }
}
