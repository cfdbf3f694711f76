//! A document's archive (`POST /api/v1/documents/{id}/archive`), with its optional reason.

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;
use uuid::Uuid;

use crate::domain::ArchiveReason;
use crate::usecases::Context;
use crate::web::auth::Caller;
use crate::web::body::{parse_json, read_body};
use crate::web::error::{ApiError, ErrorEnvelope};
use crate::web::fields;
use crate::web::post;
use crate::web::state::AppState;
use crate::web::views::ArchiveView;

/// An archive's optional body.
#[derive(Deserialize, Default, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ArchiveBody {
    #[schema(schema_with = fields::archive_reason)]
    reason: Option<String>,
    /// Archive only if the document is still at this version (what the caller saw); 409
    /// INVALID_STATE otherwise.
    #[schema(minimum = 1, maximum = 9007199254740991.0)]
    #[serde(default, deserialize_with = "super::policies::whole_number")]
    version: Option<i64>,
}

#[utoipa::path(
    post,
    path = "/api/v1/documents/{id}/archive",
    tag = "documents",
    summary = "Archive a document (its author or an admin): terminal, a pending review withdrawn, out of the published set",
    params(("id" = Uuid, Path, description = "document id"), ("If-Match" = Option<String>, Header, nullable = false, pattern = r#"^[ \t]*(\*|[ \t,]*(W/)?"[!#-~]*"[ \t]*(,[ \t,]*(W/)?"[!#-~]*"[ \t]*)*[ \t,]*)[ \t]*$"#, description = "the ETag of the version the caller read (\"3\"), or *: the write is refused 412 VERSION_MISMATCH unless the document is still at it (checked under the row lock); required (428) when http.require_if_match is on"), ("Idempotency-Key" = Option<String>, Header, nullable = false, min_length = 1, max_length = 255, pattern = "^[!-~]+$", description = "1 to 255 printable ASCII characters. Makes the POST safe to retry: the same key and request replay the first response (header Idempotent-Replayed: true)")),
    request_body = Option<ArchiveBody>,
    responses(
        (status = 200, description = "archived", body = ArchiveView),
        (status = 400, description = "VALIDATION_FAILED: malformed JSON, or an If-Match that is not entity tags", body = ErrorEnvelope),
        (status = 401, description = "missing, invalid or expired token", body = ErrorEnvelope),
        (status = 403, description = "FORBIDDEN: neither its author nor an admin", body = ErrorEnvelope),
        (status = 404, description = "NOT_FOUND", body = ErrorEnvelope),
        (status = 409, description = "INVALID_STATE (archived already, or not at the version given), LOCK_NOT_ACQUIRED (with Retry-After), LOCK_LOST or IDEMPOTENCY_IN_FLIGHT", body = ErrorEnvelope),
        (status = 408, description = "REQUEST_TIMEOUT: the request body did not arrive within server.body_timeout_ms", body = ErrorEnvelope),
        (status = 412, description = "VERSION_MISMATCH: the document is no longer at the If-Match version", body = ErrorEnvelope),
        (status = 413, description = "VALIDATION_FAILED: body too large", body = ErrorEnvelope),
        (status = 428, description = "PRECONDITION_REQUIRED: http.require_if_match is on and no If-Match came", body = ErrorEnvelope),
        (status = 415, description = "VALIDATION_FAILED: a request body that is not application/json", body = ErrorEnvelope),
        (status = 422, description = "VALIDATION_FAILED, or IDEMPOTENCY_KEY_REUSED", body = ErrorEnvelope),
        (status = 503, description = "DEPENDENCY_UNAVAILABLE: PostgreSQL is down", body = ErrorEnvelope)
    ),
    security(("bearer" = []))
)]
#[tracing::instrument(skip_all, fields(document_id = %path))]
pub async fn archive(
    req: HttpRequest,
    path: web::Path<Uuid>,
    payload: web::Payload,
    caller: Caller,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let ctx = state.conditional_context(&req, &caller)?;
    let bytes = read_body(&req, payload, state.body).await?;
    let document_id = *path;
    let (st, body) = (state.clone(), bytes.clone());
    let ran = post::run(&req, &state, &caller, &bytes, move |held_key| async move {
        let input: ArchiveBody = parse_json(&body, true)?;
        let reason = input
            .reason
            .as_deref()
            .map(ArchiveReason::parse)
            .transpose()
            .map_err(|e| ApiError::validation(e.to_string()))?;
        if input.version.is_some_and(|v| v < 1) {
            return Err(ApiError::validation("version: must be at least 1"));
        }
        let ctx = Context { held_key, ..ctx };
        Ok(st
            .reviews
            .archive(ctx, document_id, reason, input.version)
            .await?)
    })
    .await?;
    Ok(post::respond_document(
        ran,
        StatusCode::OK,
        ArchiveView::of,
        |a| a.document.version,
    ))
}
