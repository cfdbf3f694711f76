//! A document's submission for review and its withdrawal: `POST
//! /api/v1/documents/{id}/submit` opens a review, `POST .../withdraw` takes the pending one
//! back (the document returns to DRAFT). Both under the outer lock, as votes are.

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use uuid::Uuid;

use crate::usecases::Context;
use crate::web::auth::{Caller, Role};
use crate::web::body::read_body;
use crate::web::error::{ApiError, ErrorEnvelope};
use crate::web::post;
use crate::web::state::AppState;
use crate::web::views::TransitionView;

#[utoipa::path(
    post,
    path = "/api/v1/documents/{id}/submit",
    tag = "documents",
    summary = "Submit for review (its author)",
    params(("id" = Uuid, Path, description = "document id"), ("If-Match" = Option<String>, Header, nullable = false, pattern = r#"^[ \t]*(\*|[ \t,]*(W/)?"[!#-~]*"[ \t]*(,[ \t,]*(W/)?"[!#-~]*"[ \t]*)*[ \t,]*)[ \t]*$"#, description = "the ETag of the version the caller read (\"3\"), or *: the write is refused 412 VERSION_MISMATCH unless the document is still at it (checked under the row lock); required (428) when http.require_if_match is on"), ("Idempotency-Key" = Option<String>, Header, nullable = false, min_length = 1, max_length = 255, pattern = "^[!-~]+$", description = "1 to 255 printable ASCII characters. Makes the POST safe to retry: the same key and request replay the first response (header Idempotent-Replayed: true)")),
    responses(
        (status = 201, description = "submitted: a new pending review", body = TransitionView),
        (status = 400, description = "VALIDATION_FAILED: the request body could not be read, or an If-Match that is not entity tags", body = ErrorEnvelope),
        (status = 401, description = "missing, invalid or expired token", body = ErrorEnvelope),
        (status = 403, description = "FORBIDDEN: wrong role, or a draft never submitted of someone else's", body = ErrorEnvelope),
        (status = 404, description = "NOT_FOUND", body = ErrorEnvelope),
        (status = 409, description = "LOCK_NOT_ACQUIRED (with Retry-After), INVALID_STATE, LOCK_LOST or IDEMPOTENCY_IN_FLIGHT", body = ErrorEnvelope),
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
pub async fn submit(
    req: HttpRequest,
    path: web::Path<Uuid>,
    payload: web::Payload,
    caller: Caller,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    caller.require(Role::Author)?;
    let ctx = state.conditional_context(&req, &caller)?;
    let bytes = read_body(&req, payload, state.body).await?;
    let document_id = *path;
    let st = state.clone();
    let ran = post::run(&req, &state, &caller, &bytes, move |held_key| async move {
        let ctx = Context { held_key, ..ctx };
        Ok(st.reviews.submit(ctx, document_id).await?)
    })
    .await?;
    Ok(post::respond_document(
        ran,
        StatusCode::CREATED,
        TransitionView::of,
        |t| t.document.version,
    ))
}

#[utoipa::path(
    post,
    path = "/api/v1/documents/{id}/withdraw",
    tag = "documents",
    summary = "Withdraw the pending review (its author): the document back to DRAFT",
    description = "The review becomes WITHDRAWN with the votes cast on it; its claims end. \
                   Against a final approval at the same moment, the row lock decides: one \
                   succeeds, the other is 409 INVALID_STATE.",
    params(("id" = Uuid, Path, description = "document id"), ("If-Match" = Option<String>, Header, nullable = false, pattern = r#"^[ \t]*(\*|[ \t,]*(W/)?"[!#-~]*"[ \t]*(,[ \t,]*(W/)?"[!#-~]*"[ \t]*)*[ \t,]*)[ \t]*$"#, description = "the ETag of the version the caller read (\"3\"), or *: the write is refused 412 VERSION_MISMATCH unless the document is still at it (checked under the row lock); required (428) when http.require_if_match is on"), ("Idempotency-Key" = Option<String>, Header, nullable = false, min_length = 1, max_length = 255, pattern = "^[!-~]+$", description = "1 to 255 printable ASCII characters. Makes the POST safe to retry: the same key and request replay the first response (header Idempotent-Replayed: true)")),
    responses(
        (status = 200, description = "withdrawn", body = TransitionView),
        (status = 400, description = "VALIDATION_FAILED: the request body could not be read, or an If-Match that is not entity tags", body = ErrorEnvelope),
        (status = 401, description = "missing, invalid or expired token", body = ErrorEnvelope),
        (status = 403, description = "FORBIDDEN: wrong role, or a draft never submitted of someone else's", body = ErrorEnvelope),
        (status = 404, description = "NOT_FOUND", body = ErrorEnvelope),
        (status = 409, description = "LOCK_NOT_ACQUIRED (with Retry-After), INVALID_STATE, LOCK_LOST or IDEMPOTENCY_IN_FLIGHT", body = ErrorEnvelope),
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
pub async fn withdraw(
    req: HttpRequest,
    path: web::Path<Uuid>,
    payload: web::Payload,
    caller: Caller,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    caller.require(Role::Author)?;
    let ctx = state.conditional_context(&req, &caller)?;
    let bytes = read_body(&req, payload, state.body).await?;
    let document_id = *path;
    let st = state.clone();
    let ran = post::run(&req, &state, &caller, &bytes, move |held_key| async move {
        let ctx = Context { held_key, ..ctx };
        Ok(st.reviews.withdraw(ctx, document_id).await?)
    })
    .await?;
    Ok(post::respond_document(
        ran,
        StatusCode::OK,
        TransitionView::of,
        |t| t.document.version,
    ))
}
