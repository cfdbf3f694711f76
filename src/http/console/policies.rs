//! The admin's policies page: every review policy with its current version, and a form that
//! writes one (a new policy, or the next version of one) through the function the JSON
//! API's `PUT /api/v1/admin/policies/{name}` writes with, so its checks and its 422
//! messages are the API's. A refusal is shown beside the form, which keeps what was typed.

use actix_web::{web, HttpRequest, HttpResponse};
use askama::Template;
use serde::Deserialize;
use serde_json::{json, Value};

use super::render::{form, rendered, when, Shown};
use crate::domain::{Policy, DEFAULT_POLICY};
use crate::http::auth::{Caller, Role};
use crate::http::error::ApiError;
use crate::http::policies;
use crate::http::state::AppState;

/// Stage rows the form offers beyond a policy's own (a policy holds at most 10).
const SPARE_ROWS: usize = 2;
const MAX_ROWS: usize = 10;

/// A policy as the list shows it.
pub struct PolicyRow {
    pub name: String,
    pub version: i32,
    /// "review: 1 approval, any reviewer"; one line per stage.
    pub stages: Vec<String>,
    pub due: String,
    pub claim_ttl: String,
    pub built_in: bool,
    pub updated_at: String,
}

/// A stage row of the form (1-based `n` names its fields).
pub struct StageInput {
    pub n: usize,
    pub name: String,
    pub approvals: String,
    pub groups: String,
}

#[derive(Template)]
#[template(path = "console/policies.html")]
struct Policies {
    flash: Option<String>,
    rows: Vec<PolicyRow>,
    /// The policy the form edits (empty: a new one).
    name: String,
    stages: Vec<StageInput>,
    due_after_secs: String,
    claim_ttl_secs: String,
}

#[derive(Deserialize)]
pub struct EditQuery {
    edit: Option<String>,
}

fn row(p: &Policy) -> PolicyRow {
    PolicyRow {
        name: p.name.clone(),
        version: p.version,
        stages: p
            .stages
            .iter()
            .map(|s| {
                let n = s.required_approvals;
                let who = match s.eligible_groups.is_empty() {
                    true => "any reviewer".to_string(),
                    false => format!("group {}", s.eligible_groups.join(", ")),
                };
                format!(
                    "{}: {n} approval{}, {who}",
                    s.name,
                    if n == 1 { "" } else { "s" }
                )
            })
            .collect(),
        due: p
            .due_after_secs
            .map_or("never".into(), |s| format!("{s} s")),
        claim_ttl: format!("{} s", p.claim_ttl_secs),
        built_in: p.name == DEFAULT_POLICY,
        updated_at: when(p.updated_at),
    }
}

/// GET `/console/f/policies` (`?edit=<name>`: the form holds that policy).
pub async fn page(
    query: web::Query<EditQuery>,
    caller: Result<Caller, ApiError>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, Shown> {
    render(&state, &caller?, query.into_inner().edit.as_deref(), None).await
}

async fn render(
    state: &AppState,
    caller: &Caller,
    edit: Option<&str>,
    flash: Option<String>,
) -> Result<HttpResponse, Shown> {
    caller.require(Role::Admin)?;
    let list = state.policies.list().await.map_err(ApiError::from)?;
    let editing = edit.and_then(|name| list.iter().find(|p| p.name == name));
    let own: Vec<StageInput> = editing.map_or(Vec::new(), |p| {
        p.stages
            .iter()
            .enumerate()
            .map(|(i, s)| StageInput {
                n: i + 1,
                name: s.name.clone(),
                approvals: s.required_approvals.to_string(),
                groups: s.eligible_groups.join(", "),
            })
            .collect()
    });
    let mut stages = own;
    let rows = (stages.len() + SPARE_ROWS).clamp(3, MAX_ROWS);
    while stages.len() < rows {
        let n = stages.len() + 1;
        let (name, approvals, groups) = (String::new(), String::new(), String::new());
        stages.push(StageInput {
            n,
            name,
            approvals,
            groups,
        });
    }
    rendered(&Policies {
        flash,
        rows: list.iter().map(row).collect(),
        name: editing.map(|p| p.name.clone()).unwrap_or_default(),
        stages,
        due_after_secs: editing
            .and_then(|p| p.due_after_secs)
            .map(|s| s.to_string())
            .unwrap_or_default(),
        claim_ttl_secs: editing
            .map(|p| p.claim_ttl_secs.to_string())
            .unwrap_or_default(),
    })
}

/// A number as typed: a JSON number when it reads as one, else the text (which the API
/// refuses with its own message).
fn number(s: &str) -> Value {
    let s = s.trim();
    s.parse::<i64>().map_or_else(|_| json!(s), |n| json!(n))
}

/// The form's fields as the JSON body the API takes: the stage rows with anything typed
/// in them, in order; empty numbers left out.
fn body_of(fields: &[(String, String)]) -> (String, Vec<u8>) {
    let get = |k: &str| {
        fields
            .iter()
            .find(|(f, _)| f == k)
            .map_or("", |(_, v)| v.as_str())
    };
    let mut stages = Vec::new();
    for n in 1..=MAX_ROWS {
        let name = get(&format!("stage{n}_name"));
        let approvals = get(&format!("stage{n}_approvals"));
        let groups = get(&format!("stage{n}_groups"));
        if name.trim().is_empty() && approvals.trim().is_empty() && groups.trim().is_empty() {
            continue;
        }
        let groups: Vec<&str> = groups
            .split(',')
            .map(str::trim)
            .filter(|g| !g.is_empty())
            .collect();
        let mut stage = json!({ "name": name.trim(), "eligible_groups": groups });
        if !approvals.trim().is_empty() {
            stage["required_approvals"] = number(approvals);
        }
        stages.push(stage);
    }
    let mut body = json!({ "stages": stages });
    for key in ["due_after_secs", "claim_ttl_secs"] {
        if !get(key).trim().is_empty() {
            body[key] = number(get(key));
        }
    }
    let bytes = serde_json::to_vec(&body).expect("a JSON value serializes");
    (get("name").trim().to_string(), bytes)
}

/// POST `/console/f/policies`: writes the policy of the form, as
/// `PUT /api/v1/admin/policies/{name}` does.
pub async fn write(
    req: HttpRequest,
    payload: web::Payload,
    caller: Result<Caller, ApiError>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, Shown> {
    let beside = |e| Shown::beside(e, "#policy-error");
    let caller = caller.map_err(beside)?;
    caller.require(Role::Admin).map_err(beside)?;
    let fields: Vec<(String, String)> = form(&req, payload, &state).await?;
    let (name, bytes) = body_of(&fields);
    let written = policies::write(&state, &caller, &name, &bytes)
        .await
        .map_err(beside)?;
    let flash = format!(
        "Saved policy {}: version {}.",
        written.name, written.version
    );
    render(&state, &caller, None, Some(flash)).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_form_reads_as_the_api_body() {
        let f = |k: &str, v: &str| (k.to_string(), v.to_string());
        let fields = [
            f("name", " legal-2 "),
            f("stage1_name", "review"),
            f("stage1_approvals", "1"),
            f("stage1_groups", ""),
            f("stage2_name", "legal"),
            f("stage2_approvals", "0"),
            f("stage2_groups", "legal, finance ,"),
            f("stage3_name", ""),
            f("stage3_approvals", ""),
            f("due_after_secs", ""),
            f("claim_ttl_secs", "600"),
        ];
        let (name, bytes) = body_of(&fields);
        assert_eq!(name, "legal-2");
        let v: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(
            v,
            json!({"stages": [
                {"name": "review", "required_approvals": 1, "eligible_groups": []},
                {"name": "legal", "required_approvals": 0, "eligible_groups": ["legal", "finance"]}
            ], "claim_ttl_secs": 600})
        );
    }
}
