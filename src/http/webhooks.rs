//! `/api/v1/spaces/{key}/webhooks`: a space's Standard Webhooks endpoints (its space
//! admins' and the platform admin's): registered with a secret shown once, listed,
//! enabled or disabled, given a new secret (the old one signs beside it for a day), and
//! removed. Their delivery logs are in `deliveries`.

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;
use utoipa::openapi::schema::{Array, ArrayBuilder, ObjectBuilder, Type};
use uuid::Uuid;

use super::spaces::key_of;
use crate::domain::webhooks::MAX_EVENT_TYPES;
use crate::usecases::WebhookService;
use crate::web::auth::Caller;
use crate::web::body::{parse_json, read_body};
use crate::web::error::{ApiError, ErrorEnvelope};
use crate::web::state::AppState;
use crate::web::webhook_views::{WebhookList, WebhookView, WebhookWithSecret};

/// An endpoint to register.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateWebhook {
    /// Where deliveries are POSTed: https (http only in development), no user or password,
    /// no fragment, at most 2048 bytes, not an address inside the service's network.
    #[schema(min_length = 1, max_length = 2048)]
    url: String,
    #[schema(schema_with = event_type_names)]
    event_types: Vec<String>,
}

/// `event_types`: 1 to 32 of the document events the service publishes.
fn event_type_names() -> Array {
    let item = ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(WebhookService::event_types()));
    ArrayBuilder::new()
        .items(item)
        .min_items(Some(1))
        .max_items(Some(MAX_EVENT_TYPES))
        .description(Some(
            "The event types to send it (a type given twice counts once; see /asyncapi.json)",
        ))
        .build()
}

/// What to change of an endpoint.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateWebhook {
    /// false disables it (nothing is sent to it; events meanwhile are not queued for it);
    /// true enables it again and forgets its failures.
    enabled: bool,
}

/// An endpoint's id from a path: 404 when it is not one.
pub(super) fn webhook_of(segment: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(segment).map_err(|_| ApiError::not_found("no such webhook in this space"))
}

#[utoipa::path(
    post,
    path = "/api/v1/spaces/{key}/webhooks",
    tag = "webhooks",
    summary = "Register a webhook endpoint for a space's events (space_admin)",
    description = "Answers with the endpoint's signing secret, shown this once. Not idempotent: a retry registers a second endpoint (list them and delete the extra one).",
    params(("key" = String, Path, pattern = "^[a-z0-9][a-z0-9-]{0,62}$", description = "the space's key")),
    request_body = CreateWebhook,
    responses(
        (status = 201, description = "the endpoint, with its secret", body = WebhookWithSecret),
        (status = 400, description = "VALIDATION_FAILED: malformed JSON", body = ErrorEnvelope),
        (status = 401, description = "UNAUTHORIZED: missing, invalid or expired token", body = ErrorEnvelope),
        (status = 403, description = "FORBIDDEN: a member of the space without space_admin there", body = ErrorEnvelope),
        (status = 404, description = "NOT_FOUND: no such space, or the caller holds no role in it", body = ErrorEnvelope),
        (status = 408, description = "REQUEST_TIMEOUT: the request body did not arrive within server.body_timeout_ms", body = ErrorEnvelope),
        (status = 409, description = "INVALID_STATE: the space has 20 endpoints already", body = ErrorEnvelope),
        (status = 413, description = "VALIDATION_FAILED: body too large", body = ErrorEnvelope),
        (status = 415, description = "VALIDATION_FAILED: a request body that is not application/json", body = ErrorEnvelope),
        (status = 422, description = "VALIDATION_FAILED, naming the field: not a space key, a URL that is not https or points inside the service's network, an unknown event type", body = ErrorEnvelope),
        (status = 503, description = "DEPENDENCY_UNAVAILABLE: PostgreSQL is down", body = ErrorEnvelope)
    ),
    security(("bearer" = []))
)]
pub async fn create(
    req: HttpRequest,
    path: web::Path<String>,
    payload: web::Payload,
    caller: Caller,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let key = key_of(&path)?;
    let bytes = read_body(&req, payload, state.body).await?;
    let input: CreateWebhook = parse_json(&bytes, false)?;
    let ctx = state.context(&req, &caller);
    let made = state
        .webhooks
        .create(&ctx, &key, &input.url, &input.event_types)
        .await?;
    Ok(HttpResponse::build(StatusCode::CREATED).json(WebhookWithSecret::from(&made)))
}

#[utoipa::path(
    get,
    path = "/api/v1/spaces/{key}/webhooks",
    tag = "webhooks",
    summary = "A space's webhook endpoints, oldest first (space_admin)",
    params(("key" = String, Path, pattern = "^[a-z0-9][a-z0-9-]{0,62}$", description = "the space's key")),
    responses(
        (status = 200, description = "the endpoints (at most 20), without their secrets", body = WebhookList),
        (status = 401, description = "UNAUTHORIZED: missing, invalid or expired token", body = ErrorEnvelope),
        (status = 403, description = "FORBIDDEN: a member of the space without space_admin there", body = ErrorEnvelope),
        (status = 404, description = "NOT_FOUND: no such space, or the caller holds no role in it", body = ErrorEnvelope),
        (status = 422, description = "VALIDATION_FAILED: not a space key", body = ErrorEnvelope),
        (status = 503, description = "DEPENDENCY_UNAVAILABLE: PostgreSQL is down", body = ErrorEnvelope)
    ),
    security(("bearer" = []))
)]
pub async fn list(
    path: web::Path<String>,
    caller: Caller,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let key = key_of(&path)?;
    let rows = state.webhooks.list(&caller.access, &key).await?;
    Ok(HttpResponse::Ok().json(WebhookList {
        items: rows.iter().map(WebhookView::from).collect(),
    }))
}

#[utoipa::path(
    get,
    path = "/api/v1/spaces/{key}/webhooks/{webhook_id}",
    tag = "webhooks",
    summary = "One webhook endpoint (space_admin)",
    params(
        ("key" = String, Path, pattern = "^[a-z0-9][a-z0-9-]{0,62}$", description = "the space's key"),
        ("webhook_id" = Uuid, Path, description = "the endpoint's id")
    ),
    responses(
        (status = 200, description = "the endpoint, without its secret", body = WebhookView),
        (status = 401, description = "UNAUTHORIZED: missing, invalid or expired token", body = ErrorEnvelope),
        (status = 403, description = "FORBIDDEN: a member of the space without space_admin there", body = ErrorEnvelope),
        (status = 404, description = "NOT_FOUND: no such space (or no role in it), or no such endpoint there", body = ErrorEnvelope),
        (status = 422, description = "VALIDATION_FAILED: not a space key", body = ErrorEnvelope),
        (status = 503, description = "DEPENDENCY_UNAVAILABLE: PostgreSQL is down", body = ErrorEnvelope)
    ),
    security(("bearer" = []))
)]
pub async fn get(
    path: web::Path<(String, String)>,
    caller: Caller,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let key = key_of(&path.0)?;
    let id = webhook_of(&path.1)?;
    let row = state.webhooks.get(&caller.access, &key, id).await?;
    Ok(HttpResponse::Ok().json(WebhookView::from(&row)))
}

#[utoipa::path(
    patch,
    path = "/api/v1/spaces/{key}/webhooks/{webhook_id}",
    tag = "webhooks",
    summary = "Enable or disable a webhook endpoint (space_admin)",
    params(
        ("key" = String, Path, pattern = "^[a-z0-9][a-z0-9-]{0,62}$", description = "the space's key"),
        ("webhook_id" = Uuid, Path, description = "the endpoint's id")
    ),
    request_body = UpdateWebhook,
    responses(
        (status = 200, description = "the endpoint", body = WebhookView),
        (status = 400, description = "VALIDATION_FAILED: malformed JSON", body = ErrorEnvelope),
        (status = 401, description = "UNAUTHORIZED: missing, invalid or expired token", body = ErrorEnvelope),
        (status = 403, description = "FORBIDDEN: a member of the space without space_admin there", body = ErrorEnvelope),
        (status = 404, description = "NOT_FOUND: no such space (or no role in it), or no such endpoint there", body = ErrorEnvelope),
        (status = 408, description = "REQUEST_TIMEOUT: the request body did not arrive within server.body_timeout_ms", body = ErrorEnvelope),
        (status = 413, description = "VALIDATION_FAILED: body too large", body = ErrorEnvelope),
        (status = 415, description = "VALIDATION_FAILED: a request body that is not application/json", body = ErrorEnvelope),
        (status = 422, description = "VALIDATION_FAILED: not a space key, or enabled missing or not a boolean", body = ErrorEnvelope),
        (status = 503, description = "DEPENDENCY_UNAVAILABLE: PostgreSQL is down", body = ErrorEnvelope)
    ),
    security(("bearer" = []))
)]
pub async fn update(
    req: HttpRequest,
    path: web::Path<(String, String)>,
    payload: web::Payload,
    caller: Caller,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let key = key_of(&path.0)?;
    let id = webhook_of(&path.1)?;
    let bytes = read_body(&req, payload, state.body).await?;
    let input: UpdateWebhook = parse_json(&bytes, false)?;
    let ctx = state.context(&req, &caller);
    let row = state
        .webhooks
        .set_enabled(&ctx, &key, id, input.enabled)
        .await?;
    Ok(HttpResponse::Ok().json(WebhookView::from(&row)))
}

#[utoipa::path(
    delete,
    path = "/api/v1/spaces/{key}/webhooks/{webhook_id}",
    tag = "webhooks",
    summary = "Remove a webhook endpoint and its delivery log (space_admin)",
    params(
        ("key" = String, Path, pattern = "^[a-z0-9][a-z0-9-]{0,62}$", description = "the space's key"),
        ("webhook_id" = Uuid, Path, description = "the endpoint's id")
    ),
    responses(
        (status = 200, description = "the endpoint removed", body = WebhookView),
        (status = 401, description = "UNAUTHORIZED: missing, invalid or expired token", body = ErrorEnvelope),
        (status = 403, description = "FORBIDDEN: a member of the space without space_admin there", body = ErrorEnvelope),
        (status = 404, description = "NOT_FOUND: no such space (or no role in it), or no such endpoint there", body = ErrorEnvelope),
        (status = 422, description = "VALIDATION_FAILED: not a space key", body = ErrorEnvelope),
        (status = 503, description = "DEPENDENCY_UNAVAILABLE: PostgreSQL is down", body = ErrorEnvelope)
    ),
    security(("bearer" = []))
)]
pub async fn delete(
    req: HttpRequest,
    path: web::Path<(String, String)>,
    caller: Caller,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let key = key_of(&path.0)?;
    let id = webhook_of(&path.1)?;
    let ctx = state.context(&req, &caller);
    let row = state.webhooks.delete(&ctx, &key, id).await?;
    Ok(HttpResponse::Ok().json(WebhookView::from(&row)))
}

#[utoipa::path(
    post,
    path = "/api/v1/spaces/{key}/webhooks/{webhook_id}/rotate",
    tag = "webhooks",
    summary = "Give a webhook endpoint a new signing secret (space_admin)",
    description = "Answers with the new secret, shown this once. Every delivery is signed with both the new and the old secret for webhooks.secret_overlap_secs (24 h), so the receiver can switch at any time in that window.",
    params(
        ("key" = String, Path, pattern = "^[a-z0-9][a-z0-9-]{0,62}$", description = "the space's key"),
        ("webhook_id" = Uuid, Path, description = "the endpoint's id")
    ),
    responses(
        (status = 200, description = "the endpoint, with its new secret", body = WebhookWithSecret),
        (status = 401, description = "UNAUTHORIZED: missing, invalid or expired token", body = ErrorEnvelope),
        (status = 403, description = "FORBIDDEN: a member of the space without space_admin there", body = ErrorEnvelope),
        (status = 404, description = "NOT_FOUND: no such space (or no role in it), or no such endpoint there", body = ErrorEnvelope),
        (status = 422, description = "VALIDATION_FAILED: not a space key", body = ErrorEnvelope),
        (status = 503, description = "DEPENDENCY_UNAVAILABLE: PostgreSQL is down", body = ErrorEnvelope)
    ),
    security(("bearer" = []))
)]
pub async fn rotate(
    req: HttpRequest,
    path: web::Path<(String, String)>,
    caller: Caller,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let key = key_of(&path.0)?;
    let id = webhook_of(&path.1)?;
    let ctx = state.context(&req, &caller);
    let rotated = state.webhooks.rotate(&ctx, &key, id).await?;
    Ok(HttpResponse::Ok().json(WebhookWithSecret::from(&rotated)))
}
