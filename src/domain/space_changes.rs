//! Changes to spaces and their memberships: a space's name as given, why a change is
//! refused, the rule that keeps a space administered, and the audit rows the changes leave
//! (a space's creation in the admin chain, the platform's; its settings and memberships in
//! a chain of the space's own).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::audit::audited::{micros, Audited, Format, DERIVED};
use super::inputs::InputError;
use super::spaces::{SpaceRole, SpaceRoles};

/// A space's name: trimmed, 1 to 200 characters, no control characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpaceName(String);

impl SpaceName {
    pub const MAX_CHARS: usize = 200;

    pub fn parse(s: &str) -> Result<Self, InputError> {
        // Control characters anywhere, even where the trim would drop them (a tab, U+0085),
        // as the documented pattern says.
        let trimmed = s.trim();
        let ok = !trimmed.is_empty()
            && trimmed.chars().count() <= Self::MAX_CHARS
            && !s.chars().any(char::is_control);
        if ok {
            Ok(Self(trimmed.to_string()))
        } else {
            Err(InputError {
                field: "name",
                problem: "must be 1 to 200 characters, not only spaces, without control \
                          characters"
                    .into(),
            })
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A membership as stored: who holds which roles in a space.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Membership {
    pub space: String,
    pub subject: String,
    pub roles: SpaceRoles,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// Why a change to a space or its memberships was refused; nothing was written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpaceRefusal {
    #[error("no such space")]
    NoSuchSpace,
    #[error("{0} holds no membership in this space")]
    NoSuchMember(String),
    #[error("a space with the key {0:?} already exists")]
    Taken(String),
    #[error("no review policy is named {0:?}")]
    UnknownPolicy(String),
    #[error(
        "this would leave the space without a space_admin: only a platform admin may remove \
         or demote its last one; give another subject space_admin first"
    )]
    LastSpaceAdmin,
}

/// Whether a membership holding `before` (None: none yet) may become `after` (None:
/// removed) when `others` other memberships of the space hold `space_admin`: the last
/// `space_admin` of a space is removed or demoted only by the platform admin.
pub fn check_last_admin(
    before: Option<SpaceRoles>,
    after: Option<SpaceRoles>,
    others: i64,
    platform_admin: bool,
) -> Result<(), SpaceRefusal> {
    let admin = |r: Option<SpaceRoles>| r.is_some_and(|r| r.contains(SpaceRole::SpaceAdmin));
    if admin(before) && !admin(after) && others == 0 && !platform_admin {
        return Err(SpaceRefusal::LastSpaceAdmin);
    }
    Ok(())
}

/// What a space chain's row records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpaceAction {
    /// The space's settings written (its name and default policy as they are after).
    Updated,
    /// A membership created or replaced (its roles after, and before when it existed).
    MemberPut,
    /// A membership removed (its roles before).
    MemberRemoved,
    /// A webhook endpoint registered (`subject` `webhook:<id>`, `name` its URL), removed,
    /// given a new secret, enabled, or disabled (by an admin, or by the service itself).
    WebhookCreated,
    WebhookRemoved,
    WebhookRotated,
    WebhookEnabled,
    WebhookDisabled,
}

impl SpaceAction {
    pub fn as_str(self) -> &'static str {
        match self {
            SpaceAction::Updated => "space.updated",
            SpaceAction::MemberPut => "member.put",
            SpaceAction::MemberRemoved => "member.removed",
            SpaceAction::WebhookCreated => "webhook.created",
            SpaceAction::WebhookRemoved => "webhook.removed",
            SpaceAction::WebhookRotated => "webhook.rotated",
            SpaceAction::WebhookEnabled => "webhook.enabled",
            SpaceAction::WebhookDisabled => "webhook.disabled",
        }
    }
}

/// A row of a space's own audit chain (`space_audit_log`) as the chain covers it: every
/// column but its id and the chain's own (position, link, format). Linked in the formats
/// derived from this type (2 and later), like the admin chain's later formats.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpaceChangeRecord {
    pub space_id: String,
    pub action: String,
    pub subject: Option<String>,
    pub roles: Option<Vec<String>>,
    pub previous_roles: Option<Vec<String>>,
    pub name: Option<String>,
    pub default_policy: Option<String>,
    pub actor_id: String,
    pub request_id: Option<String>,
    #[serde(with = "micros")]
    pub at: DateTime<Utc>,
}

impl Audited for SpaceChangeRecord {
    const KIND: &'static str = "space_change";
    const FIRST: Format = DERIVED;
}

/// A space's creation as the admin chain covers it (`space_admin_actions`): every column but
/// its id and the chain's own. A kind that arrived after formats: derived from the start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpaceActionRecord {
    pub space_id: String,
    pub action: String,
    pub name: String,
    pub default_policy: Option<String>,
    pub actor_id: String,
    pub request_id: Option<String>,
    #[serde(with = "micros")]
    pub at: DateTime<Utc>,
}

impl Audited for SpaceActionRecord {
    const KIND: &'static str = "space_action";
    const FIRST: Format = DERIVED;
}

#[cfg(test)]
mod tests;
