//! The webhooks section of the operator's page: every space's endpoints with their state
//! (enabled, disabled and why, failing since when) and their latest deliveries (state,
//! attempts, the receiver's last status, the last error, the next attempt), each with a
//! button that sends it again. Reads and re-sends through the use cases the JSON API calls.

use actix_web::{web, HttpResponse};
use askama::Template;
use chrono::Utc;

use super::render::{html, waited, when, Shown};
use crate::store::{DeliveryRecord, WebhookRecord};
use crate::web::auth::{Caller, Role};
use crate::web::error::ApiError;
use crate::web::state::AppState;

/// The most endpoints the section lists, and deliveries shown of each.
const ENDPOINTS: i64 = 100;
const LATEST: i64 = 5;

/// An endpoint's block.
pub struct Endpoint {
    pub id: String,
    pub space: String,
    pub url: String,
    pub event_types: String,
    /// `enabled`, `failing` or `disabled`.
    pub state: &'static str,
    /// Why it is disabled, or since when it fails; empty when all is well.
    pub note: String,
    pub deliveries: Vec<Delivery>,
}

/// A delivery's line.
pub struct Delivery {
    pub id: i64,
    pub event_type: String,
    pub state: String,
    pub attempts: i32,
    pub last_status: String,
    pub last_error: String,
    pub next_attempt: String,
    pub created: String,
}

#[derive(Template)]
#[template(path = "console/webhooks.html")]
struct Section {
    flash: Option<String>,
    endpoints: Vec<Endpoint>,
}

fn endpoint(w: &WebhookRecord, latest: &[DeliveryRecord]) -> Endpoint {
    let now = Utc::now();
    let (state, note) = match (w.enabled, w.failing_since) {
        (false, _) => ("disabled", w.disabled_reason.clone().unwrap_or_default()),
        (true, Some(since)) => (
            "failing",
            format!("every delivery failed for {}", waited(since, now)),
        ),
        (true, None) => ("enabled", String::new()),
    };
    Endpoint {
        id: w.id.to_string(),
        space: w.space.clone(),
        url: w.url.clone(),
        event_types: w.event_types.join(", "),
        state,
        note,
        deliveries: latest.iter().map(delivery).collect(),
    }
}

fn delivery(d: &DeliveryRecord) -> Delivery {
    Delivery {
        id: d.id,
        event_type: d.event_type.clone(),
        state: d.state.clone(),
        attempts: d.attempts,
        last_status: d.last_status.map(|s| s.to_string()).unwrap_or_default(),
        last_error: d.last_error.clone().unwrap_or_default(),
        next_attempt: if d.state == "pending" {
            when(d.next_attempt_at)
        } else {
            String::new()
        },
        created: when(d.created_at),
    }
}

/// The section's HTML, for the operator page to place (`flash`: what an action did).
pub async fn section(
    state: &AppState,
    caller: &Caller,
    flash: Option<String>,
) -> Result<String, ApiError> {
    caller.require(Role::Admin)?;
    let found = state
        .webhooks
        .overview(&caller.access, ENDPOINTS, LATEST)
        .await?;
    let page = Section {
        flash,
        endpoints: found.iter().map(|(w, d)| endpoint(w, d)).collect(),
    };
    page.render()
        .map_err(|e| ApiError::internal(anyhow::anyhow!("template: {e}")))
}

/// POST `/console/f/spaces/{key}/webhooks/{webhook_id}/deliveries/{delivery_id}/resend`:
/// the JSON API's re-send; answers the section again.
pub async fn resend(
    path: web::Path<(String, String, String)>,
    caller: Result<Caller, ApiError>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, Shown> {
    let caller = caller.map_err(Shown::action)?;
    caller.require(Role::Admin).map_err(Shown::action)?;
    let gone = || Shown::action(ApiError::not_found("no such delivery of this webhook"));
    let key = crate::domain::SpaceKey::parse(&path.0).map_err(|_| gone())?;
    let id = uuid::Uuid::parse_str(&path.1).map_err(|_| gone())?;
    let delivery: i64 = path.2.parse().map_err(|_| gone())?;
    let sent = state
        .webhooks
        .resend(&caller.access, &key, id, delivery)
        .await
        .map_err(|e| Shown::action(e.into()))?;
    let flash = format!(
        "Delivery {} ({}) is sent again from its first attempt.",
        sent.id, sent.event_type
    );
    let body = section(&state, &caller, Some(flash)).await?;
    Ok(html(actix_web::http::StatusCode::OK, body))
}
