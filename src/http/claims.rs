//! Claims on reviews, the seats a reviewer takes on a stage: `POST`/`DELETE
//! /api/v1/reviews/{id}/claim` (a reviewer's own), and `DELETE
//! /api/v1/reviews/{id}/claims/{reviewer_id}` (an admin's end of anyone's).

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use uuid::Uuid;

use crate::usecases::Context;
use crate::web::auth::{Caller, Role, Voter};
use crate::web::body::{parse_json, read_body};
use crate::web::error::{ApiError, ErrorEnvelope};
use crate::web::post;
use crate::web::state::AppState;
use crate::web::views::ReviewView;

/// A claim takes no body: nothing, `null` or `{}`.
#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct ClaimBody {}

#[utoipa::path(
    post,
    path = "/api/v1/reviews/{id}/claim",
    tag = "reviews",
    summary = "Claim a seat on the review's current stage, or renew one's claim (eligible reviewer)",
    description = "A stage has as many seats as approvals it still needs. A claim lasts the \
                   policy's claim_ttl_secs from when it was taken or renewed; while every seat \
                   is held, an approval from someone holding none is refused.",
    params(("id" = Uuid, Path, description = "review id"), ("Idempotency-Key" = Option<String>, Header, nullable = false, min_length = 1, max_length = 255, pattern = "^[!-~]+$", description = "1 to 255 printable ASCII characters. Makes the POST safe to retry: the same key and request replay the first response (header Idempotent-Replayed: true)")),
    responses(
        (status = 200, description = "the review with its claims", body = ReviewView),
        (status = 400, description = "VALIDATION_FAILED: the request body could not be read", body = ErrorEnvelope),
        (status = 401, description = "missing, invalid or expired token", body = ErrorEnvelope),
        (status = 403, description = "FORBIDDEN, SELF_REVIEW_FORBIDDEN or NOT_ELIGIBLE", body = ErrorEnvelope),
        (status = 404, description = "NOT_FOUND", body = ErrorEnvelope),
        (status = 409, description = "INVALID_STATE, ALREADY_VOTED, REVIEW_CLAIMED (with Retry-After, the holders named) or IDEMPOTENCY_IN_FLIGHT", body = ErrorEnvelope),
        (status = 408, description = "REQUEST_TIMEOUT: the request body did not arrive within server.body_timeout_ms", body = ErrorEnvelope),
        (status = 413, description = "VALIDATION_FAILED: body too large", body = ErrorEnvelope),
        (status = 415, description = "VALIDATION_FAILED: a request body that is not application/json", body = ErrorEnvelope),
        (status = 422, description = "VALIDATION_FAILED, or IDEMPOTENCY_KEY_REUSED", body = ErrorEnvelope),
        (status = 503, description = "DEPENDENCY_UNAVAILABLE: PostgreSQL is down", body = ErrorEnvelope)
    ),
    security(("bearer" = []))
)]
#[tracing::instrument(skip_all, fields(review_id = %path))]
pub async fn claim(
    req: HttpRequest,
    path: web::Path<Uuid>,
    payload: web::Payload,
    Voter(caller): Voter,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    caller.require(Role::Reviewer)?;
    let bytes = read_body(&req, payload, state.body).await?;
    let review_id = *path;
    let (st, body) = (state.clone(), bytes.clone());
    let ctx = Context {
        groups: caller.groups.clone(),
        ..state.context(&req, &caller)
    };
    let ran = post::run(&req, &state, &caller, &bytes, move |held_key| async move {
        let _: ClaimBody = parse_json(&body, true)?;
        let ctx = Context { held_key, ..ctx };
        Ok(st.reviews.claim(ctx, review_id).await?)
    })
    .await?;
    Ok(post::respond(ran, StatusCode::OK, |r| ReviewView::from(r)))
}

#[utoipa::path(
    delete,
    path = "/api/v1/reviews/{id}/claim",
    tag = "reviews",
    summary = "Give one's claim back (reviewer)",
    description = "Frees the caller's seat. Giving back a claim one does not hold changes nothing.",
    params(("id" = Uuid, Path, description = "review id")),
    responses(
        (status = 200, description = "the review with its claims", body = ReviewView),
        (status = 401, description = "missing, invalid or expired token", body = ErrorEnvelope),
        (status = 403, description = "FORBIDDEN: not a reviewer", body = ErrorEnvelope),
        (status = 404, description = "NOT_FOUND", body = ErrorEnvelope),
        (status = 503, description = "DEPENDENCY_UNAVAILABLE: PostgreSQL is down", body = ErrorEnvelope)
    ),
    security(("bearer" = []))
)]
#[tracing::instrument(skip_all, fields(review_id = %path))]
pub async fn give_back(
    req: HttpRequest,
    path: web::Path<Uuid>,
    caller: Caller,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    caller.require(Role::Reviewer)?;
    let ctx = state.context(&req, &caller);
    let review = state.reviews.give_back(ctx, *path).await?;
    Ok(HttpResponse::Ok().json(ReviewView::from(&review)))
}

#[utoipa::path(
    delete,
    path = "/api/v1/reviews/{id}/claims/{reviewer_id}",
    tag = "reviews",
    summary = "End a reviewer's claim (admin; audited)",
    params(("id" = Uuid, Path, description = "review id"), ("reviewer_id" = String, Path, description = "the holder's user id (sub)")),
    responses(
        (status = 200, description = "the review with its claims", body = ReviewView),
        (status = 401, description = "missing, invalid or expired token", body = ErrorEnvelope),
        (status = 403, description = "FORBIDDEN: not an admin", body = ErrorEnvelope),
        (status = 404, description = "NOT_FOUND: no such review, or the reviewer holds no live claim on it", body = ErrorEnvelope),
        (status = 503, description = "DEPENDENCY_UNAVAILABLE: PostgreSQL is down", body = ErrorEnvelope)
    ),
    security(("bearer" = []))
)]
#[tracing::instrument(skip_all)]
pub async fn end_claim(
    req: HttpRequest,
    path: web::Path<(Uuid, String)>,
    caller: Caller,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    caller.require_space_admin()?;
    let (review_id, reviewer) = path.into_inner();
    let ctx = state.context(&req, &caller);
    let review = state.reviews.end_claim(ctx, review_id, reviewer).await?;
    Ok(HttpResponse::Ok().json(ReviewView::from(&review)))
}
