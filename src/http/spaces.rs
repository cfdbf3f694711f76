//! `/api/v1/spaces` and `/api/v1/admin/spaces`: spaces (knowledge bases). The platform
//! admin creates a space (a POST under its `Idempotency-Key`, as every POST); its members
//! read it; its space admins (and the platform admin) write its settings. Its memberships:
//! `members.rs`. A space the caller holds no role in answers
//! 404, as one that does not exist. A key or subject in a path that does not parse is 422.

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use serde::{Deserialize, Deserializer};

use crate::domain::{InputError, PolicyName, SpaceKey, SpaceName, SpaceRoles, Subject};
use crate::store::SpaceUpdate;
use crate::usecases::Context;
use crate::web::auth::{Caller, Role};
use crate::web::body::{parse_json, read_body};
use crate::web::error::{ApiError, ErrorEnvelope};
use crate::web::fields;
use crate::web::post;
use crate::web::space_views::{SpaceList, SpaceView};
use crate::web::state::AppState;

/// A space to create.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateSpace {
    /// Never changes once the space exists.
    #[schema(pattern = "^[a-z0-9][a-z0-9-]{0,62}$", max_length = 63, example = "hr")]
    key: String,
    #[schema(schema_with = fields::space_name)]
    name: String,
    /// The policy of a document created in the space without one; left out or null: the
    /// setting review.default_policy.
    #[schema(pattern = "^[a-z0-9][a-z0-9_-]{0,63}$", max_length = 64)]
    #[serde(default)]
    default_policy: Option<String>,
}

/// A change of a space's settings: at least one field.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateSpace {
    #[schema(schema_with = fields::space_name)]
    #[serde(default, deserialize_with = "name_not_null")]
    name: Option<String>,
    /// Another default policy; null: none (the setting review.default_policy applies).
    #[schema(
        value_type = Option<String>,
        pattern = "^[a-z0-9][a-z0-9_-]{0,63}$",
        max_length = 64
    )]
    #[serde(default, deserialize_with = "present")]
    default_policy: Option<Option<String>>,
}

fn name_not_null<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let value = Option::<String>::deserialize(d)?;
    let refusal = || serde::de::Error::custom("name may be left out, but not null");
    value.map(Some).ok_or_else(refusal)
}

/// A field that is there, null or not (left out: None, by `default`).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

pub(super) fn invalid(field: &str, e: InputError) -> ApiError {
    ApiError::validation(format!("{field}: {}", e.problem))
}

/// A space's key from a path: 422 when it is not one.
pub(super) fn key_of(path: &str) -> Result<SpaceKey, ApiError> {
    SpaceKey::parse(path).map_err(|e| invalid("key", e))
}

/// A subject from a path. actix leaves `%2F`, `%2B` and `%25` encoded in a path's
/// segment: they are decoded here, in one pass, so a group with a slash in its name can be
/// named (`group:eng%2Fbackend`).
pub(super) fn subject_of(segment: &str) -> Result<Subject, ApiError> {
    let mut out = String::with_capacity(segment.len());
    let mut rest = segment;
    while let Some(i) = rest.find('%') {
        out.push_str(&rest[..i]);
        let code = rest.get(i + 1..i + 3).unwrap_or_default();
        match code.to_ascii_uppercase().as_str() {
            "2F" => out.push('/'),
            "2B" => out.push('+'),
            "25" => out.push('%'),
            _ => {
                out.push('%');
                rest = &rest[i + 1..];
                continue;
            }
        }
        rest = &rest[i + 3..];
    }
    out.push_str(rest);
    Subject::parse(&out).map_err(|e| invalid("subject", e))
}

#[utoipa::path(
    post,
    path = "/api/v1/admin/spaces",
    tag = "spaces",
    summary = "Create a space (admin)",
    description = "Its creation is audited in the admin chain.",
    params(
        ("Idempotency-Key" = Option<String>, Header, nullable = false, min_length = 1, max_length = 255, pattern = "^[!-~]+$", description = "1 to 255 printable ASCII characters. Makes the POST safe to retry: the same key and request replay the first response (header Idempotent-Replayed: true)")
    ),
    request_body = CreateSpace,
    responses(
        (status = 201, description = "the space", body = SpaceView),
        (status = 400, description = "VALIDATION_FAILED: malformed JSON", body = ErrorEnvelope),
        (status = 401, description = "UNAUTHORIZED: missing, invalid or expired token", body = ErrorEnvelope),
        (status = 403, description = "FORBIDDEN: not an admin", body = ErrorEnvelope),
        (status = 408, description = "REQUEST_TIMEOUT: the request body did not arrive within server.body_timeout_ms", body = ErrorEnvelope),
        (status = 409, description = "ALREADY_EXISTS: a space has this key; IDEMPOTENCY_IN_FLIGHT", body = ErrorEnvelope),
        (status = 413, description = "VALIDATION_FAILED: body too large", body = ErrorEnvelope),
        (status = 415, description = "VALIDATION_FAILED: a request body that is not application/json", body = ErrorEnvelope),
        (status = 422, description = "VALIDATION_FAILED, naming the field (a default_policy that names no policy too); IDEMPOTENCY_KEY_REUSED", body = ErrorEnvelope),
        (status = 503, description = "DEPENDENCY_UNAVAILABLE: PostgreSQL is down", body = ErrorEnvelope)
    ),
    security(("bearer" = []))
)]
pub async fn create(
    req: HttpRequest,
    payload: web::Payload,
    caller: Caller,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    caller.require(Role::Admin)?;
    let bytes = read_body(&req, payload, state.body).await?;
    let (st, body, ctx) = (state.clone(), bytes.clone(), state.context(&req, &caller));
    let ran = post::run(&req, &state, &caller, &bytes, move |held_key| async move {
        let input: CreateSpace = parse_json(&body, false)?;
        let key = SpaceKey::parse(&input.key).map_err(|e| invalid("key", e))?;
        let name = SpaceName::parse(&input.name).map_err(|e| invalid("name", e))?;
        let policy = input.default_policy.as_deref().map(PolicyName::parse);
        let policy = policy
            .transpose()
            .map_err(|e| invalid("default_policy", e))?;
        let ctx = Context { held_key, ..ctx };
        let created = st.spaces.create(&ctx, &key, &name, policy.as_ref());
        Ok(created.await?)
    })
    .await?;
    Ok(post::respond(ran, StatusCode::CREATED, |s| {
        SpaceView::of(s, SpaceRoles::ALL)
    }))
}

#[utoipa::path(
    get,
    path = "/api/v1/spaces",
    tag = "spaces",
    summary = "The spaces where the caller holds a role, with its roles there (any role)",
    responses(
        (status = 200, description = "the spaces, by key (the platform admin: every space, with every role)", body = SpaceList),
        (status = 401, description = "UNAUTHORIZED: missing, invalid or expired token", body = ErrorEnvelope),
        (status = 403, description = "FORBIDDEN: the token carries none of the roles and its subject is a member of no space", body = ErrorEnvelope),
        (status = 503, description = "DEPENDENCY_UNAVAILABLE: PostgreSQL is down", body = ErrorEnvelope)
    ),
    security(("bearer" = []))
)]
pub async fn list(caller: Caller, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let seen = state.spaces.list(&caller.access).await?;
    Ok(HttpResponse::Ok().json(SpaceList {
        items: seen.iter().map(SpaceView::from).collect(),
    }))
}

#[utoipa::path(
    get,
    path = "/api/v1/spaces/{key}",
    tag = "spaces",
    summary = "One space (a member)",
    params(
        ("key" = String, Path, pattern = "^[a-z0-9][a-z0-9-]{0,62}$", description = "the space's key")
    ),
    responses(
        (status = 200, description = "the space, with the caller's roles there", body = SpaceView),
        (status = 401, description = "UNAUTHORIZED: missing, invalid or expired token", body = ErrorEnvelope),
        (status = 403, description = "FORBIDDEN: the token carries none of the roles and its subject is a member of no space", body = ErrorEnvelope),
        (status = 404, description = "NOT_FOUND: no such space, or the caller holds no role in it", body = ErrorEnvelope),
        (status = 422, description = "VALIDATION_FAILED: not a space key", body = ErrorEnvelope),
        (status = 503, description = "DEPENDENCY_UNAVAILABLE: PostgreSQL is down", body = ErrorEnvelope)
    ),
    security(("bearer" = []))
)]
pub async fn get(
    path: web::Path<String>,
    caller: Caller,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let key = key_of(&path)?;
    let seen = state.spaces.get(&caller.access, &key).await?;
    Ok(HttpResponse::Ok().json(SpaceView::from(&seen)))
}

#[utoipa::path(
    patch,
    path = "/api/v1/spaces/{key}",
    tag = "spaces",
    summary = "Write a space's name or default policy (space_admin)",
    description = "Audited in the space's own chain.",
    params(
        ("key" = String, Path, pattern = "^[a-z0-9][a-z0-9-]{0,62}$", description = "the space's key")
    ),
    request_body = UpdateSpace,
    responses(
        (status = 200, description = "the space as it is now", body = SpaceView),
        (status = 400, description = "VALIDATION_FAILED: malformed JSON", body = ErrorEnvelope),
        (status = 401, description = "UNAUTHORIZED: missing, invalid or expired token", body = ErrorEnvelope),
        (status = 403, description = "FORBIDDEN: a member of the space without space_admin there", body = ErrorEnvelope),
        (status = 404, description = "NOT_FOUND: no such space, or the caller holds no role in it", body = ErrorEnvelope),
        (status = 408, description = "REQUEST_TIMEOUT: the request body did not arrive within server.body_timeout_ms", body = ErrorEnvelope),
        (status = 413, description = "VALIDATION_FAILED: body too large", body = ErrorEnvelope),
        (status = 415, description = "VALIDATION_FAILED: a request body that is not application/json", body = ErrorEnvelope),
        (status = 422, description = "VALIDATION_FAILED: not a space key, no field to change, a field out of its range, or a default_policy that names no policy", body = ErrorEnvelope),
        (status = 503, description = "DEPENDENCY_UNAVAILABLE: PostgreSQL is down", body = ErrorEnvelope)
    ),
    security(("bearer" = []))
)]
pub async fn update(
    req: HttpRequest,
    path: web::Path<String>,
    payload: web::Payload,
    caller: Caller,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let key = key_of(&path)?;
    let bytes = read_body(&req, payload, state.body).await?;
    let input: UpdateSpace = parse_json(&bytes, false)?;
    if input.name.is_none() && input.default_policy.is_none() {
        return Err(ApiError::validation(
            "give name, default_policy or both: there is nothing to change",
        ));
    }
    let name = input.name.as_deref().map(SpaceName::parse);
    let name = name.transpose().map_err(|e| invalid("name", e))?;
    let policy = match &input.default_policy {
        Some(Some(p)) => Some(Some(
            PolicyName::parse(p).map_err(|e| invalid("default_policy", e))?,
        )),
        Some(None) => Some(None),
        None => None,
    };
    let change = SpaceUpdate {
        name: name.as_ref(),
        default_policy: policy.as_ref().map(|p| p.as_ref().map(PolicyName::as_str)),
    };
    let ctx = state.context(&req, &caller);
    let seen = state.spaces.update(&ctx, &key, change).await?;
    Ok(HttpResponse::Ok().json(SpaceView::from(&seen)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subject_in_a_path_has_its_slashes_pluses_and_percents_decoded_once() {
        let of = |s: &str| subject_of(s).map(|s| s.to_string()).ok();
        assert_eq!(of("user:ada").as_deref(), Some("user:ada"));
        assert_eq!(
            of("group:eng%2Fbackend").as_deref(),
            Some("group:eng/backend")
        );
        assert_eq!(of("group:a%2bb%2").as_deref(), Some("group:a+b%2"));
        assert_eq!(of("group:100%252F").as_deref(), Some("group:100%2F"));
        assert_eq!(of("group:%"), Some("group:%".to_string()));
        assert!(of("robot:x").is_none());
        assert!(of("user:").is_none());
    }
}
