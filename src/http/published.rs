//! A document's published revision (`GET /api/v1/documents/{id}/published`): the text its
//! last approval published. Like every read, it honours private drafts: a document never
//! submitted is not found by anyone but its author and admins.

use actix_web::{web, HttpResponse};
use uuid::Uuid;

use crate::web::auth::Caller;
use crate::web::error::{ApiError, ErrorEnvelope};
use crate::web::state::AppState;
use crate::web::views::PublishedView;

#[utoipa::path(
    get,
    path = "/api/v1/documents/{id}/published",
    tag = "documents",
    summary = "The published revision: what the last approval published, live while a revision is drafted",
    params(("id" = Uuid, Path, description = "document id")),
    responses(
        (status = 200, description = "the published revision", body = PublishedView),
        (status = 401, description = "missing, invalid or expired token", body = ErrorEnvelope),
        (status = 403, description = "FORBIDDEN: the token carries none of the roles author, reviewer, admin", body = ErrorEnvelope),
        (status = 404, description = "NOT_FOUND: no such document (or a draft of someone else's), never approved, or archived", body = ErrorEnvelope),
        (status = 503, description = "DEPENDENCY_UNAVAILABLE: PostgreSQL is down", body = ErrorEnvelope)
    ),
    security(("bearer" = []))
)]
#[tracing::instrument(skip_all, fields(document_id = %path))]
pub async fn published(
    path: web::Path<Uuid>,
    caller: Caller,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let read = state.documents.published(caller.reader(), *path).await?;
    Ok(HttpResponse::Ok().json(PublishedView {
        id: read.document.id,
        version: read.version,
        title: read.title,
        body: read.body,
        preview: read.preview,
        body_source: read.source.as_str(),
        status: read.document.status.as_str().to_string(),
        working_version: read.document.version,
    }))
}
