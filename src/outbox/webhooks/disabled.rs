//! The `webhook.endpoint_disabled` event: an endpoint the service disabled by itself (its
//! receiver answered 410 Gone, or failed every delivery for `webhooks.disable_after_secs`),
//! announced on the topic exchange so that whoever runs the space's tools hears of it. A
//! service event, published directly like `audit.checkpoint` (about no document); the
//! disabling statement returns the endpoint once, whichever attempt disabled it, so it is
//! sent once, and tried again a few times while the broker does not confirm it.

use std::time::Duration;

use chrono::{SecondsFormat, Utc};
use serde_json::json;
use uuid::Uuid;

use crate::outbox::envelope::{service_headers, EventSettings};
use crate::outbox::publisher::{AmqpPublisher, Destination, PublishError};
use crate::store::DisabledEndpoint;

/// The event type and routing key.
pub const ENDPOINT_DISABLED_EVENT: &str = "webhook.endpoint_disabled";

/// How often an unconfirmed event is sent again, and how long apart.
const TRIES: u32 = 5;
const APART: Duration = Duration::from_secs(2);

/// The event's body: the service envelope, and which endpoint of which space, and why.
fn endpoint_disabled_body(event_id: Uuid, endpoint: &DisabledEndpoint) -> serde_json::Value {
    json!({
        "event_id": event_id,
        "event_type": ENDPOINT_DISABLED_EVENT,
        "occurred_at": Utc::now().to_rfc3339_opts(SecondsFormat::Micros, true),
        "actor_id": "kh-review",
        "data": {
            "webhook_id": endpoint.id,
            "space": endpoint.space,
            "reason": endpoint.reason,
        }
    })
}

/// Publishes the event for `endpoint`, trying again while the broker does not confirm it
/// (the same `event_id` each time).
pub async fn announce_disabled(
    publisher: &AmqpPublisher,
    events: &EventSettings,
    endpoint: &DisabledEndpoint,
) {
    let event_id = Uuid::now_v7();
    let body = endpoint_disabled_body(event_id, endpoint);
    let bytes = serde_json::to_vec(&body).expect("a JSON value serializes");
    let to = Destination::topic(ENDPOINT_DISABLED_EVENT);
    for attempt in 1..=TRIES {
        let headers = service_headers(event_id, ENDPOINT_DISABLED_EVENT, &body, events);
        let id = event_id.to_string();
        match publisher
            .publish(&to, &id, ENDPOINT_DISABLED_EVENT, headers, &bytes)
            .await
        {
            Ok(()) => return,
            Err(PublishError::Refused(why)) => {
                tracing::warn!(webhook = %endpoint.id, %why, "webhook.endpoint_disabled refused by the broker");
                return;
            }
            Err(PublishError::Unavailable(e)) if attempt < TRIES => {
                tracing::debug!(webhook = %endpoint.id, error = %format!("{e:#}"), "webhook.endpoint_disabled not confirmed; sending again");
                tokio::time::sleep(APART).await;
            }
            Err(PublishError::Unavailable(e)) => {
                tracing::warn!(webhook = %endpoint.id, error = %format!("{e:#}"), "webhook.endpoint_disabled not confirmed: not sent");
            }
        }
    }
}
