//! Spaces: what a caller may do where (its [`Access`], made once per request from its
//! token and its memberships), and the spaces and memberships themselves: created by the
//! platform admin; read, with their members, by the space's members; their settings and
//! memberships written by its space admins (and the platform admin). A space a caller holds
//! no role in does not exist for it: every answer about it is "no such space".

use serde_json::Value;

use crate::domain::{
    Access, Membership, PolicyName, Space, SpaceKey, SpaceName, SpaceRefusal, SpaceRole,
    SpaceRoles, Subject, TokenRoles, UserId,
};
use crate::store::{PgStore, SpaceActor, SpaceUpdate, SpaceWriteError, StoreError, StoreFailure};

use super::commit::commit;
use super::context::Context;
use super::error::Error;
use super::idempotency::Recordable;

pub struct SpaceService {
    store: PgStore,
}

/// A space, with the caller's roles there (the platform admin: every role).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpaceSeen {
    pub space: Space,
    pub roles: SpaceRoles,
}

/// Why a use case of spaces did not complete; nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum SpaceError {
    /// No such space, or the caller holds no role in it (the same answer).
    #[error("no such space")]
    NotFound,
    /// The caller may see the space but not do this.
    #[error("{0}")]
    Forbidden(&'static str),
    #[error(transparent)]
    Refused(#[from] SpaceRefusal),
    /// A retry with the same idempotency key took it over; the change was rolled back.
    #[error("the idempotency key was taken over by a retry")]
    KeyTakenOver,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<SpaceWriteError> for SpaceError {
    fn from(e: SpaceWriteError) -> Self {
        match e {
            SpaceWriteError::Refused(r) => SpaceError::Refused(r),
            SpaceWriteError::Store(s) => SpaceError::Store(s),
        }
    }
}

impl From<Error> for SpaceError {
    /// What the commit seam answers: a key taken over, or a store's failure.
    fn from(e: Error) -> Self {
        match e {
            Error::KeyTakenOver => SpaceError::KeyTakenOver,
            Error::Store(s) => SpaceError::Store(s),
            other => SpaceError::Store(StoreError::Unexpected(anyhow::anyhow!("{other}"))),
        }
    }
}

impl StoreFailure for SpaceError {
    fn read_only(&self) -> bool {
        matches!(self, SpaceError::Store(e) if e.read_only())
    }
}

/// A space created: the reply shows it.
impl Recordable for Space {
    fn to_record(&self) -> Value {
        serde_json::to_value(self).expect("a space serializes")
    }
    fn from_record(record: Value) -> Result<Self, serde_json::Error> {
        serde_json::from_value(record)
    }
}

/// The caller's roles in `space`; a space it holds none in does not exist for it.
fn member(access: &Access, space: &SpaceKey) -> Result<SpaceRoles, SpaceError> {
    let roles = access.roles_in(space.as_str());
    if roles.is_empty() {
        return Err(SpaceError::NotFound);
    }
    Ok(roles)
}

/// The caller administers `space`: space_admin there, or the platform admin.
pub(super) fn administers(access: &Access, space: &SpaceKey) -> Result<SpaceRoles, SpaceError> {
    let roles = member(access, space)?;
    if !roles.contains(SpaceRole::SpaceAdmin) {
        return Err(SpaceError::Forbidden(
            "this action needs the space_admin role in this space (or the admin role)",
        ));
    }
    Ok(roles)
}

fn actor(ctx: &Context) -> SpaceActor<'_> {
    SpaceActor {
        id: &ctx.actor,
        request_id: &ctx.request_id,
    }
}

impl SpaceService {
    pub fn new(store: PgStore) -> Self {
        Self { store }
    }

    /// The access of the caller `id` in `groups` whose token carries `token` roles: its
    /// roles in every space, as the memberships are now.
    pub async fn access(
        &self,
        id: &UserId,
        groups: &[String],
        token: TokenRoles,
    ) -> Result<Access, Error> {
        let memberships = self.store.memberships_of(id, groups).await?;
        Ok(Access::new(token, memberships))
    }

    /// Creates the space `key` (the platform admin only); with the request's held key, the
    /// result is recorded under it in the same transaction.
    pub async fn create(
        &self,
        ctx: &Context,
        key: &SpaceKey,
        name: &SpaceName,
        default_policy: Option<&PolicyName>,
    ) -> Result<Space, SpaceError> {
        if !ctx.access.is_platform_admin() {
            return Err(SpaceError::Forbidden("this action needs the admin role"));
        }
        let store = &self.store;
        let policy = default_policy.map(PolicyName::as_str);
        let created = store
            .bounded(async {
                let uncommitted = store
                    .write_create_space(key, name, policy, actor(ctx))
                    .await?;
                Ok::<_, SpaceError>(commit(uncommitted, None, ctx.held_key.as_ref()).await?)
            })
            .await?;
        tracing::info!(
            space = key.as_str(),
            actor = ctx.actor.as_str(),
            "space created"
        );
        Ok(created.value)
    }

    /// Every space where the caller holds a role (the platform admin: every space), each
    /// with its roles there, by key.
    pub async fn list(&self, access: &Access) -> Result<Vec<SpaceSeen>, SpaceError> {
        let keys: Option<Vec<String>> = (!access.is_platform_admin())
            .then(|| access.memberships().map(|(k, _)| k.to_string()).collect());
        if keys.as_ref().is_some_and(Vec::is_empty) {
            return Ok(Vec::new());
        }
        let spaces = self.store.spaces(keys.as_deref()).await?;
        Ok(spaces
            .into_iter()
            .map(|space| SpaceSeen {
                roles: access.roles_in(&space.key),
                space,
            })
            .collect())
    }

    /// The space `key`, to a member of it.
    pub async fn get(&self, access: &Access, key: &SpaceKey) -> Result<SpaceSeen, SpaceError> {
        let roles = member(access, key)?;
        let space = self.store.space(key.as_str()).await?;
        let space = space.ok_or(SpaceError::NotFound)?;
        Ok(SpaceSeen { space, roles })
    }

    /// Writes `change` to the space `key` (its space admins), audited in its chain.
    pub async fn update(
        &self,
        ctx: &Context,
        key: &SpaceKey,
        change: SpaceUpdate<'_>,
    ) -> Result<SpaceSeen, SpaceError> {
        let roles = administers(&ctx.access, key)?;
        let space = self
            .store
            .update_space(key.as_str(), change, actor(ctx))
            .await
            .map_err(not_found)?;
        tracing::info!(
            space = key.as_str(),
            actor = ctx.actor.as_str(),
            "space settings written"
        );
        Ok(SpaceSeen { space, roles })
    }

    /// Up to `limit` members of the space `key` after the subject `after`, to a member of
    /// it.
    pub async fn members(
        &self,
        access: &Access,
        key: &SpaceKey,
        after: Option<&Subject>,
        limit: i64,
    ) -> Result<Vec<Membership>, SpaceError> {
        member(access, key)?;
        if access.is_platform_admin() && self.store.space(key.as_str()).await?.is_none() {
            // Anyone else holds a role only in a space that exists.
            return Err(SpaceError::NotFound);
        }
        let after = after.map(Subject::to_string);
        Ok(self
            .store
            .members(key.as_str(), after.as_deref(), limit)
            .await?)
    }

    /// Gives `subject` exactly `roles` in the space `key` (its space admins), audited in its
    /// chain: the membership, and whether it was created.
    pub async fn put_member(
        &self,
        ctx: &Context,
        key: &SpaceKey,
        subject: &Subject,
        roles: SpaceRoles,
    ) -> Result<(Membership, bool), SpaceError> {
        administers(&ctx.access, key)?;
        let platform = ctx.access.is_platform_admin();
        let put = self
            .store
            .put_member(key.as_str(), subject, roles, platform, actor(ctx))
            .await
            .map_err(not_found)?;
        tracing::info!(space = key.as_str(), %subject, roles = ?roles.names(), actor = ctx.actor.as_str(), "membership written");
        Ok(put)
    }

    /// Removes `subject`'s membership of the space `key` (its space admins), audited in its
    /// chain: the membership removed.
    pub async fn remove_member(
        &self,
        ctx: &Context,
        key: &SpaceKey,
        subject: &Subject,
    ) -> Result<Membership, SpaceError> {
        administers(&ctx.access, key)?;
        let platform = ctx.access.is_platform_admin();
        let removed = self
            .store
            .remove_member(key.as_str(), subject, platform, actor(ctx))
            .await
            .map_err(not_found)?;
        tracing::info!(space = key.as_str(), %subject, actor = ctx.actor.as_str(), "membership removed");
        Ok(removed)
    }
}

/// A write's error, with "no such space" said as every other answer about it says it.
fn not_found(e: SpaceWriteError) -> SpaceError {
    match e {
        SpaceWriteError::Refused(SpaceRefusal::NoSuchSpace) => SpaceError::NotFound,
        other => other.into(),
    }
}
