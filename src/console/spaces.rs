//! The console's spaces: which space a page is about, and the switcher that picks another.
//! The space is carried in the page's URL (`/console/queue?space=hr`), and the shell hands
//! it to its fragments; a page that names none is about `default` when the caller holds
//! the page's role there, else about the first space (by key) where it does. The switcher
//! lists the spaces where the caller holds a role (the use case behind `GET /spaces`) and
//! nothing else: a space the caller holds no role in is never named to it, and a page about
//! one is the API's 404.

use actix_web::{web, HttpResponse};
use askama::Template;
use serde::Deserialize;

use super::render::{rendered, Shown};
use crate::domain::{Access, SpaceKey, SpaceRole, SpaceRoles, DEFAULT_SPACE};
use crate::web::auth::Caller;
use crate::web::error::ApiError;
use crate::web::state::AppState;

/// The space a page's URL names, and its title search (the documents page).
#[derive(Deserialize, Default)]
pub struct SpaceQuery {
    pub space: Option<String>,
    pub q: Option<String>,
}

/// A space's key from a path or a URL: 422 when it is not one, as in the API.
pub fn key_of(s: &str) -> Result<SpaceKey, ApiError> {
    SpaceKey::parse(s).map_err(|e| ApiError::validation(format!("space: {}", e.problem)))
}

/// The space a page is about: the one `named` (an empty value names none), else `default`
/// when the caller holds `role` there (any role when `None`), else the first space by key
/// where it does, else `default`. Whether the caller may see it is the use case's to say.
pub fn current(
    access: &Access,
    named: Option<&str>,
    role: Option<SpaceRole>,
) -> Result<SpaceKey, ApiError> {
    if let Some(key) = named.filter(|s| !s.is_empty()) {
        return key_of(key);
    }
    let holds = |roles: SpaceRoles| match role {
        Some(r) => roles.contains(r),
        None => !roles.is_empty(),
    };
    if holds(access.roles_in(DEFAULT_SPACE)) {
        return Ok(SpaceKey::default_space());
    }
    let first = access.memberships().find(|(_, roles)| holds(*roles));
    match first {
        Some((key, _)) => key_of(key),
        None => Ok(SpaceKey::default_space()),
    }
}

/// A space the switcher offers.
pub struct Choice {
    pub key: String,
    /// "Human resources (hr) · author, reviewer".
    pub label: String,
    pub selected: bool,
}

#[derive(Template)]
#[template(path = "console/switcher.html")]
struct Switcher {
    /// The page the switcher leads to: `queue` or `documents`.
    page: &'static str,
    choices: Vec<Choice>,
    /// The page's space, when it is one of the caller's.
    current: Option<String>,
}

#[derive(Deserialize)]
pub struct SwitchQuery {
    to: Option<String>,
    space: Option<String>,
}

/// GET `/console/f/spaces?to=queue|documents&space=K`: the switcher of a page about one
/// space: the caller's spaces (the queue's: where it is a reviewer), the page's selected.
pub async fn switcher(
    query: web::Query<SwitchQuery>,
    caller: Result<Caller, ApiError>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, Shown> {
    let caller = caller?;
    let (page, role) = match query.to.as_deref() {
        Some("queue") => ("queue", Some(SpaceRole::Reviewer)),
        Some("documents") | None => ("documents", None),
        Some(_) => return Err(ApiError::validation("to: queue or documents").into()),
    };
    let current = current(&caller.access, query.space.as_deref(), role).ok();
    let spaces = state.spaces.list(&caller.access).await;
    let choices: Vec<Choice> = spaces
        .map_err(ApiError::from)?
        .into_iter()
        .filter(|s| role.is_none_or(|r| s.roles.contains(r)))
        .map(|s| Choice {
            selected: current.as_ref().is_some_and(|c| c.as_str() == s.space.key),
            label: format!(
                "{} ({}) · {}",
                s.space.name,
                s.space.key,
                s.roles.names().join(", ")
            ),
            key: s.space.key,
        })
        .collect();
    let current = choices.iter().find(|c| c.selected).map(|c| c.key.clone());
    rendered(&Switcher {
        page,
        choices,
        current,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::TokenRoles;

    fn member_of(spaces: &[(&str, &[SpaceRole])]) -> Access {
        let memberships = spaces
            .iter()
            .map(|(k, r)| (k.to_string(), SpaceRoles::of(r.iter().copied())));
        Access::new(TokenRoles::default(), memberships)
    }

    #[test]
    fn a_page_is_about_the_space_it_names_else_default_else_the_callers_first() {
        let key = |a: &Access, named, role| current(a, named, role).unwrap().to_string();
        let token = Access::new(
            TokenRoles {
                reviewer: true,
                ..TokenRoles::default()
            },
            [],
        );
        assert_eq!(key(&token, None, None), "default");
        assert_eq!(key(&token, Some(""), None), "default", "an empty choice");
        assert_eq!(
            key(&token, Some("hr"), None),
            "hr",
            "named: the use case decides"
        );
        let member = member_of(&[
            ("eng", &[SpaceRole::Author]),
            ("hr", &[SpaceRole::Reviewer]),
        ]);
        assert_eq!(key(&member, None, None), "eng");
        assert_eq!(key(&member, None, Some(SpaceRole::Reviewer)), "hr");
        assert_eq!(key(&member, None, Some(SpaceRole::SpaceAdmin)), "default");
        assert_eq!(key(&Access::platform_admin(), None, None), "default");
        let bad = current(&member, Some("Not A Key"), None).unwrap_err();
        assert_eq!(bad.status.as_u16(), 422);
    }
}
