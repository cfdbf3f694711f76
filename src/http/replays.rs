//! `/api/v1/admin/replays`: an admin sends the events again to one consumer's queue (the
//! delivered events as they were, or a snapshot of every published document), follows its
//! progress, and cancels it. Role `admin` only; the POST honours `Idempotency-Key` as every
//! POST does (`post::run`).

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use utoipa::openapi::schema::{Array, ArrayBuilder, ObjectBuilder, SchemaType, Type};
use uuid::Uuid;

use crate::domain::replay::{replayable, ReplayRequest, ReplaySelection, MAX_FILTER_ITEMS};
use crate::store::ReplayRecord;
use crate::web::auth::{Caller, Role};
use crate::web::body::{parse_json, read_body};
use crate::web::error::{ApiError, ErrorEnvelope};
use crate::web::post;
pub use crate::web::replay_view::{ReplayList, ReplayView, RECENT};
use crate::web::request_id;
use crate::web::state::AppState;

/// A replay to ask for.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StartReplay {
    /// history: the delivered events again, as they were (same event_id, same body);
    /// snapshot: one document.snapshot per published document.
    #[schema(pattern = "^(history|snapshot)$", example = "history")]
    mode: String,
    /// The one queue the events go to, through the default exchange; it must exist, and be
    /// one `replay.allowed_target_queues` allows (by default, a name starting with `kh.`).
    #[schema(
        min_length = 1,
        max_length = 255,
        pattern = "^[!-~]+$",
        example = "kh.search-indexer"
    )]
    target_queue: String,
    /// History: events written at or after this.
    #[serde(default)]
    from: Option<DateTime<Utc>>,
    /// History: events written before this.
    #[serde(default)]
    to: Option<DateTime<Utc>>,
    /// History: only these event types (published ones).
    #[serde(default)]
    #[schema(schema_with = event_types)]
    types: Option<Vec<String>>,
    /// Only these documents.
    #[serde(default)]
    #[schema(min_items = 1, max_items = 1000)]
    document_ids: Option<Vec<Uuid>>,
    /// Either mode: only the events (history) or published documents (snapshot) of these
    /// spaces, by key; a key no space has matches nothing.
    #[serde(default)]
    #[schema(schema_with = space_keys)]
    spaces: Option<Vec<String>>,
}

/// `spaces`: space keys, 1 to 1,000 of them, or null.
fn space_keys() -> Array {
    let item = ObjectBuilder::new()
        .schema_type(Type::String)
        .pattern(Some("^[a-z0-9][a-z0-9-]{0,62}$"));
    ArrayBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Array, Type::Null]))
        .items(item)
        .min_items(Some(1))
        .max_items(Some(MAX_FILTER_ITEMS))
        .description(Some(
            "Either mode: only the events (history) or published documents (snapshot) of \
             these spaces, by key; a key no space has matches nothing",
        ))
        .build()
}

/// `types`: published event types, 1 to 1,000 of them, or null.
fn event_types() -> Array {
    let names: Vec<&str> = replayable().map(|t| t.as_str()).collect();
    let item = ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(names));
    ArrayBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Array, Type::Null]))
        .items(item)
        .min_items(Some(1))
        .max_items(Some(MAX_FILTER_ITEMS))
        .description(Some("History: only these event types (published ones)"))
        .build()
}

#[utoipa::path(
    post,
    path = "/api/v1/admin/replays",
    tag = "admin",
    summary = "Send events again to one queue: history or snapshot (admin)",
    description = "Runs in the background, at most replay.max_per_sec, pausing while live events wait. One running replay per target queue, over every instance.",
    params(("Idempotency-Key" = Option<String>, Header, nullable = false, min_length = 1, max_length = 255, pattern = "^[!-~]+$", description = "1 to 255 printable ASCII characters. Makes the POST safe to retry: the same key and request replay the first response (header Idempotent-Replayed: true)")),
    request_body = StartReplay,
    responses(
        (status = 202, description = "the replay, running", body = ReplayView),
        (status = 400, description = "VALIDATION_FAILED: malformed JSON", body = ErrorEnvelope),
        (status = 401, description = "UNAUTHORIZED: missing, invalid or expired token", body = ErrorEnvelope),
        (status = 403, description = "FORBIDDEN: not an admin", body = ErrorEnvelope),
        (status = 408, description = "REQUEST_TIMEOUT: the request body did not arrive within server.body_timeout_ms", body = ErrorEnvelope),
        (status = 409, description = "REPLAY_RUNNING: a replay to this queue is running; IDEMPOTENCY_IN_FLIGHT", body = ErrorEnvelope),
        (status = 413, description = "VALIDATION_FAILED: body too large", body = ErrorEnvelope),
        (status = 415, description = "VALIDATION_FAILED: a request body that is not application/json", body = ErrorEnvelope),
        (status = 422, description = "VALIDATION_FAILED: a field out of its range (a space key that is not one), or a target queue that does not exist; REPLAY_TARGET_NOT_ALLOWED: a target queue replay.allowed_target_queues does not allow; IDEMPOTENCY_KEY_REUSED", body = ErrorEnvelope),
        (status = 503, description = "DEPENDENCY_UNAVAILABLE: PostgreSQL or RabbitMQ is down", body = ErrorEnvelope)
    ),
    security(("bearer" = []))
)]
pub async fn start(
    req: HttpRequest,
    payload: web::Payload,
    caller: Caller,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    caller.require(Role::Admin)?;
    let bytes = read_body(&req, payload, state.body).await?;
    let (st, body, admin) = (state.clone(), bytes.clone(), caller.id.clone());
    let ran = post::run(&req, &state, &caller, &bytes, move |held_key| async move {
        let input: StartReplay = parse_json(&body, false)?;
        let filters = ReplaySelection {
            from: input.from,
            to: input.to,
            types: input.types,
            document_ids: input.document_ids,
            spaces: input.spaces,
        };
        let request = ReplayRequest::parse(&input.mode, &input.target_queue, filters)
            .map_err(|e| ApiError::validation(e.to_string()))?;
        let request_id = request_id::current();
        let started = st
            .replays
            .start(request, &admin, &request_id, held_key.as_ref());
        Ok(started.await?)
    })
    .await?;
    let now = Utc::now();
    Ok(post::respond(ran, StatusCode::ACCEPTED, |r| {
        ReplayView::of(r, now)
    }))
}

#[utoipa::path(
    get,
    path = "/api/v1/admin/replays",
    tag = "admin",
    summary = "The running replays, then the 20 most recent others (admin)",
    responses(
        (status = 200, description = "the replays, newest first", body = ReplayList),
        (status = 401, description = "UNAUTHORIZED: missing, invalid or expired token", body = ErrorEnvelope),
        (status = 403, description = "FORBIDDEN: not an admin", body = ErrorEnvelope),
        (status = 503, description = "DEPENDENCY_UNAVAILABLE: PostgreSQL is down", body = ErrorEnvelope)
    ),
    security(("bearer" = []))
)]
pub async fn list(caller: Caller, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(recent(&state, &caller).await?))
}

/// The running and recent replays.
async fn recent(state: &AppState, caller: &Caller) -> Result<ReplayList, ApiError> {
    caller.require(Role::Admin)?;
    let now = Utc::now();
    let rows = state.replays.recent(RECENT).await?;
    Ok(ReplayList {
        items: rows.iter().map(|r| ReplayView::of(r, now)).collect(),
    })
}

fn replay_id(path: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(path).map_err(|_| ApiError::not_found("no such replay"))
}

#[utoipa::path(
    get,
    path = "/api/v1/admin/replays/{id}",
    tag = "admin",
    summary = "A replay and its progress (admin)",
    params(("id" = Uuid, Path, description = "replay id")),
    responses(
        (status = 200, description = "the replay", body = ReplayView),
        (status = 401, description = "UNAUTHORIZED: missing, invalid or expired token", body = ErrorEnvelope),
        (status = 403, description = "FORBIDDEN: not an admin", body = ErrorEnvelope),
        (status = 404, description = "NOT_FOUND: no such replay", body = ErrorEnvelope),
        (status = 503, description = "DEPENDENCY_UNAVAILABLE: PostgreSQL is down", body = ErrorEnvelope)
    ),
    security(("bearer" = []))
)]
pub async fn get(
    path: web::Path<String>,
    caller: Caller,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    caller.require(Role::Admin)?;
    let replay = state.replays.get(replay_id(&path)?).await?;
    Ok(HttpResponse::Ok().json(ReplayView::of(&replay, Utc::now())))
}

#[utoipa::path(
    delete,
    path = "/api/v1/admin/replays/{id}",
    tag = "admin",
    summary = "Cancel a running replay: it stops before its next batch (admin)",
    params(("id" = Uuid, Path, description = "replay id")),
    responses(
        (status = 200, description = "the replay, cancelled (also when it already was)", body = ReplayView),
        (status = 401, description = "UNAUTHORIZED: missing, invalid or expired token", body = ErrorEnvelope),
        (status = 403, description = "FORBIDDEN: not an admin", body = ErrorEnvelope),
        (status = 404, description = "NOT_FOUND: no such replay", body = ErrorEnvelope),
        (status = 409, description = "INVALID_STATE: the replay is done or failed", body = ErrorEnvelope),
        (status = 503, description = "DEPENDENCY_UNAVAILABLE: PostgreSQL is down", body = ErrorEnvelope)
    ),
    security(("bearer" = []))
)]
pub async fn cancel(
    path: web::Path<String>,
    caller: Caller,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let replay = cancellation(&state, &caller, &path).await?;
    Ok(HttpResponse::Ok().json(ReplayView::of(&replay, Utc::now())))
}

/// Cancels a replay.
async fn cancellation(
    state: &AppState,
    caller: &Caller,
    id: &str,
) -> Result<ReplayRecord, ApiError> {
    caller.require(Role::Admin)?;
    Ok(state.replays.cancel(replay_id(id)?, &caller.id).await?)
}
