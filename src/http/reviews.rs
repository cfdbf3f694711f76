//! `/api/v1/reviews` handlers.

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;
use uuid::Uuid;

use crate::domain::{Comment, Decision, RejectReason, ReviewStatus, SpaceKey, Transitioned};
use crate::store::{QueueFilter, QueueOrder};
use crate::usecases::Context;
use crate::web::auth::{Caller, Role, Voter};
use crate::web::body::{parse_json, read_body};
use crate::web::error::{ApiError, ErrorEnvelope};
use crate::web::fields;
use crate::web::paging;
use crate::web::post;
use crate::web::queue;
use crate::web::state::AppState;
use crate::web::views::{ReviewPage, TransitionView};

#[derive(Deserialize, Default, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ApproveBody {
    #[schema(schema_with = fields::comment)]
    comment: Option<String>,
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RejectBody {
    #[schema(schema_with = fields::reason)]
    reason: String,
}

#[derive(Deserialize, Default)]
pub struct ReviewQuery {
    pub space: Option<String>,
    pub status: Option<String>,
    pub limit: Option<i64>,
    pub cursor: Option<String>,
    pub overdue: Option<bool>,
    pub eligible: Option<String>,
    pub order: Option<String>,
}

/// What a 409 of a vote may be, for the OpenAPI descriptions.
const VOTE_CONFLICTS: &str = "LOCK_NOT_ACQUIRED (with Retry-After), INVALID_STATE, LOCK_LOST, ALREADY_VOTED, REVIEW_CLAIMED (with Retry-After; every seat held by others) or IDEMPOTENCY_IN_FLIGHT";

#[utoipa::path(
    post,
    path = "/api/v1/reviews/{id}/approve",
    tag = "reviews",
    summary = "Approve in the current stage (reviewer, not the author)",
    description = "A vote: recorded while the stage needs more approvals, completing the \
                   stage (the review moves to the next), or approving the review and the \
                   document on the last stage's last approval. One vote per person per review.",
    params(("id" = Uuid, Path, description = "review id"), ("Idempotency-Key" = Option<String>, Header, nullable = false, min_length = 1, max_length = 255, pattern = "^[!-~]+$", description = "1 to 255 printable ASCII characters. Makes the POST safe to retry: the same key and request replay the first response (header Idempotent-Replayed: true)")),
    request_body = Option<ApproveBody>,
    responses(
        (status = 200, description = "approved", body = TransitionView),
        (status = 400, description = "VALIDATION_FAILED: malformed JSON", body = ErrorEnvelope),
        (status = 401, description = "missing, invalid or expired token", body = ErrorEnvelope),
        (status = 403, description = "FORBIDDEN, SELF_REVIEW_FORBIDDEN or NOT_ELIGIBLE (not in the current stage's groups)", body = ErrorEnvelope),
        (status = 404, description = "NOT_FOUND", body = ErrorEnvelope),
        (status = 409, description = VOTE_CONFLICTS, body = ErrorEnvelope),
        (status = 408, description = "REQUEST_TIMEOUT: the request body did not arrive within server.body_timeout_ms", body = ErrorEnvelope),
        (status = 413, description = "VALIDATION_FAILED: body too large", body = ErrorEnvelope),
        (status = 415, description = "VALIDATION_FAILED: a request body that is not application/json", body = ErrorEnvelope),
        (status = 422, description = "VALIDATION_FAILED, or IDEMPOTENCY_KEY_REUSED", body = ErrorEnvelope),
        (status = 503, description = "DEPENDENCY_UNAVAILABLE: PostgreSQL is down", body = ErrorEnvelope)
    ),
    security(("bearer" = []))
)]
#[tracing::instrument(skip_all, fields(review_id = %path))]
pub async fn approve(
    req: HttpRequest,
    path: web::Path<Uuid>,
    payload: web::Payload,
    Voter(caller): Voter,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    caller.require(Role::Reviewer)?;
    let bytes = read_body(&req, payload, state.body).await?;
    let ran = decision(&req, &state, caller, *path, bytes, approval).await?;
    Ok(post::respond_document(
        ran,
        StatusCode::OK,
        TransitionView::of,
        |t| t.document.version,
    ))
}

/// An approval's body: `{}`, `null`, nothing, or an optional comment.
fn approval(body: &[u8]) -> Result<Decision, ApiError> {
    let input: ApproveBody = parse_json(body, true)?;
    let comment = input
        .comment
        .as_deref()
        .map(Comment::parse)
        .transpose()
        .map_err(|e| ApiError::validation(e.to_string()))?;
    Ok(Decision::Approve(comment))
}

/// A rejection's body: a required reason.
fn rejection(body: &[u8]) -> Result<Decision, ApiError> {
    let input: RejectBody = parse_json(body, false)?;
    let reason =
        RejectReason::parse(&input.reason).map_err(|e| ApiError::validation(e.to_string()))?;
    Ok(Decision::Reject(reason))
}

#[utoipa::path(
    post,
    path = "/api/v1/reviews/{id}/reject",
    tag = "reviews",
    summary = "Reject with a reason (reviewer, not the author)",
    description = "A veto: any eligible reject ends the review and rejects the document. \
                   Needs no seat.",
    params(("id" = Uuid, Path, description = "review id"), ("Idempotency-Key" = Option<String>, Header, nullable = false, min_length = 1, max_length = 255, pattern = "^[!-~]+$", description = "1 to 255 printable ASCII characters. Makes the POST safe to retry: the same key and request replay the first response (header Idempotent-Replayed: true)")),
    request_body = RejectBody,
    responses(
        (status = 200, description = "rejected", body = TransitionView),
        (status = 400, description = "VALIDATION_FAILED: malformed JSON", body = ErrorEnvelope),
        (status = 401, description = "missing, invalid or expired token", body = ErrorEnvelope),
        (status = 403, description = "FORBIDDEN, SELF_REVIEW_FORBIDDEN or NOT_ELIGIBLE (not in the current stage's groups)", body = ErrorEnvelope),
        (status = 404, description = "NOT_FOUND", body = ErrorEnvelope),
        (status = 409, description = VOTE_CONFLICTS, body = ErrorEnvelope),
        (status = 408, description = "REQUEST_TIMEOUT: the request body did not arrive within server.body_timeout_ms", body = ErrorEnvelope),
        (status = 413, description = "VALIDATION_FAILED: body too large", body = ErrorEnvelope),
        (status = 415, description = "VALIDATION_FAILED: a request body that is not application/json", body = ErrorEnvelope),
        (status = 422, description = "VALIDATION_FAILED, or IDEMPOTENCY_KEY_REUSED", body = ErrorEnvelope),
        (status = 503, description = "DEPENDENCY_UNAVAILABLE: PostgreSQL is down", body = ErrorEnvelope)
    ),
    security(("bearer" = []))
)]
#[tracing::instrument(skip_all, fields(review_id = %path))]
pub async fn reject(
    req: HttpRequest,
    path: web::Path<Uuid>,
    payload: web::Payload,
    Voter(caller): Voter,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    caller.require(Role::Reviewer)?;
    let bytes = read_body(&req, payload, state.body).await?;
    let ran = decision(&req, &state, caller, *path, bytes, rejection).await?;
    Ok(post::respond_document(
        ran,
        StatusCode::OK,
        TransitionView::of,
        |t| t.document.version,
    ))
}

/// Parses the decision (inside the idempotent work, so a bad body is replayed as such) and
/// runs it.
async fn decision(
    req: &HttpRequest,
    state: &web::Data<AppState>,
    caller: Caller,
    review_id: Uuid,
    bytes: Vec<u8>,
    parse: fn(&[u8]) -> Result<Decision, ApiError>,
) -> Result<post::Ran<Transitioned>, ApiError> {
    caller.require(Role::Reviewer)?;
    let (st, body) = (state.clone(), bytes.clone());
    let ctx = Context {
        groups: caller.groups.clone(),
        ..state.context(req, &caller)
    };
    post::run(req, state, &caller, &bytes, move |held_key| async move {
        let decision = parse(&body)?;
        let ctx = Context { held_key, ..ctx };
        Ok(st.reviews.decide(ctx, review_id, decision).await?)
    })
    .await
}

#[utoipa::path(
    get,
    path = "/api/v1/reviews",
    tag = "reviews",
    summary = "Reviews by status, in commit order or by due date (reviewer)",
    description = "The queue of every space where the caller is a reviewer (the platform admin: \
                   every space); `space` narrows it to one.",
    params(
        ("space" = Option<String>, Query, pattern = "^[a-z0-9][a-z0-9-]{0,62}$", max_length = 63, description = "a space's key: its queue alone (no role there: 404; a role but not reviewer: 403)"),
        ("status" = Option<String>, Query, pattern = "^(PENDING|APPROVED|REJECTED|WITHDRAWN)$", description = "PENDING (default), APPROVED, REJECTED or WITHDRAWN"),
        ("overdue" = Option<bool>, Query, description = "true: only reviews still pending past their due date (status PENDING only)"),
        ("eligible" = Option<String>, Query, pattern = "^me$", description = "me: only reviews the caller may approve now (not its own, not voted on, in the stage's groups, a seat free or held by the caller)"),
        ("order" = Option<String>, Query, pattern = "^(queue|due)$", description = "queue (default): the order the submits committed; due: by due date, none last"),
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 100, description = "1 to 100, default 20"),
        ("cursor" = Option<String>, Query, pattern = r"^([0-9]{1,16}\.)?[0-9a-f]{32}$", description = "next_cursor of the previous page")
    ),
    responses(
        (status = 200, description = "a page", body = ReviewPage),
        (status = 401, description = "missing, invalid or expired token", body = ErrorEnvelope),
        (status = 403, description = "FORBIDDEN: a reviewer in no space, or not in the space named", body = ErrorEnvelope),
        (status = 404, description = "NOT_FOUND: no role in the space named, or no such space", body = ErrorEnvelope),
        (status = 422, description = "VALIDATION_FAILED: a parameter out of its range, or a cursor this service did not issue", body = ErrorEnvelope),
        (status = 503, description = "DEPENDENCY_UNAVAILABLE: PostgreSQL is down", body = ErrorEnvelope)
    ),
    security(("bearer" = []))
)]
pub async fn list(
    query: web::Query<ReviewQuery>,
    caller: Caller,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(review_page(&state, &caller, &query).await?))
}

/// A page of reviews with their documents' titles.
async fn review_page(
    state: &AppState,
    caller: &Caller,
    query: &ReviewQuery,
) -> Result<ReviewPage, ApiError> {
    caller.require(Role::Reviewer)?;
    let space = query.space.as_deref().map(SpaceKey::parse).transpose();
    let space = space.map_err(|e| ApiError::validation(e.to_string()))?;
    let filter = queue_filter(caller, query)?;
    queue::review_page(state, &caller.access, space.as_ref(), filter).await
}

fn queue_filter(caller: &Caller, query: &ReviewQuery) -> Result<QueueFilter, ApiError> {
    let status = match query.status.as_deref() {
        None => ReviewStatus::Pending,
        Some(s) => ReviewStatus::parse(s).ok_or_else(|| {
            ApiError::validation("status must be one of PENDING, APPROVED, REJECTED, WITHDRAWN")
        })?,
    };
    let overdue = query.overdue.unwrap_or(false);
    if overdue && status != ReviewStatus::Pending {
        return Err(ApiError::validation(
            "overdue=true lists pending reviews only: leave status out or give PENDING",
        ));
    }
    let eligible = match query.eligible.as_deref() {
        None => None,
        Some("me") => Some((caller.id.as_str().to_string(), caller.groups.clone())),
        Some(_) => return Err(ApiError::validation("eligible must be me")),
    };
    let order = match query.order.as_deref() {
        None | Some("queue") => QueueOrder::Queue,
        Some("due") => QueueOrder::Due,
        Some(_) => return Err(ApiError::validation("order must be queue or due")),
    };
    Ok(QueueFilter {
        status,
        overdue,
        eligible,
        order,
        after: query
            .cursor
            .as_deref()
            .map(paging::after_review)
            .transpose()?,
        limit: paging::limit(query.limit)?,
    })
}
