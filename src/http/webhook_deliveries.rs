//! `/api/v1/spaces/{key}/webhooks/{webhook_id}/deliveries`: an endpoint's delivery log,
//! newest first, and a delivery sent again (its space admins' and the platform admin's).

use actix_web::{web, HttpResponse};

use super::spaces::key_of;
use super::webhooks::webhook_of;
use crate::web::auth::Caller;
use crate::web::error::{ApiError, ErrorEnvelope};
use crate::web::paging::{self, PageQuery};
use crate::web::state::AppState;
use crate::web::webhook_views::{DeliveryPage, DeliveryView};

#[utoipa::path(
    get,
    path = "/api/v1/spaces/{key}/webhooks/{webhook_id}/deliveries",
    tag = "webhooks",
    summary = "A page of a webhook endpoint's deliveries, newest first (space_admin)",
    params(
        ("key" = String, Path, pattern = "^[a-z0-9][a-z0-9-]{0,62}$", description = "the space's key"),
        ("webhook_id" = Uuid, Path, description = "the endpoint's id"),
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 100, description = "1 to 100, default 20"),
        ("cursor" = Option<String>, Query, pattern = "^[1-9][0-9]{0,17}$", description = "next_cursor of the previous page")
    ),
    responses(
        (status = 200, description = "a page of deliveries, with their state, attempts and last error", body = DeliveryPage),
        (status = 401, description = "UNAUTHORIZED: missing, invalid or expired token", body = ErrorEnvelope),
        (status = 403, description = "FORBIDDEN: a member of the space without space_admin there", body = ErrorEnvelope),
        (status = 404, description = "NOT_FOUND: no such space (or no role in it), or no such endpoint there", body = ErrorEnvelope),
        (status = 422, description = "VALIDATION_FAILED: not a space key, a limit out of its range, or a cursor this service did not issue", body = ErrorEnvelope),
        (status = 503, description = "DEPENDENCY_UNAVAILABLE: PostgreSQL is down", body = ErrorEnvelope)
    ),
    security(("bearer" = []))
)]
pub async fn list(
    path: web::Path<(String, String)>,
    query: web::Query<PageQuery>,
    caller: Caller,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let key = key_of(&path.0)?;
    let id = webhook_of(&path.1)?;
    let limit = paging::limit(query.limit)?;
    let before = match query.cursor.as_deref() {
        None => None,
        c => Some(paging::after(c)?),
    };
    let mut rows = state
        .webhooks
        .deliveries(&caller.access, &key, id, before, limit + 1)
        .await?;
    let next_cursor = paging::cut(&mut rows, limit, |d| d.id.to_string());
    Ok(HttpResponse::Ok().json(DeliveryPage {
        items: rows.iter().map(DeliveryView::from).collect(),
        next_cursor,
    }))
}

#[utoipa::path(
    post,
    path = "/api/v1/spaces/{key}/webhooks/{webhook_id}/deliveries/{delivery_id}/resend",
    tag = "webhooks",
    summary = "Send a delivery again, from its first attempt (space_admin)",
    description = "The same event, the same webhook-id (receivers drop what they already have), signed anew. A delivery being sent right now is sent again after that attempt.",
    params(
        ("key" = String, Path, pattern = "^[a-z0-9][a-z0-9-]{0,62}$", description = "the space's key"),
        ("webhook_id" = Uuid, Path, description = "the endpoint's id"),
        ("delivery_id" = i64, Path, minimum = 1, description = "the delivery's id")
    ),
    responses(
        (status = 202, description = "the delivery, pending again", body = DeliveryView),
        (status = 401, description = "UNAUTHORIZED: missing, invalid or expired token", body = ErrorEnvelope),
        (status = 403, description = "FORBIDDEN: a member of the space without space_admin there", body = ErrorEnvelope),
        (status = 404, description = "NOT_FOUND: no such space (or no role in it), endpoint there, or delivery of it", body = ErrorEnvelope),
        (status = 422, description = "VALIDATION_FAILED: not a space key", body = ErrorEnvelope),
        (status = 503, description = "DEPENDENCY_UNAVAILABLE: PostgreSQL is down", body = ErrorEnvelope)
    ),
    security(("bearer" = []))
)]
pub async fn resend(
    path: web::Path<(String, String, String)>,
    caller: Caller,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let key = key_of(&path.0)?;
    let id = webhook_of(&path.1)?;
    let delivery = path
        .2
        .parse::<i64>()
        .ok()
        .filter(|n| *n >= 1)
        .ok_or_else(|| ApiError::not_found("no such delivery of this webhook"))?;
    let row = state
        .webhooks
        .resend(&caller.access, &key, id, delivery)
        .await?;
    Ok(HttpResponse::Accepted().json(DeliveryView::from(&row)))
}
