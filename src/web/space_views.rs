//! The views of spaces and memberships, as the JSON API answers them (and the console will
//! show them): a space with the caller's roles there, a membership, a page of members.

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::domain::{audit::hex, Membership, Space, SpaceRoles};
use crate::usecases::SpaceSeen;

/// The role names of a space, as shown.
fn names(roles: SpaceRoles) -> Vec<&'static str> {
    roles.names()
}

/// A space, with the caller's roles there.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(as = Space)]
pub struct SpaceView {
    #[schema(example = "hr")]
    pub key: String,
    #[schema(example = "Human resources")]
    pub name: String,
    /// The policy of a document created in the space without one; null: the setting
    /// review.default_policy.
    pub default_policy: Option<String>,
    /// The caller's roles in the space (the platform admin: every role).
    #[schema(inline, value_type = Vec<String>, example = json!(["author", "reviewer"]))]
    pub roles: Vec<&'static str>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl SpaceView {
    pub fn of(space: &Space, roles: SpaceRoles) -> Self {
        Self {
            key: space.key.clone(),
            name: space.name.clone(),
            default_policy: space.default_policy.clone(),
            roles: names(roles),
            created_at: space.created_at,
            updated_at: space.updated_at,
        }
    }
}

impl From<&SpaceSeen> for SpaceView {
    fn from(s: &SpaceSeen) -> Self {
        SpaceView::of(&s.space, s.roles)
    }
}

/// The spaces where the caller holds a role, by key.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct SpaceList {
    pub items: Vec<SpaceView>,
}

/// A membership: who holds which roles in a space.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(as = Membership)]
pub struct MembershipView {
    #[schema(example = "hr")]
    pub space: String,
    /// user:<sub> or group:<name>
    #[schema(example = "group:hr-reviewers")]
    pub subject: String,
    #[schema(inline, value_type = Vec<String>, example = json!(["reviewer"]))]
    pub roles: Vec<&'static str>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<&Membership> for MembershipView {
    fn from(m: &Membership) -> Self {
        Self {
            space: m.space.clone(),
            subject: m.subject.clone(),
            roles: names(m.roles),
            created_at: m.created_at,
            updated_at: m.updated_at,
        }
    }
}

/// A membership written by a PUT, and whether the PUT created it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct MembershipPut {
    #[schema(example = "hr")]
    pub space: String,
    #[schema(example = "user:ada")]
    pub subject: String,
    #[schema(inline, value_type = Vec<String>, example = json!(["author", "space_admin"]))]
    pub roles: Vec<&'static str>,
    /// true: there was no membership of this subject before; false: it was replaced.
    pub created: bool,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl MembershipPut {
    pub fn of(m: &Membership, created: bool) -> Self {
        Self {
            space: m.space.clone(),
            subject: m.subject.clone(),
            roles: names(m.roles),
            created,
            created_at: m.created_at,
            updated_at: m.updated_at,
        }
    }
}

/// A page of a space's members, by subject.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct MemberPage {
    pub items: Vec<MembershipView>,
    /// Where the next page starts (the cursor parameter); null on the last page.
    pub next_cursor: Option<String>,
}

/// The cursor after the member `subject`: its bytes in hexadecimal (safe in a URL as it
/// is).
pub fn member_cursor(subject: &str) -> String {
    hex(subject.as_bytes())
}

/// The subject a cursor of [`member_cursor`] names, if it is one.
pub fn after_member(cursor: &str) -> Option<String> {
    if cursor.is_empty() || !cursor.len().is_multiple_of(2) || !cursor.is_ascii() {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..cursor.len() / 2)
        .map(|i| u8::from_str_radix(&cursor[2 * i..2 * i + 2], 16).ok())
        .collect();
    String::from_utf8(bytes?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn member_cursors_round_trip_and_garbage_is_refused() {
        for s in ["user:ada", "group:eng/backend", "user:é%+"] {
            assert_eq!(after_member(&member_cursor(s)).as_deref(), Some(s));
        }
        for bad in ["", "a", "zz", "ff", "é1"] {
            assert_eq!(after_member(bad), None, "{bad}");
        }
    }
}
