//! The machine-readable description of the events, at the root and open to anyone (like
//! `/openapi.json`): `/asyncapi.json`, the AsyncAPI 3 document, and
//! `/schemas/events/{type}.json`, each event type's JSON Schema (the URL every message
//! names in its `ce-dataschema` header). Both are made once, at start-up, from the one
//! source of the schemas (`outbox::schemas`).

use actix_web::{web, HttpResponse};

use crate::web::error::ApiError;
use crate::web::state::AppState;

fn json(body: &[u8]) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/json")
        .body(body.to_vec())
}

/// The AsyncAPI 3 description of the events.
#[utoipa::path(
    get,
    path = "/asyncapi.json",
    tag = "operations",
    summary = "The AsyncAPI 3 description of the events",
    description = "The topic exchange, a channel per routing key, the operations the service \
                   sends, each message's headers (CloudEvents `ce-*`, `traceparent`, \
                   `tracestate`, `kh-replay-id`) and payload schema, and the replay path (the \
                   default exchange, to one target queue).",
    responses((status = 200, description = "AsyncAPI 3.0 JSON", content_type = "application/json"))
)]
pub async fn asyncapi_json(state: web::Data<AppState>) -> HttpResponse {
    json(state.events.asyncapi())
}

/// One event type's JSON Schema: the envelope with that type's `data`.
#[utoipa::path(
    get,
    path = "/schemas/events/{type}.json",
    tag = "operations",
    summary = "The JSON Schema of one event type (each message's ce-dataschema)",
    params(("type" = String, Path, description = "An event type, e.g. document.approved")),
    responses(
        (status = 200, description = "JSON Schema, draft 2020-12", content_type = "application/json"),
        (status = 404, description = "no such event type", body = crate::web::error::ErrorEnvelope)
    )
)]
pub async fn event_schema(
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let ty = path.into_inner();
    match state.events.schema(&ty) {
        Some(body) => Ok(json(body)),
        None => Err(ApiError::not_found("no such event type")),
    }
}
