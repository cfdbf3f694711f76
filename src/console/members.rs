//! A space's members page: who holds which roles in the space, a page at a time, to any of
//! its members (as `GET /spaces/{key}/members`); to its space admins (and the platform
//! admin), a form that gives a user or group exactly the roles checked (a membership put),
//! an Edit button that fills it with a member's roles, and Remove, through the use cases
//! the JSON API's PUT and DELETE call, under the same rules: no role in the space 404, a
//! member without `space_admin` 403 (the page shows it the list without the forms), the
//! last `space_admin` kept but by the platform admin, said in a sentence. A change holds
//! from the next request on: the page drawn after it still shows this request's forms.

use actix_web::{web, HttpRequest, HttpResponse};
use askama::Template;
use serde::Deserialize;

use super::render::{form, rendered, when, Shown};
use super::spaces::key_of;
use crate::domain::{Access, Membership, SpaceKey, SpaceRefusal, SpaceRole, SpaceRoles, Subject};
use crate::usecases::SpaceError;
use crate::web::auth::Caller;
use crate::web::error::ApiError;
use crate::web::paging;
use crate::web::space_views::{after_member, member_cursor};
use crate::web::state::AppState;

/// A membership as the list shows it.
pub struct MemberRow {
    pub subject: String,
    pub roles: String,
    pub updated_at: String,
    /// `{"subject": ...}` (JSON, for `hx-vals`): what Remove sends.
    pub vals: String,
    /// `edit=...` (URL-encoded): the query of its Edit button.
    pub edit: String,
}

/// What the membership form holds: empty, or the member being edited.
#[derive(Default)]
pub struct MemberForm {
    pub group: bool,
    pub name: String,
    pub roles: Vec<(&'static str, bool)>,
}

impl MemberForm {
    fn of(subject: Option<&str>, roles: SpaceRoles) -> Self {
        let parsed = subject.and_then(|s| Subject::parse(s).ok());
        let (group, name) = match parsed {
            Some(Subject::Group(n)) => (true, n),
            Some(Subject::User(n)) => (false, n),
            None => (false, String::new()),
        };
        let roles = [
            SpaceRole::Author,
            SpaceRole::Reviewer,
            SpaceRole::SpaceAdmin,
        ]
        .map(|r| (r.as_str(), roles.contains(r)))
        .to_vec();
        Self { group, name, roles }
    }
}

#[derive(Template)]
#[template(path = "console/members.html")]
struct Members {
    flash: Option<String>,
    space: String,
    name: String,
    rows: Vec<MemberRow>,
    next_cursor: Option<String>,
    /// The caller administers the space: the forms are shown.
    admin: bool,
    form: MemberForm,
}

#[derive(Deserialize, Default)]
pub struct MembersQuery {
    cursor: Option<String>,
    /// A member whose roles the form holds.
    edit: Option<String>,
}

/// Members a page shows.
const ROWS: i64 = 50;

fn row(m: &Membership) -> MemberRow {
    let edit = serde_urlencoded::to_string([("edit", &m.subject)]).unwrap_or_default();
    MemberRow {
        subject: m.subject.clone(),
        roles: m.roles.names().join(", "),
        updated_at: when(m.updated_at),
        vals: serde_json::json!({ "subject": m.subject }).to_string(),
        edit,
    }
}

/// GET `/console/f/spaces/{key}/members?cursor=&edit=`: the page of members.
pub async fn page(
    path: web::Path<String>,
    query: web::Query<MembersQuery>,
    caller: Result<Caller, ApiError>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, Shown> {
    let caller = caller?;
    let key = key_of(&path)?;
    Ok(render(&state, &caller.access, &key, query.into_inner(), None).await?)
}

async fn render(
    state: &AppState,
    access: &Access,
    key: &SpaceKey,
    query: MembersQuery,
    flash: Option<String>,
) -> Result<HttpResponse, ApiError> {
    let seen = state.spaces.get(access, key).await?;
    let after = match query.cursor.as_deref() {
        None => None,
        Some(c) => {
            let subject = after_member(c).and_then(|s| Subject::parse(&s).ok());
            Some(subject.ok_or_else(paging::bad_cursor)?)
        }
    };
    let listed = state.spaces.members(access, key, after.as_ref(), ROWS + 1);
    let mut members = listed.await?;
    let next_cursor = paging::cut(&mut members, ROWS, |m| member_cursor(&m.subject));
    let editing = query.edit.as_deref();
    let roles = editing
        .and_then(|s| members.iter().find(|m| m.subject == s))
        .map_or(SpaceRoles::NONE, |m| m.roles);
    let page = Members {
        flash,
        space: key.to_string(),
        name: seen.space.name,
        rows: members.iter().map(row).collect(),
        next_cursor,
        admin: seen.roles.contains(SpaceRole::SpaceAdmin),
        form: MemberForm::of(editing, roles),
    };
    rendered(&page).map_err(|s| s.error)
}

/// The subject and roles of the membership form: `kind` (user or group), `name`, and a
/// `roles` field per role checked.
fn membership(fields: &[(String, String)]) -> Result<(Subject, SpaceRoles), ApiError> {
    let field = |name: &str| {
        fields
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.trim())
    };
    let kind = field("kind").unwrap_or("user");
    let subject = Subject::parse(&format!("{kind}:{}", field("name").unwrap_or_default()));
    let subject = subject.map_err(|e| ApiError::validation(e.to_string()))?;
    let names: Vec<&str> = fields
        .iter()
        .filter(|(k, _)| k == "roles")
        .map(|(_, v)| v.as_str())
        .collect();
    let roles = SpaceRoles::parse_membership(&names)
        .map_err(|e| ApiError::validation(format!("roles: {} (check at least one)", e.problem)))?;
    Ok((subject, roles))
}

/// Where a refusal of the forms is shown: beside them, which keep what was typed.
const ERROR_AREA: &str = "#member-error";

/// A refusal of a membership write, in the console's words for the last space admin.
fn refused(e: SpaceError) -> Shown {
    let last = matches!(e, SpaceError::Refused(SpaceRefusal::LastSpaceAdmin));
    let mut shown = Shown::beside(ApiError::from(e), ERROR_AREA);
    if last {
        shown.message = Some(
            "This is the space's last space admin: give space_admin to another member first \
             (only a platform admin may leave a space without one)."
                .into(),
        );
    }
    shown
}

/// POST `/console/f/spaces/{key}/members/save`: the JSON API's `PUT
/// /spaces/{key}/members/{subject}` with the roles checked; then the page, with a flash.
pub async fn save(
    req: HttpRequest,
    path: web::Path<String>,
    payload: web::Payload,
    caller: Result<Caller, ApiError>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, Shown> {
    let beside = |e| Shown::beside(e, ERROR_AREA);
    let caller = caller.map_err(beside)?;
    let key = key_of(&path).map_err(beside)?;
    let fields: Vec<(String, String)> = form(&req, payload, &state).await?;
    let (subject, roles) = membership(&fields).map_err(beside)?;
    let ctx = state.context(&req, &caller);
    let put = state.spaces.put_member(&ctx, &key, &subject, roles).await;
    let (m, created) = put.map_err(refused)?;
    let roles = m.roles.names().join(", ");
    let flash = match created {
        true => format!("{subject} is a member of {key} now: {roles}."),
        false => format!("{subject} holds {roles} in {key} now."),
    };
    let page = render(
        &state,
        &caller.access,
        &key,
        MembersQuery::default(),
        Some(flash),
    );
    page.await.map_err(Shown::action)
}

#[derive(Deserialize)]
pub struct RemoveForm {
    #[serde(default)]
    subject: String,
}

/// POST `/console/f/spaces/{key}/members/remove`: the JSON API's `DELETE
/// /spaces/{key}/members/{subject}`; then the page, with a flash.
pub async fn remove(
    req: HttpRequest,
    path: web::Path<String>,
    payload: web::Payload,
    caller: Result<Caller, ApiError>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, Shown> {
    let beside = |e| Shown::beside(e, ERROR_AREA);
    let caller = caller.map_err(beside)?;
    let key = key_of(&path).map_err(beside)?;
    let f: RemoveForm = form(&req, payload, &state).await?;
    let subject = Subject::parse(f.subject.trim());
    let subject = subject.map_err(|e| beside(ApiError::validation(e.to_string())))?;
    let ctx = state.context(&req, &caller);
    let removed = state.spaces.remove_member(&ctx, &key, &subject).await;
    removed.map_err(refused)?;
    let flash = format!("{subject} is no longer a member of {key}.");
    let page = render(
        &state,
        &caller.access,
        &key,
        MembersQuery::default(),
        Some(flash),
    );
    page.await.map_err(Shown::action)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_form_reads_as_the_membership_it_puts() {
        let f = fields(&[
            ("kind", "group"),
            ("name", " hr-reviewers "),
            ("roles", "reviewer"),
            ("roles", "author"),
        ]);
        let (subject, roles) = membership(&f).unwrap();
        assert_eq!(subject.to_string(), "group:hr-reviewers");
        assert_eq!(roles.names(), ["author", "reviewer"]);
        let none = membership(&fields(&[("kind", "user"), ("name", "ada")])).unwrap_err();
        assert_eq!(none.status.as_u16(), 422);
        let nameless = membership(&fields(&[("name", ""), ("roles", "author")])).unwrap_err();
        assert_eq!(nameless.status.as_u16(), 422);
        let unknown = fields(&[("name", "ada"), ("roles", "owner")]);
        assert_eq!(membership(&unknown).unwrap_err().status.as_u16(), 422);
    }

    #[test]
    fn an_edited_member_fills_the_form() {
        let roles = SpaceRoles::of([SpaceRole::Reviewer]);
        let form = MemberForm::of(Some("group:eng/backend"), roles);
        assert!(form.group);
        assert_eq!(form.name, "eng/backend");
        assert_eq!(
            form.roles,
            [
                ("author", false),
                ("reviewer", true),
                ("space_admin", false)
            ]
        );
        assert_eq!(MemberForm::of(Some("nobody"), roles).name, "");
    }
}
