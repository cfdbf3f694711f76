//! A document's review history (`GET /api/v1/documents/{id}/reviews`): every round, oldest
//! first, a page at a time. It honours private drafts: a document never submitted is not
//! found by anyone but its author and admins.

use actix_web::{web, HttpResponse};
use uuid::Uuid;

use crate::web::auth::Caller;
use crate::web::error::{ApiError, ErrorEnvelope};
use crate::web::paging::{self, after, PageQuery};
use crate::web::state::AppState;
use crate::web::views::{ReviewHistory, ReviewView};

#[utoipa::path(
    get,
    path = "/api/v1/documents/{id}/reviews",
    tag = "documents",
    summary = "Review history of a document (every round), oldest first",
    params(
        ("id" = Uuid, Path, description = "document id"),
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 100, description = "1 to 100, default 20"),
        ("cursor" = Option<String>, Query, pattern = "^[1-9][0-9]{0,17}$", description = "next_cursor of the previous page")
    ),
    responses(
        (status = 200, description = "a page of the history", body = ReviewHistory),
        (status = 401, description = "missing, invalid or expired token", body = ErrorEnvelope),
        (status = 403, description = "FORBIDDEN: the token carries none of the roles author, reviewer, admin", body = ErrorEnvelope),
        (status = 404, description = "NOT_FOUND", body = ErrorEnvelope),
        (status = 422, description = "VALIDATION_FAILED: a parameter out of its range, or a cursor this service did not issue", body = ErrorEnvelope),
        (status = 503, description = "DEPENDENCY_UNAVAILABLE: PostgreSQL is down", body = ErrorEnvelope)
    ),
    security(("bearer" = []))
)]
#[tracing::instrument(skip_all, fields(document_id = %path))]
pub async fn history(
    path: web::Path<Uuid>,
    query: web::Query<PageQuery>,
    caller: Caller,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let limit = paging::limit(query.limit)?;
    let after = after(query.cursor.as_deref())?;
    let mut items = state
        .documents
        .history(caller.reader(), *path, after, limit + 1)
        .await?;
    let next_cursor = paging::cut(&mut items, limit, |(seq, _)| seq.to_string());
    Ok(HttpResponse::Ok().json(ReviewHistory {
        items: items.iter().map(|(_, r)| ReviewView::from(r)).collect(),
        next_cursor,
    }))
}
