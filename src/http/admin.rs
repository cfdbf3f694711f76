//! `/api/v1/admin/outbox`: the outbox rows that are stuck, and what an admin does with a
//! parked one (retry: back in line; skip: dropped, and its document's later events go).
//! Role `admin` only; every action is audited with the admin's id (`outbox_admin_actions`),
//! and honours `Idempotency-Key` as every POST does (`post::run`).

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::store::{OutboxAction, OutboxFilter, OutboxRecord};
use crate::web::auth::{Caller, Role};
use crate::web::body::read_body;
use crate::web::error::{ApiError, ErrorEnvelope};
use crate::web::paging;
use crate::web::post;
use crate::web::request_id;
use crate::web::state::AppState;

/// An outbox row: one event (or projection) of a document, and how its delivery went.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(as = OutboxRow)]
pub struct OutboxRowView {
    pub id: i64,
    pub event_id: Uuid,
    pub document_id: Uuid,
    pub document_version: i64,
    #[schema(example = "document.submitted")]
    pub event_type: String,
    /// pending (waiting or being delivered), parked, done or skipped
    #[schema(example = "parked")]
    pub state: &'static str,
    /// Attempts the broker refused (a dependency that is down costs none).
    pub attempts: i32,
    pub last_error: Option<String>,
    pub parked_reason: Option<String>,
    pub parked_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
}

impl From<&OutboxRecord> for OutboxRowView {
    fn from(r: &OutboxRecord) -> Self {
        Self {
            id: r.id,
            event_id: r.event_id,
            document_id: r.document_id,
            document_version: r.document_version,
            event_type: r.event_type.clone(),
            state: r.state(),
            attempts: r.attempts,
            last_error: r.last_error.clone(),
            parked_reason: r.parked_reason.clone(),
            parked_at: r.parked_at,
            created_at: r.created_at,
        }
    }
}

/// A page of outbox rows, oldest first; pass `next_cursor` as `cursor` for the next one.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct OutboxPage {
    pub items: Vec<OutboxRowView>,
    pub next_cursor: Option<String>,
}

#[derive(Deserialize, Default)]
pub struct OutboxQuery {
    pub state: Option<String>,
    pub limit: Option<i64>,
    pub cursor: Option<String>,
}

/// How delivery is going, over every instance: what is waiting, what is parked, and what
/// went out in the last minute.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct OutboxStatsView {
    /// Rows not delivered yet (parked ones included).
    pub undelivered: i64,
    /// Age of the oldest undelivered row, in seconds (0 when none).
    pub oldest_undelivered_age_seconds: f64,
    pub parked: i64,
    /// How long the oldest parked row has been parked, in seconds (0 when none).
    pub oldest_parked_age_seconds: f64,
    /// Outbox rows delivered in the last 60 seconds: projected to MongoDB, and published to
    /// RabbitMQ where the event is published; skipped rows are not counted.
    pub delivered_last_minute: i64,
}

#[utoipa::path(
    get,
    path = "/api/v1/admin/outbox",
    tag = "admin",
    summary = "Outbox rows that are stuck, oldest first (admin)",
    params(
        ("state" = Option<String>, Query, pattern = "^(parked|retrying)$", description = "parked (default): parked after outbox.max_attempts refusals, holding back their document's later events; retrying: refused at least once, not parked yet"),
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 100, description = "1 to 100, default 20"),
        ("cursor" = Option<String>, Query, pattern = "^[1-9][0-9]{0,18}$", description = "next_cursor of the previous page")
    ),
    responses(
        (status = 200, description = "a page", body = OutboxPage),
        (status = 401, description = "UNAUTHORIZED: missing, invalid or expired token", body = ErrorEnvelope),
        (status = 403, description = "FORBIDDEN: not an admin", body = ErrorEnvelope),
        (status = 422, description = "VALIDATION_FAILED: unknown state, limit out of range or a cursor this service did not issue", body = ErrorEnvelope),
        (status = 503, description = "DEPENDENCY_UNAVAILABLE: PostgreSQL is down", body = ErrorEnvelope)
    ),
    security(("bearer" = []))
)]
pub async fn list(
    query: web::Query<OutboxQuery>,
    caller: Caller,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(outbox_page(&state, &caller, &query).await?))
}

/// A page of stuck rows.
async fn outbox_page(
    state: &AppState,
    caller: &Caller,
    query: &OutboxQuery,
) -> Result<OutboxPage, ApiError> {
    caller.require(Role::Admin)?;
    let filter = match query.state.as_deref() {
        None | Some("parked") => OutboxFilter::Parked,
        Some("retrying") => OutboxFilter::Retrying,
        Some(_) => return Err(ApiError::validation("state must be parked or retrying")),
    };
    let limit = paging::limit(query.limit)?;
    // Any cursor the documented pattern allows is a position: one past every row id (19
    // digits above i64::MAX) is an empty page, not a refusal.
    let after = match query.cursor.as_deref() {
        None => None,
        Some(c) => Some(
            c.parse::<u64>()
                .ok()
                .filter(|id| *id > 0)
                .map(|id| i64::try_from(id).unwrap_or(i64::MAX))
                .ok_or_else(|| ApiError::validation("cursor is not one this service issued"))?,
        ),
    };
    let mut rows = state.outbox_admin.list(filter, after, limit + 1).await?;
    let next_cursor = paging::cut(&mut rows, limit, |r| r.id.to_string());
    Ok(OutboxPage {
        items: rows.iter().map(OutboxRowView::from).collect(),
        next_cursor,
    })
}

#[utoipa::path(
    get,
    path = "/api/v1/admin/outbox/stats",
    tag = "admin",
    summary = "Delivery at a glance: undelivered, parked, delivered in the last minute (admin)",
    responses(
        (status = 200, description = "the figures", body = OutboxStatsView),
        (status = 401, description = "UNAUTHORIZED: missing, invalid or expired token", body = ErrorEnvelope),
        (status = 403, description = "FORBIDDEN: not an admin", body = ErrorEnvelope),
        (status = 503, description = "DEPENDENCY_UNAVAILABLE: PostgreSQL is down", body = ErrorEnvelope)
    ),
    security(("bearer" = []))
)]
pub async fn stats(caller: Caller, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(figures(&state, &caller).await?))
}

/// The delivery figures.
async fn figures(state: &AppState, caller: &Caller) -> Result<OutboxStatsView, ApiError> {
    caller.require(Role::Admin)?;
    let s = state.outbox_admin.stats().await?;
    Ok(OutboxStatsView {
        undelivered: s.undelivered,
        oldest_undelivered_age_seconds: s.oldest_undelivered_age.as_secs_f64(),
        parked: s.parked,
        oldest_parked_age_seconds: s.oldest_parked_age.as_secs_f64(),
        delivered_last_minute: s.delivered_last_minute,
    })
}

#[utoipa::path(
    post,
    path = "/api/v1/admin/outbox/{id}/retry",
    tag = "admin",
    summary = "Put a parked row back in line, attempts reset (admin; audited)",
    params(("id" = i64, Path, description = "outbox row id"), ("Idempotency-Key" = Option<String>, Header, nullable = false, min_length = 1, max_length = 255, pattern = "^[!-~]+$", description = "1 to 255 printable ASCII characters. Makes the POST safe to retry: the same key and request replay the first response (header Idempotent-Replayed: true)")),
    responses(
        (status = 200, description = "the row, now pending: it is delivered in its document's order", body = OutboxRowView),
        (status = 400, description = "VALIDATION_FAILED: the request body could not be read", body = ErrorEnvelope),
        (status = 401, description = "UNAUTHORIZED: missing, invalid or expired token", body = ErrorEnvelope),
        (status = 403, description = "FORBIDDEN: not an admin", body = ErrorEnvelope),
        (status = 404, description = "NOT_FOUND: no such outbox row", body = ErrorEnvelope),
        (status = 408, description = "REQUEST_TIMEOUT: the request body did not arrive within server.body_timeout_ms", body = ErrorEnvelope),
        (status = 409, description = "INVALID_STATE: the row is not parked; IDEMPOTENCY_IN_FLIGHT", body = ErrorEnvelope),
        (status = 413, description = "VALIDATION_FAILED: body too large", body = ErrorEnvelope),
        (status = 415, description = "VALIDATION_FAILED: a request body that is not application/json", body = ErrorEnvelope),
        (status = 422, description = "VALIDATION_FAILED: a malformed Idempotency-Key; IDEMPOTENCY_KEY_REUSED", body = ErrorEnvelope),
        (status = 503, description = "DEPENDENCY_UNAVAILABLE: PostgreSQL is down", body = ErrorEnvelope)
    ),
    security(("bearer" = []))
)]
pub async fn retry(
    req: HttpRequest,
    path: web::Path<String>,
    payload: web::Payload,
    caller: Caller,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    answer(req, &path, payload, caller, state, OutboxAction::Retry).await
}

#[utoipa::path(
    post,
    path = "/api/v1/admin/outbox/{id}/skip",
    tag = "admin",
    summary = "Drop a parked row: never published; its document's later events go (admin; audited)",
    params(("id" = i64, Path, description = "outbox row id"), ("Idempotency-Key" = Option<String>, Header, nullable = false, min_length = 1, max_length = 255, pattern = "^[!-~]+$", description = "1 to 255 printable ASCII characters. Makes the POST safe to retry: the same key and request replay the first response (header Idempotent-Replayed: true)")),
    responses(
        (status = 200, description = "the row, now skipped", body = OutboxRowView),
        (status = 400, description = "VALIDATION_FAILED: the request body could not be read", body = ErrorEnvelope),
        (status = 401, description = "UNAUTHORIZED: missing, invalid or expired token", body = ErrorEnvelope),
        (status = 403, description = "FORBIDDEN: not an admin", body = ErrorEnvelope),
        (status = 404, description = "NOT_FOUND: no such outbox row", body = ErrorEnvelope),
        (status = 408, description = "REQUEST_TIMEOUT: the request body did not arrive within server.body_timeout_ms", body = ErrorEnvelope),
        (status = 409, description = "INVALID_STATE: the row is not parked; IDEMPOTENCY_IN_FLIGHT", body = ErrorEnvelope),
        (status = 413, description = "VALIDATION_FAILED: body too large", body = ErrorEnvelope),
        (status = 415, description = "VALIDATION_FAILED: a request body that is not application/json", body = ErrorEnvelope),
        (status = 422, description = "VALIDATION_FAILED: a malformed Idempotency-Key; IDEMPOTENCY_KEY_REUSED", body = ErrorEnvelope),
        (status = 503, description = "DEPENDENCY_UNAVAILABLE: PostgreSQL is down", body = ErrorEnvelope)
    ),
    security(("bearer" = []))
)]
pub async fn skip(
    req: HttpRequest,
    path: web::Path<String>,
    payload: web::Payload,
    caller: Caller,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    answer(req, &path, payload, caller, state, OutboxAction::Skip).await
}

/// The JSON answer of an action. It reads no body, but one that is sent must be JSON and
/// counts in the `Idempotency-Key` fingerprint, as for a submit.
async fn answer(
    req: HttpRequest,
    id: &str,
    payload: web::Payload,
    caller: Caller,
    state: web::Data<AppState>,
    action: OutboxAction,
) -> Result<HttpResponse, ApiError> {
    caller.require(Role::Admin)?;
    let bytes = read_body(&req, payload, state.body).await?;
    let ran = act(&req, &state, caller, id, action, bytes).await?;
    Ok(post::respond(ran, StatusCode::OK, |row| {
        OutboxRowView::from(row)
    }))
}

/// Retries or skips a parked row, under the request's `Idempotency-Key` if it has one.
#[tracing::instrument(skip_all, fields(outbox_id = %id, action = action.as_str()))]
async fn act(
    req: &HttpRequest,
    state: &web::Data<AppState>,
    caller: Caller,
    id: &str,
    action: OutboxAction,
    bytes: Vec<u8>,
) -> Result<post::Ran<OutboxRecord>, ApiError> {
    caller.require(Role::Admin)?;
    let (st, id, admin) = (state.clone(), id.to_string(), caller.id.clone());
    post::run(req, state, &caller, &bytes, move |held_key| async move {
        let id: i64 = id
            .parse()
            .map_err(|_| ApiError::not_found("no such outbox row"))?;
        let request_id = request_id::current();
        let row = st
            .outbox_admin
            .act(id, action, &admin, &request_id, held_key.as_ref());
        Ok(row.await?)
    })
    .await
}
