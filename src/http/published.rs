//! A document's published revision (`GET /api/v1/documents/{id}/published`): the text its
//! last approval published. Like every read, it honours private drafts: a document never
//! submitted is not found by anyone but its author and admins.

use actix_web::{web, HttpRequest, HttpResponse};
use uuid::Uuid;

use crate::web::auth::Caller;
use crate::web::error::{ApiError, ErrorEnvelope};
use crate::web::preconditions;
use crate::web::state::AppState;
use crate::web::views::PublishedView;

#[utoipa::path(
    get,
    path = "/api/v1/documents/{id}/published",
    tag = "documents",
    summary = "The published revision: what the last approval published, live while a revision is drafted",
    params(("id" = Uuid, Path, description = "document id"), ("If-None-Match" = Option<String>, Header, nullable = false, description = "the ETag of the revision the caller holds (\"p3\"): 304 while it is still the published one")),
    responses(
        (status = 200, description = "the published revision, with `ETag: \"p<version>\"`", body = PublishedView),
        (status = 304, description = "not modified: the If-None-Match names the published version"),
        (status = 401, description = "missing, invalid or expired token", body = ErrorEnvelope),
        (status = 403, description = "FORBIDDEN: the token carries none of the roles author, reviewer, admin", body = ErrorEnvelope),
        (status = 404, description = "NOT_FOUND: no such document (or a draft of someone else's), never approved, or archived", body = ErrorEnvelope),
        (status = 503, description = "DEPENDENCY_UNAVAILABLE: PostgreSQL is down", body = ErrorEnvelope)
    ),
    security(("bearer" = []))
)]
#[tracing::instrument(skip_all, fields(document_id = %path))]
pub async fn published(
    req: HttpRequest,
    path: web::Path<Uuid>,
    caller: Caller,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let read = state.documents.published(caller.reader(), *path).await?;
    let etag = preconditions::published_etag(read.version);
    let view = PublishedView {
        id: read.document.id,
        version: read.version,
        title: read.title,
        body: read.body,
        preview: read.preview,
        body_source: read.source.as_str(),
        status: read.document.status.as_str().to_string(),
        working_version: read.document.version,
    };
    Ok(preconditions::read_response(&req, etag, &view))
}
