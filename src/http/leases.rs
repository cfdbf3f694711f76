//! Edit leases (`/api/v1/documents/{id}/lease`): take or renew one's own (POST), see who
//! holds one (GET), give one's own back or, as a space admin or the admin, break another's
//! (DELETE, `?force=true`). An edit by someone else while a live lease is held is 409
//! `DOCUMENT_LEASED`; the holder's edits carry `Lease-Token`.

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::domain::Refusal;
use crate::usecases::LeaseSeen;
use crate::web::auth::{Caller, Role};
use crate::web::error::{ApiError, ErrorEnvelope};
use crate::web::state::AppState;

/// A live edit lease. `token` only in the answer to its holder's take or renewal: the
/// holder's edits send it as `Lease-Token`.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = Lease)]
pub struct LeaseView {
    holder: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    token: Option<String>,
    /// Strictly increases with every new lease on the document.
    fence: i64,
    expires_at: DateTime<Utc>,
}

impl From<LeaseSeen> for LeaseView {
    fn from(l: LeaseSeen) -> Self {
        Self {
            holder: l.holder,
            token: l.token,
            fence: l.fence,
            expires_at: l.expires_at,
        }
    }
}

#[utoipa::path(
    post,
    path = "/api/v1/documents/{id}/lease",
    tag = "documents",
    summary = "Take or renew one's edit lease on a document (edit.lease_ttl_secs from now)",
    description = "A caller who holds the lease already renews it: the same token and fence, a new \
                   expires_at. The caller must be allowed to edit the document now.",
    params(("id" = Uuid, Path, description = "document id")),
    responses(
        (status = 200, description = "the caller's lease, with its token", body = LeaseView),
        (status = 401, description = "missing, invalid or expired token", body = ErrorEnvelope),
        (status = 403, description = "FORBIDDEN: not an author in the space, or a draft never submitted of someone else's", body = ErrorEnvelope),
        (status = 404, description = "NOT_FOUND", body = ErrorEnvelope),
        (status = 409, description = "DOCUMENT_LEASED (with Retry-After): another holds it; INVALID_STATE: the document takes no edit now", body = ErrorEnvelope),
        (status = 503, description = "DEPENDENCY_UNAVAILABLE: PostgreSQL is down", body = ErrorEnvelope)
    ),
    security(("bearer" = []))
)]
#[tracing::instrument(skip_all, fields(document_id = %path))]
pub async fn take(
    path: web::Path<Uuid>,
    caller: Caller,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    caller.require(Role::Author)?;
    let lease = state.leases.take(caller.reader(), *path).await?;
    Ok(HttpResponse::Ok().json(LeaseView::from(lease)))
}

#[utoipa::path(
    get,
    path = "/api/v1/documents/{id}/lease",
    tag = "documents",
    summary = "Who holds the edit lease on a document, and until when",
    params(("id" = Uuid, Path, description = "document id")),
    responses(
        (status = 200, description = "the live lease (without its token)", body = LeaseView),
        (status = 401, description = "missing, invalid or expired token", body = ErrorEnvelope),
        (status = 403, description = "FORBIDDEN: the token carries none of the roles author, reviewer, admin", body = ErrorEnvelope),
        (status = 404, description = "NOT_FOUND: no such document, or nobody holds a lease on it", body = ErrorEnvelope),
        (status = 503, description = "DEPENDENCY_UNAVAILABLE: PostgreSQL is down", body = ErrorEnvelope)
    ),
    security(("bearer" = []))
)]
#[tracing::instrument(skip_all, fields(document_id = %path))]
pub async fn current(
    path: web::Path<Uuid>,
    caller: Caller,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    match state.leases.current(caller.reader(), *path).await? {
        Some(lease) => Ok(HttpResponse::Ok().json(LeaseView::from(lease))),
        None => Err(Refusal::NoLease.into()),
    }
}

#[derive(Deserialize, Default)]
pub struct GiveBackQuery {
    pub force: Option<bool>,
}

#[utoipa::path(
    delete,
    path = "/api/v1/documents/{id}/lease",
    tag = "documents",
    summary = "Give one's edit lease back, or break another's (force=true: a space admin or the admin; audited, document.lease_broken)",
    params(
        ("id" = Uuid, Path, description = "document id"),
        ("force" = Option<bool>, Query, description = "break the lease whoever holds it")
    ),
    responses(
        (status = 204, description = "given back, or broken"),
        (status = 401, description = "missing, invalid or expired token", body = ErrorEnvelope),
        (status = 403, description = "FORBIDDEN: force=true by one who does not administer the space", body = ErrorEnvelope),
        (status = 404, description = "NOT_FOUND: no such document, or nobody holds a lease on it", body = ErrorEnvelope),
        (status = 409, description = "DOCUMENT_LEASED (with Retry-After): another holds it, and force=true was not given", body = ErrorEnvelope),
        (status = 422, description = "VALIDATION_FAILED: force is not true or false", body = ErrorEnvelope),
        (status = 503, description = "DEPENDENCY_UNAVAILABLE: PostgreSQL is down", body = ErrorEnvelope)
    ),
    security(("bearer" = []))
)]
#[tracing::instrument(skip_all, fields(document_id = %path))]
pub async fn give_back(
    req: HttpRequest,
    path: web::Path<Uuid>,
    query: web::Query<GiveBackQuery>,
    caller: Caller,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let ctx = state.context(&req, &caller);
    let force = query.force.unwrap_or(false);
    state.leases.give_back(ctx, *path, force).await?;
    Ok(HttpResponse::new(StatusCode::NO_CONTENT))
}
