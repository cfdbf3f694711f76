//! The admin's policies page: every review policy with its current version, and a form that
//! writes one (a new policy, or the next version of one) through the use case and the
//! checks (`PolicyDraft::parse`) the JSON API's `PUT /api/v1/admin/policies/{name}` writes
//! with, so its 422 messages are the API's. A refusal is shown beside the form, which
//! keeps what was typed.

use actix_web::{web, HttpRequest, HttpResponse};
use askama::Template;
use serde::Deserialize;

use super::render::{form, rendered, when, Shown};
use crate::domain::{Policy, PolicyDraft, PolicyName, Reverify, Stage, DEFAULT_POLICY};
use crate::web::auth::{Caller, Role};
use crate::web::error::ApiError;
use crate::web::state::AppState;

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
    /// "86400 s, 604800 s to re-verify", or "never".
    pub reverify: String,
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
    reverify_after_secs: String,
    reverify_grace_secs: String,
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
        reverify: match (p.reverify_after_secs, p.reverify_grace_secs) {
            (Some(a), Some(g)) => format!("{a} s, {g} s to re-verify"),
            (Some(a), None) => format!("{a} s"),
            _ => "never".into(),
        },
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
        reverify_after_secs: shown(editing.and_then(|p| p.reverify_after_secs)),
        reverify_grace_secs: shown(editing.and_then(|p| p.reverify_grace_secs)),
    })
}

/// A number as the form shows it (empty: none).
fn shown(n: Option<i32>) -> String {
    n.map(|s| s.to_string()).unwrap_or_default()
}

/// A number as typed: a JSON number when it reads as one, else the text (which the API
/// refuses with its own message).
/// A whole number as typed in a field (`what` names it in the refusal).
fn number(s: &str, what: &str) -> Result<i64, ApiError> {
    let s = s.trim();
    s.parse::<i64>()
        .map_err(|_| ApiError::validation(format!("{what}: {s} is not a whole number")))
}

/// A policy as the form writes it: its name, its stages (the rows not left blank), and
/// its two durations (a blank one left out).
struct Written {
    name: String,
    stages: Vec<Stage>,
    due_after_secs: Option<i64>,
    claim_ttl_secs: Option<i64>,
    reverify_after_secs: Option<i64>,
    reverify_grace_secs: Option<i64>,
}

fn written(fields: &[(String, String)]) -> Result<Written, ApiError> {
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
        let eligible_groups = groups
            .split(',')
            .map(str::trim)
            .filter(|g| !g.is_empty())
            .map(str::to_string)
            .collect();
        let refused = || ApiError::validation("required_approvals must be 1 to 5");
        let n = number(approvals, "required_approvals").map_err(|_| refused())?;
        stages.push(Stage {
            name: name.trim().to_string(),
            required_approvals: u8::try_from(n).map_err(|_| refused())?,
            eligible_groups,
        });
    }
    let optional = |key: &str| match get(key).trim() {
        "" => Ok(None),
        v => number(v, key).map(Some),
    };
    Ok(Written {
        name: get("name").trim().to_string(),
        stages,
        due_after_secs: optional("due_after_secs")?,
        claim_ttl_secs: optional("claim_ttl_secs")?,
        reverify_after_secs: optional("reverify_after_secs")?,
        reverify_grace_secs: optional("reverify_grace_secs")?,
    })
}

/// Writes the policy the form describes, with the checks the JSON API's PUT makes.
async fn write_policy(
    state: &AppState,
    caller: &Caller,
    fields: &[(String, String)],
) -> Result<Policy, ApiError> {
    let invalid = |e: crate::domain::InputError| ApiError::validation(e.to_string());
    let w = written(fields)?;
    let name = PolicyName::parse(&w.name).map_err(invalid)?;
    let draft = Reverify::parse(w.reverify_after_secs, w.reverify_grace_secs)
        .and_then(|r| PolicyDraft::parse(w.stages, w.due_after_secs, w.claim_ttl_secs, r));
    let draft = draft.map_err(invalid)?;
    Ok(state.policies.put(&caller.id, &name, &draft).await?)
}

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
    let written = write_policy(&state, &caller, &fields)
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
    fn the_form_reads_as_the_policy_it_writes() {
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
        let w = written(&fields).unwrap();
        assert_eq!(w.name, "legal-2");
        let stage = |name: &str, n: u8, groups: &[&str]| Stage {
            name: name.to_string(),
            required_approvals: n,
            eligible_groups: groups.iter().map(|g| g.to_string()).collect(),
        };
        assert_eq!(
            w.stages,
            vec![
                stage("review", 1, &[]),
                stage("legal", 0, &["legal", "finance"])
            ]
        );
        assert_eq!((w.due_after_secs, w.claim_ttl_secs), (None, Some(600)));
    }
}
