//! Spaces (knowledge bases): every document is in one space for life, and what a caller may
//! do with it is decided by the caller's roles in that space. A caller with no role in a
//! space cannot learn that anything in it exists (404 on every route).
//!
//! The roles in a space are the union of the caller's user membership and its groups'
//! memberships; in the space `default` only, the token's own roles count too (so every
//! client from before spaces keeps working unchanged). The token role `admin` is the
//! platform admin: every role in every space.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::inputs::{InputError, UserId};

/// The space every document from before spaces is in, and the one a document is created in
/// when its request names none.
pub const DEFAULT_SPACE: &str = "default";

/// A space's key: `^[a-z0-9][a-z0-9-]{0,62}$`, never changed once the space exists.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct SpaceKey(String);

impl SpaceKey {
    pub const MAX_CHARS: usize = 63;

    pub fn parse(s: &str) -> Result<Self, InputError> {
        let mut chars = s.chars();
        let first_ok = chars
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
        let rest_ok = chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        if first_ok && rest_ok && s.len() <= Self::MAX_CHARS {
            Ok(Self(s.to_string()))
        } else {
            Err(InputError {
                field: "space",
                problem: "must be 1 to 63 characters of a-z, 0-9 and '-', starting with a letter \
                          or a digit"
                    .into(),
            })
        }
    }

    pub fn default_space() -> Self {
        Self(DEFAULT_SPACE.to_string())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SpaceKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A role in a space.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SpaceRole {
    Author,
    Reviewer,
    /// Manages the space's members and settings, and does in its space what the platform
    /// admin does for documents and claims (archive any document, end a claim, read every
    /// draft).
    SpaceAdmin,
}

impl SpaceRole {
    pub const ALL: [SpaceRole; 3] = [
        SpaceRole::Author,
        SpaceRole::Reviewer,
        SpaceRole::SpaceAdmin,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SpaceRole::Author => "author",
            SpaceRole::Reviewer => "reviewer",
            SpaceRole::SpaceAdmin => "space_admin",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.as_str() == s)
    }

    fn bit(self) -> u8 {
        match self {
            SpaceRole::Author => 1,
            SpaceRole::Reviewer => 2,
            SpaceRole::SpaceAdmin => 4,
        }
    }
}

/// A set of roles in one space (empty: no role there, so nothing of it exists for the
/// caller).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SpaceRoles(u8);

impl SpaceRoles {
    pub const NONE: SpaceRoles = SpaceRoles(0);
    pub const ALL: SpaceRoles = SpaceRoles(7);

    pub fn of(roles: impl IntoIterator<Item = SpaceRole>) -> Self {
        Self(roles.into_iter().fold(0, |bits, r| bits | r.bit()))
    }

    /// Roles by name (as stored); a name that is not a role is an error naming it.
    pub fn parse<S: AsRef<str>>(names: &[S]) -> Result<Self, InputError> {
        let mut roles = SpaceRoles::NONE;
        for name in names {
            let role = SpaceRole::parse(name.as_ref()).ok_or_else(|| InputError {
                field: "roles",
                problem: format!(
                    "{:?} is not a role (author, reviewer, space_admin)",
                    name.as_ref()
                ),
            })?;
            roles = roles.with(role);
        }
        Ok(roles)
    }

    /// The most role names a membership's request may list (a name given twice counts once).
    pub const MAX_NAMES: usize = 16;

    /// A membership's roles: a non-empty set, from at most [`Self::MAX_NAMES`] names.
    pub fn parse_membership<S: AsRef<str>>(names: &[S]) -> Result<Self, InputError> {
        if names.len() > Self::MAX_NAMES {
            return Err(InputError {
                field: "roles",
                problem: format!("must list at most {} names", Self::MAX_NAMES),
            });
        }
        let roles = Self::parse(names)?;
        if roles.is_empty() {
            return Err(InputError {
                field: "roles",
                problem: "must name at least one role".into(),
            });
        }
        Ok(roles)
    }

    pub fn with(self, role: SpaceRole) -> Self {
        Self(self.0 | role.bit())
    }

    pub fn union(self, other: SpaceRoles) -> Self {
        Self(self.0 | other.0)
    }

    pub fn contains(self, role: SpaceRole) -> bool {
        self.0 & role.bit() != 0
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The roles, in the order of [`SpaceRole::ALL`].
    pub fn iter(self) -> impl Iterator<Item = SpaceRole> {
        SpaceRole::ALL
            .into_iter()
            .filter(move |r| self.contains(*r))
    }

    /// The roles' names, in the order of [`SpaceRole::ALL`] (as stored and shown).
    pub fn names(self) -> Vec<&'static str> {
        self.iter().map(SpaceRole::as_str).collect()
    }
}

/// Who a membership is for: a user (the token's `sub`) or a group (a value of the token's
/// groups claim).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Subject {
    User(String),
    Group(String),
}

impl Subject {
    /// `user:<sub>` or `group:<name>`, the name 1 to 256 characters without control
    /// characters (characters, as the published schemas count lengths).
    pub fn parse(s: &str) -> Result<Self, InputError> {
        let bad = |problem: &str| InputError {
            field: "subject",
            problem: problem.into(),
        };
        let (kind, name) = s
            .split_once(':')
            .ok_or_else(|| bad("must be user:<sub> or group:<name>"))?;
        if name.is_empty() || name.chars().count() > 256 || name.chars().any(char::is_control) {
            return Err(bad(
                "its name must be 1 to 256 characters without control characters",
            ));
        }
        match kind {
            "user" => Ok(Subject::User(name.to_string())),
            "group" => Ok(Subject::Group(name.to_string())),
            _ => Err(bad("must be user:<sub> or group:<name>")),
        }
    }

    pub fn user(id: &UserId) -> Self {
        Subject::User(id.as_str().to_string())
    }

    /// Every subject a caller is: its user, then each of its groups.
    pub fn of_caller(id: &UserId, groups: &[String]) -> Vec<String> {
        std::iter::once(Subject::user(id).to_string())
            .chain(groups.iter().map(|g| Subject::Group(g.clone()).to_string()))
            .collect()
    }
}

impl fmt::Display for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Subject::User(name) => write!(f, "user:{name}"),
            Subject::Group(name) => write!(f, "group:{name}"),
        }
    }
}

/// The token's own roles, as they count in the space `default`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenRoles {
    pub author: bool,
    pub reviewer: bool,
    pub admin: bool,
}

/// What a caller may do where: the platform admin flag, and its roles in each space where it
/// has any. Made once per request from the token and the memberships read then (a change of
/// membership holds from the next request on), or from the token alone with the memberships
/// left to the request's transactions ([`Access::memberships_unread`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Access {
    platform_admin: bool,
    spaces: BTreeMap<String, SpaceRoles>,
    /// The memberships are not in `spaces` yet: each transaction of the request reads them
    /// as it begins (`store::scope::defer`), and what it decides by space, it decides with
    /// [`Access::joined`] of what it read.
    unread: bool,
}

impl Access {
    /// The access of a caller whose token carries `token` roles and who holds
    /// `memberships` (a space's key and the roles of one of the caller's subjects there; a
    /// space may come more than once, once per subject).
    pub fn new(
        token: TokenRoles,
        memberships: impl IntoIterator<Item = (String, SpaceRoles)>,
    ) -> Self {
        let mut spaces: BTreeMap<String, SpaceRoles> = BTreeMap::new();
        let own = SpaceRoles::NONE;
        let own = if token.author {
            own.with(SpaceRole::Author)
        } else {
            own
        };
        let own = if token.reviewer {
            own.with(SpaceRole::Reviewer)
        } else {
            own
        };
        if !own.is_empty() {
            spaces.insert(DEFAULT_SPACE.to_string(), own);
        }
        for (space, roles) in memberships {
            let entry = spaces.entry(space).or_default();
            *entry = entry.union(roles);
        }
        spaces.retain(|_, r| !r.is_empty());
        Self {
            platform_admin: token.admin,
            spaces,
            unread: false,
        }
    }

    /// The access of a caller whose token carries `token` roles, its memberships not read:
    /// every transaction of its request reads them as it begins, in the same round trip
    /// (a route whose checks before its transaction the token alone passes). The platform
    /// admin's memberships change nothing, so its access is whole at once.
    pub fn memberships_unread(token: TokenRoles) -> Self {
        Self {
            unread: !token.admin,
            ..Self::new(token, [])
        }
    }

    /// The memberships are still to be read ([`Access::memberships_unread`]).
    pub fn is_unread(&self) -> bool {
        self.unread
    }

    /// This access with `memberships` read: what [`Access::new`] makes of the same token
    /// and memberships.
    pub fn joined(&self, memberships: impl IntoIterator<Item = (String, SpaceRoles)>) -> Self {
        let mut joined = self.clone();
        for (space, roles) in memberships {
            let entry = joined.spaces.entry(space).or_default();
            *entry = entry.union(roles);
        }
        joined.spaces.retain(|_, r| !r.is_empty());
        joined.unread = false;
        joined
    }

    /// The platform admin: every role in every space.
    pub fn platform_admin() -> Self {
        Self {
            platform_admin: true,
            spaces: BTreeMap::new(),
            unread: false,
        }
    }

    pub fn is_platform_admin(&self) -> bool {
        self.platform_admin
    }

    /// The caller's roles in `space` (none: the space and all in it do not exist for it).
    pub fn roles_in(&self, space: &str) -> SpaceRoles {
        if self.platform_admin {
            return SpaceRoles::ALL;
        }
        self.spaces.get(space).copied().unwrap_or_default()
    }

    /// The caller holds `role` in `space`.
    pub fn has(&self, space: &str, role: SpaceRole) -> bool {
        self.roles_in(space).contains(role)
    }

    /// The caller holds a role somewhere (a token with none and no membership is refused
    /// on every route).
    pub fn is_anyone(&self) -> bool {
        self.platform_admin || !self.spaces.is_empty()
    }

    /// The spaces where the caller holds `role`, or `None` for every space (the platform
    /// admin).
    pub fn spaces_with(&self, role: SpaceRole) -> Option<Vec<String>> {
        if self.platform_admin {
            return None;
        }
        Some(
            self.spaces
                .iter()
                .filter(|(_, r)| r.contains(role))
                .map(|(s, _)| s.clone())
                .collect(),
        )
    }

    /// The spaces where the caller holds any role, with its roles there (the platform
    /// admin's are not listed: it has every role everywhere).
    pub fn memberships(&self) -> impl Iterator<Item = (&str, SpaceRoles)> {
        self.spaces.iter().map(|(s, r)| (s.as_str(), *r))
    }

    /// The caller holds `role` in at least one space.
    pub fn has_anywhere(&self, role: SpaceRole) -> bool {
        self.platform_admin || self.spaces.values().any(|r| r.contains(role))
    }
}

/// A space as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Space {
    pub key: String,
    pub name: String,
    pub default_policy: Option<String>,
    pub created_at: chrono::DateTime<chrono::Utc>,
    pub updated_at: chrono::DateTime<chrono::Utc>,
}

#[cfg(test)]
mod tests;
