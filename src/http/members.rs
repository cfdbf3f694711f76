//! `/api/v1/spaces/{key}/members`: who holds which roles in a space. Its members read the
//! members by pages; its space admins (and the platform admin) put and remove memberships,
//! each holding from the subject's next request on. Only the platform admin may remove or
//! demote a space's last `space_admin`.

use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;
use utoipa::openapi::schema::{Array, ArrayBuilder, ObjectBuilder, Type};

use super::spaces::{invalid, key_of, subject_of};
use crate::domain::{SpaceRoles, Subject};
use crate::web::auth::Caller;
use crate::web::body::{parse_json, read_body};
use crate::web::error::{ApiError, ErrorEnvelope};
use crate::web::paging::{self, PageQuery};
use crate::web::space_views::{
    after_member, member_cursor, MemberPage, MembershipPut, MembershipView,
};
use crate::web::state::AppState;

/// The roles a membership gives.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PutMember {
    #[schema(schema_with = role_names)]
    roles: Vec<String>,
}

/// `roles`: 1 or more of author, reviewer, space_admin.
fn role_names() -> Array {
    let item = ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(["author", "reviewer", "space_admin"]));
    ArrayBuilder::new()
        .items(item)
        .min_items(Some(1))
        .max_items(Some(SpaceRoles::MAX_NAMES))
        .description(Some(
            "The subject's roles in the space (exactly these; a name given twice counts once)",
        ))
        .build()
}

#[utoipa::path(
    get,
    path = "/api/v1/spaces/{key}/members",
    tag = "spaces",
    summary = "A page of a space's members, by subject (a member)",
    params(
        ("key" = String, Path, pattern = "^[a-z0-9][a-z0-9-]{0,62}$", description = "the space's key"),
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 100, description = "1 to 100, default 20"),
        ("cursor" = Option<String>, Query, pattern = "^([0-9a-f]{2})+$", description = "next_cursor of the previous page")
    ),
    responses(
        (status = 200, description = "a page of memberships", body = MemberPage),
        (status = 401, description = "UNAUTHORIZED: missing, invalid or expired token", body = ErrorEnvelope),
        (status = 403, description = "FORBIDDEN: the token carries none of the roles and its subject is a member of no space", body = ErrorEnvelope),
        (status = 404, description = "NOT_FOUND: no such space, or the caller holds no role in it", body = ErrorEnvelope),
        (status = 422, description = "VALIDATION_FAILED: not a space key, a limit out of its range, or a cursor this service did not issue", body = ErrorEnvelope),
        (status = 503, description = "DEPENDENCY_UNAVAILABLE: PostgreSQL is down", body = ErrorEnvelope)
    ),
    security(("bearer" = []))
)]
pub async fn members(
    path: web::Path<String>,
    query: web::Query<PageQuery>,
    caller: Caller,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let key = key_of(&path)?;
    let limit = paging::limit(query.limit)?;
    let after = match query.cursor.as_deref() {
        None => None,
        Some(c) => {
            let subject = after_member(c).and_then(|s| Subject::parse(&s).ok());
            Some(subject.ok_or_else(paging::bad_cursor)?)
        }
    };
    let mut members = state
        .spaces
        .members(&caller.access, &key, after.as_ref(), limit + 1)
        .await?;
    let next_cursor = paging::cut(&mut members, limit, |m| member_cursor(&m.subject));
    Ok(HttpResponse::Ok().json(MemberPage {
        items: members.iter().map(MembershipView::from).collect(),
        next_cursor,
    }))
}

#[utoipa::path(
    put,
    path = "/api/v1/spaces/{key}/members/{subject}",
    tag = "spaces",
    summary = "Give a subject exactly these roles in a space (space_admin)",
    description = "Holds from the subject's next request on. Audited in the space's own chain. Only the platform admin may demote the space's last space_admin.",
    params(
        ("key" = String, Path, pattern = "^[a-z0-9][a-z0-9-]{0,62}$", description = "the space's key"),
        ("subject" = String, Path, pattern = "^(user|group):[^\\u0000-\\u001F\\u007F-\\u009F]{1,256}$", description = "user:<sub> or group:<name> (the name 1 to 256 characters, no control characters), percent-encoded (a slash as %2F)")
    ),
    request_body = PutMember,
    responses(
        (status = 200, description = "the membership, created or replaced", body = MembershipPut),
        (status = 400, description = "VALIDATION_FAILED: malformed JSON", body = ErrorEnvelope),
        (status = 401, description = "UNAUTHORIZED: missing, invalid or expired token", body = ErrorEnvelope),
        (status = 403, description = "FORBIDDEN: a member of the space without space_admin there; or a space admin (not the platform admin) taking space_admin from the space's last one", body = ErrorEnvelope),
        (status = 404, description = "NOT_FOUND: no such space, or the caller holds no role in it", body = ErrorEnvelope),
        (status = 408, description = "REQUEST_TIMEOUT: the request body did not arrive within server.body_timeout_ms", body = ErrorEnvelope),
        (status = 413, description = "VALIDATION_FAILED: body too large", body = ErrorEnvelope),
        (status = 415, description = "VALIDATION_FAILED: a request body that is not application/json", body = ErrorEnvelope),
        (status = 422, description = "VALIDATION_FAILED: not a space key, not a subject, or roles empty or naming what is not a role", body = ErrorEnvelope),
        (status = 503, description = "DEPENDENCY_UNAVAILABLE: PostgreSQL is down", body = ErrorEnvelope)
    ),
    security(("bearer" = []))
)]
pub async fn put_member(
    req: HttpRequest,
    path: web::Path<(String, String)>,
    payload: web::Payload,
    caller: Caller,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let key = key_of(&path.0)?;
    let subject = subject_of(&path.1)?;
    let bytes = read_body(&req, payload, state.body).await?;
    let input: PutMember = parse_json(&bytes, false)?;
    let roles = SpaceRoles::parse_membership(&input.roles).map_err(|e| invalid("roles", e))?;
    let ctx = state.context(&req, &caller);
    let (membership, created) = state.spaces.put_member(&ctx, &key, &subject, roles).await?;
    Ok(HttpResponse::Ok().json(MembershipPut::of(&membership, created)))
}

#[utoipa::path(
    delete,
    path = "/api/v1/spaces/{key}/members/{subject}",
    tag = "spaces",
    summary = "Remove a subject's membership of a space (space_admin)",
    description = "Holds from the subject's next request on. Audited in the space's own chain. Only the platform admin may remove the space's last space_admin.",
    params(
        ("key" = String, Path, pattern = "^[a-z0-9][a-z0-9-]{0,62}$", description = "the space's key"),
        ("subject" = String, Path, pattern = "^(user|group):[^\\u0000-\\u001F\\u007F-\\u009F]{1,256}$", description = "user:<sub> or group:<name> (the name 1 to 256 characters, no control characters), percent-encoded (a slash as %2F)")
    ),
    responses(
        (status = 200, description = "the membership removed", body = MembershipView),
        (status = 401, description = "UNAUTHORIZED: missing, invalid or expired token", body = ErrorEnvelope),
        (status = 403, description = "FORBIDDEN: a member of the space without space_admin there; or a space admin (not the platform admin) removing the space's last space_admin", body = ErrorEnvelope),
        (status = 404, description = "NOT_FOUND: no such space, the caller holds no role in it, or the subject holds no membership there", body = ErrorEnvelope),
        (status = 422, description = "VALIDATION_FAILED: not a space key, or not a subject", body = ErrorEnvelope),
        (status = 503, description = "DEPENDENCY_UNAVAILABLE: PostgreSQL is down", body = ErrorEnvelope)
    ),
    security(("bearer" = []))
)]
pub async fn remove_member(
    req: HttpRequest,
    path: web::Path<(String, String)>,
    caller: Caller,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let key = key_of(&path.0)?;
    let subject = subject_of(&path.1)?;
    let ctx = state.context(&req, &caller);
    let removed = state.spaces.remove_member(&ctx, &key, &subject).await?;
    Ok(HttpResponse::Ok().json(MembershipView::from(&removed)))
}
