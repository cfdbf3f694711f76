//! `/api/v1/policies` (read by any role) and `/api/v1/admin/policies/{name}` (written by
//! admins): review policies, each write a new version.

use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;

use crate::domain::{PolicyDraft, PolicyName, Reverify, Stage};
use crate::web::auth::{Caller, Role};
use crate::web::body::{parse_json, read_body, whole};
use crate::web::error::{ApiError, ErrorEnvelope};
use crate::web::state::AppState;
use crate::web::views::{PolicyList, PolicyView, StageOfPolicy};

/// A policy as an admin writes it.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PolicyBody {
    /// 1 to 10 ordered stages.
    #[schema(min_items = 1, max_items = 10)]
    stages: Vec<StageOfPolicy>,
    /// A review is overdue this long after its submit: 1 to 31,536,000 (a year). Left out
    /// or null: never.
    #[schema(minimum = 1, maximum = 31536000)]
    #[serde(default, deserialize_with = "whole_number")]
    due_after_secs: Option<i64>,
    /// How long a claim holds its seat: 60 to 86,400; 1,800 when left out.
    #[schema(minimum = 60, maximum = 86400, nullable = false)]
    #[serde(default, deserialize_with = "whole_number")]
    claim_ttl_secs: Option<i64>,
    /// An approval is due for re-verification this long after it: 60 to 157,680,000 (5
    /// years). Left out or null: never (approved documents stay published).
    #[schema(minimum = 60, maximum = 157680000)]
    #[serde(default, deserialize_with = "whole_number")]
    reverify_after_secs: Option<i64>,
    /// How long a re-verification may stay undecided before its document expires: 60 to
    /// 31,536,000; 604,800 (a week) when left out. Only with `reverify_after_secs`.
    #[schema(minimum = 60, maximum = 31536000)]
    #[serde(default, deserialize_with = "whole_number")]
    reverify_grace_secs: Option<i64>,
}

/// An optional integer as JSON Schema counts one (`41719` and `41719.0` alike).
pub(super) fn whole_number<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<i64>, D::Error> {
    let n = Option::<serde_json::Number>::deserialize(d)?;
    n.map(|n| {
        whole(&n).ok_or_else(|| serde::de::Error::custom(format!("{n} is not a whole number")))
    })
    .transpose()
}

fn name_of(path: &str) -> Result<PolicyName, ApiError> {
    PolicyName::parse(path).map_err(|e| ApiError::validation(e.to_string()))
}

#[utoipa::path(
    get,
    path = "/api/v1/policies",
    tag = "policies",
    summary = "Every review policy, its current version (any role)",
    responses(
        (status = 200, description = "the policies, by name", body = PolicyList),
        (status = 401, description = "missing, invalid or expired token", body = ErrorEnvelope),
        (status = 403, description = "FORBIDDEN: the token carries none of the roles", body = ErrorEnvelope),
        (status = 503, description = "DEPENDENCY_UNAVAILABLE: PostgreSQL is down", body = ErrorEnvelope)
    ),
    security(("bearer" = []))
)]
pub async fn list(_caller: Caller, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let items = state.policies.list().await?;
    Ok(HttpResponse::Ok().json(PolicyList {
        items: items.iter().map(PolicyView::from).collect(),
    }))
}

#[utoipa::path(
    get,
    path = "/api/v1/policies/{name}",
    tag = "policies",
    summary = "One review policy, its current version (any role)",
    params(("name" = String, Path, pattern = "^[a-z0-9][a-z0-9_-]{0,63}$", description = "policy name")),
    responses(
        (status = 200, description = "the policy", body = PolicyView),
        (status = 401, description = "missing, invalid or expired token", body = ErrorEnvelope),
        (status = 403, description = "FORBIDDEN: the token carries none of the roles", body = ErrorEnvelope),
        (status = 404, description = "NOT_FOUND", body = ErrorEnvelope),
        (status = 422, description = "VALIDATION_FAILED: not a policy name", body = ErrorEnvelope),
        (status = 503, description = "DEPENDENCY_UNAVAILABLE: PostgreSQL is down", body = ErrorEnvelope)
    ),
    security(("bearer" = []))
)]
pub async fn get(
    path: web::Path<String>,
    _caller: Caller,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let name = name_of(&path)?;
    let policy = state.policies.get(name.as_str()).await?;
    Ok(HttpResponse::Ok().json(PolicyView::from(&policy)))
}

#[utoipa::path(
    put,
    path = "/api/v1/admin/policies/{name}",
    tag = "policies",
    summary = "Write a review policy's next version (admin)",
    description = "Reviews already submitted keep the version current at their submit. The \
                   built-in policy `default` cannot be changed.",
    params(("name" = String, Path, pattern = "^[a-z0-9][a-z0-9_-]{0,63}$", description = "policy name")),
    request_body = PolicyBody,
    responses(
        (status = 200, description = "the policy with its new version", body = PolicyView),
        (status = 400, description = "VALIDATION_FAILED: malformed JSON", body = ErrorEnvelope),
        (status = 401, description = "missing, invalid or expired token", body = ErrorEnvelope),
        (status = 403, description = "FORBIDDEN: not an admin", body = ErrorEnvelope),
        (status = 408, description = "REQUEST_TIMEOUT: the request body did not arrive within server.body_timeout_ms", body = ErrorEnvelope),
        (status = 413, description = "VALIDATION_FAILED: body too large", body = ErrorEnvelope),
        (status = 415, description = "VALIDATION_FAILED: a request body that is not application/json", body = ErrorEnvelope),
        (status = 422, description = "VALIDATION_FAILED, naming the field (or the built-in policy)", body = ErrorEnvelope),
        (status = 503, description = "DEPENDENCY_UNAVAILABLE: PostgreSQL is down", body = ErrorEnvelope)
    ),
    security(("bearer" = []))
)]
pub async fn put(
    req: HttpRequest,
    path: web::Path<String>,
    payload: web::Payload,
    caller: Caller,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    caller.require(Role::Admin)?;
    let bytes = read_body(&req, payload, state.body).await?;
    let policy = write(&state, &caller, &path, &bytes).await?;
    Ok(HttpResponse::Ok().json(policy))
}

/// Writes a policy from a JSON body.
async fn write(
    state: &AppState,
    caller: &Caller,
    name: &str,
    bytes: &[u8],
) -> Result<PolicyView, ApiError> {
    caller.require(Role::Admin)?;
    let name = name_of(name)?;
    let body: PolicyBody = parse_json(bytes, false)?;
    let stages = body
        .stages
        .into_iter()
        .map(|s| Stage {
            name: s.name,
            required_approvals: s.required_approvals,
            eligible_groups: s.eligible_groups,
        })
        .collect();
    let draft = Reverify::parse(body.reverify_after_secs, body.reverify_grace_secs)
        .and_then(|r| PolicyDraft::parse(stages, body.due_after_secs, body.claim_ttl_secs, r))
        .map_err(|e| ApiError::validation(e.to_string()))?;
    let p = state.policies.put(&caller.id, &name, &draft).await?;
    Ok(PolicyView::from(&p))
}
