//! What the JSON API and the operator page show of webhooks: an endpoint (never its
//! secret, but once: in the answer that made it), and its deliveries.

use chrono::{DateTime, Utc};
use serde::Serialize;
use uuid::Uuid;

use crate::store::{DeliveryRecord, WebhookRecord};
use crate::usecases::WithSecret;

/// An endpoint of a space.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct WebhookView {
    pub id: Uuid,
    /// The space's key.
    pub space: String,
    pub url: String,
    /// The event types it is sent, sorted.
    pub event_types: Vec<String>,
    pub enabled: bool,
    /// Why it is disabled (by whom, a 410, or days of failures); null while enabled.
    pub disabled_reason: Option<String>,
    pub disabled_at: Option<DateTime<Utc>>,
    /// Since when every attempt failed; null once one succeeds.
    pub failing_since: Option<DateTime<Utc>>,
    /// Until when the secret the last rotation replaced still signs beside the current one.
    pub previous_secret_until: Option<DateTime<Utc>>,
    pub created_by: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<&WebhookRecord> for WebhookView {
    fn from(w: &WebhookRecord) -> Self {
        let live = w.previous_until.filter(|t| *t > Utc::now());
        Self {
            id: w.id,
            space: w.space.clone(),
            url: w.url.clone(),
            event_types: w.event_types.clone(),
            enabled: w.enabled,
            disabled_reason: w.disabled_reason.clone(),
            disabled_at: w.disabled_at,
            failing_since: w.failing_since,
            previous_secret_until: live,
            created_by: w.created_by.clone(),
            created_at: w.created_at,
            updated_at: w.updated_at,
        }
    }
}

/// An endpoint with its signing secret, shown this once (at registration and rotation).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct WebhookWithSecret {
    #[serde(flatten)]
    pub webhook: WebhookView,
    /// `whsec_` and the base64 of the key: give it to the receiver's Standard Webhooks
    /// library. It is not shown again.
    pub secret: String,
}

impl From<&WithSecret> for WebhookWithSecret {
    fn from(w: &WithSecret) -> Self {
        Self {
            webhook: WebhookView::from(&w.webhook),
            secret: w.secret.as_str().to_string(),
        }
    }
}

/// A space's endpoints, oldest first.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct WebhookList {
    pub items: Vec<WebhookView>,
}

/// One event's delivery to one endpoint.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct DeliveryView {
    pub id: i64,
    /// The event's id: the `webhook-id` header of every attempt.
    pub event_id: Uuid,
    pub event_type: String,
    /// `pending` (due at `next_attempt_at`), `delivered`, or `failed` (no retry left, or
    /// the endpoint answered 410).
    #[schema(pattern = "^(pending|delivered|failed)$")]
    pub state: String,
    pub attempts: i32,
    /// When the next attempt is due; null unless pending.
    pub next_attempt_at: Option<DateTime<Utc>>,
    /// The receiver's status at the last attempt; null when it gave none.
    pub last_status: Option<i32>,
    /// What went wrong at the last attempt (never the receiver's body).
    pub last_error: Option<String>,
    pub created_at: DateTime<Utc>,
    pub delivered_at: Option<DateTime<Utc>>,
}

impl From<&DeliveryRecord> for DeliveryView {
    fn from(d: &DeliveryRecord) -> Self {
        Self {
            id: d.id,
            event_id: d.event_id,
            event_type: d.event_type.clone(),
            state: d.state.clone(),
            attempts: d.attempts,
            next_attempt_at: (d.state == "pending").then_some(d.next_attempt_at),
            last_status: d.last_status,
            last_error: d.last_error.clone(),
            created_at: d.created_at,
            delivered_at: d.delivered_at,
        }
    }
}

/// A page of an endpoint's deliveries, newest first.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct DeliveryPage {
    pub items: Vec<DeliveryView>,
    /// Where the next page starts (the cursor parameter); null on the last page.
    pub next_cursor: Option<String>,
}
