//! A document's comments: `POST /api/v1/documents/{id}/comments` adds one, `GET` pages
//! through them. The read honours private drafts: a document never submitted is not found by
//! anyone but its author and admins.

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;
use uuid::Uuid;

use crate::domain::{CommentBody, Commented};
use crate::usecases::Context;
use crate::web::auth::{Caller, Commenter};
use crate::web::body::{parse_json, read_body};
use crate::web::error::{ApiError, ErrorEnvelope};
use crate::web::fields;
use crate::web::paging::{self, after, PageQuery};
use crate::web::post;
use crate::web::state::AppState;
use crate::web::views::{CommentPage, CommentView};

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CommentBodyIn {
    #[schema(schema_with = fields::comment_body)]
    body: String,
    /// The review round (a review of this document) the comment is about.
    review_id: Option<Uuid>,
}

#[utoipa::path(
    post,
    path = "/api/v1/documents/{id}/comments",
    tag = "documents",
    summary = "Comment on a document (anyone who may read it; not on an archived one)",
    params(("id" = Uuid, Path, description = "document id"), ("Idempotency-Key" = Option<String>, Header, nullable = false, min_length = 1, max_length = 255, pattern = "^[!-~]+$", description = "1 to 255 printable ASCII characters. Makes the POST safe to retry: the same key and request replay the first response (header Idempotent-Replayed: true)")),
    request_body = CommentBodyIn,
    responses(
        (status = 201, description = "the comment", body = CommentView),
        (status = 400, description = "VALIDATION_FAILED: malformed JSON", body = ErrorEnvelope),
        (status = 401, description = "missing, invalid or expired token", body = ErrorEnvelope),
        (status = 403, description = "FORBIDDEN: the token carries none of the roles author, reviewer, admin", body = ErrorEnvelope),
        (status = 404, description = "NOT_FOUND", body = ErrorEnvelope),
        (status = 409, description = "INVALID_STATE (the document is archived) or IDEMPOTENCY_IN_FLIGHT", body = ErrorEnvelope),
        (status = 408, description = "REQUEST_TIMEOUT: the request body did not arrive within server.body_timeout_ms", body = ErrorEnvelope),
        (status = 413, description = "VALIDATION_FAILED: body too large", body = ErrorEnvelope),
        (status = 415, description = "VALIDATION_FAILED: a request body that is not application/json", body = ErrorEnvelope),
        (status = 422, description = "VALIDATION_FAILED (review_id not a review of this document too), or IDEMPOTENCY_KEY_REUSED", body = ErrorEnvelope),
        (status = 503, description = "DEPENDENCY_UNAVAILABLE: PostgreSQL is down", body = ErrorEnvelope)
    ),
    security(("bearer" = []))
)]
#[tracing::instrument(skip_all, fields(document_id = %path))]
pub async fn comment(
    req: HttpRequest,
    path: web::Path<Uuid>,
    payload: web::Payload,
    Commenter(caller): Commenter,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let bytes = read_body(&req, payload, state.body).await?;
    let document_id = *path;
    let (st, body) = (state.clone(), bytes.clone());
    let ctx = state.context(&req, &caller);
    let ran = post::run(&req, &state, &caller, &bytes, move |held_key| async move {
        let input: CommentBodyIn = parse_json(&body, false)?;
        let text =
            CommentBody::parse(&input.body).map_err(|e| ApiError::validation(e.to_string()))?;
        let ctx = Context { held_key, ..ctx };
        Ok(st
            .documents
            .comment(ctx, document_id, text, input.review_id)
            .await?)
    })
    .await?;
    Ok(post::respond(ran, StatusCode::CREATED, |c: &Commented| {
        CommentView::from(&c.comment)
    }))
}

#[utoipa::path(
    get,
    path = "/api/v1/documents/{id}/comments",
    tag = "documents",
    summary = "A document's comments, oldest first",
    params(
        ("id" = Uuid, Path, description = "document id"),
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 100, description = "1 to 100, default 20"),
        ("cursor" = Option<String>, Query, pattern = "^[1-9][0-9]{0,17}$", description = "next_cursor of the previous page")
    ),
    responses(
        (status = 200, description = "a page", body = CommentPage),
        (status = 401, description = "missing, invalid or expired token", body = ErrorEnvelope),
        (status = 403, description = "FORBIDDEN: the token carries none of the roles author, reviewer, admin", body = ErrorEnvelope),
        (status = 404, description = "NOT_FOUND", body = ErrorEnvelope),
        (status = 422, description = "VALIDATION_FAILED: a parameter out of its range, or a cursor this service did not issue", body = ErrorEnvelope),
        (status = 503, description = "DEPENDENCY_UNAVAILABLE: PostgreSQL is down", body = ErrorEnvelope)
    ),
    security(("bearer" = []))
)]
#[tracing::instrument(skip_all, fields(document_id = %path))]
pub async fn comments(
    path: web::Path<Uuid>,
    query: web::Query<PageQuery>,
    caller: Caller,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let limit = paging::limit(query.limit)?;
    let after = after(query.cursor.as_deref())?;
    let mut items = state
        .documents
        .comments(caller.reader(), *path, after, limit + 1)
        .await?;
    let next_cursor = paging::cut(&mut items, limit, |c| c.seq.to_string());
    Ok(HttpResponse::Ok().json(CommentPage {
        items: items.iter().map(CommentView::from).collect(),
        next_cursor,
    }))
}
