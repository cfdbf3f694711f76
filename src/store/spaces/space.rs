//! Statements on `spaces`: a space created (its row, and its creation in the admin chain,
//! in one transaction), read, listed, and its settings written (with a row of its own
//! chain, under its row lock).

use sqlx::{PgConnection, Postgres, Transaction};

use crate::domain::{Space, SpaceAction, SpaceKey, SpaceName, SpaceRefusal, SpaceRoles, UserId};
use crate::store::audit::linking::{link_admin, Only};
use crate::store::audit::space_links::link_space;
use crate::store::error::{violates, StoreError, StoreFailure};
use crate::store::pg::{PgStore, Statement};
use crate::store::tx::Uncommitted;

/// Spaces listed at most (every space a caller may see is listed at once).
const MAX_SPACES: i64 = 10_000;

/// Why a write of a space or a membership did not happen.
#[derive(Debug, thiserror::Error)]
pub enum SpaceWriteError {
    /// Refused; nothing was written.
    #[error(transparent)]
    Refused(#[from] SpaceRefusal),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<sqlx::Error> for SpaceWriteError {
    fn from(e: sqlx::Error) -> Self {
        SpaceWriteError::Store(e.into())
    }
}

impl StoreFailure for SpaceWriteError {
    fn read_only(&self) -> bool {
        matches!(self, SpaceWriteError::Store(e) if e.read_only())
    }
}

/// A change of a space's settings: `name` when given; `default_policy` when given (its
/// inner None: none, the setting `review.default_policy` applies).
#[derive(Debug, Clone, Copy, Default)]
pub struct SpaceUpdate<'a> {
    pub name: Option<&'a SpaceName>,
    pub default_policy: Option<Option<&'a str>>,
}

/// Who writes, for which request: what a space's audit rows record.
#[derive(Debug, Clone, Copy)]
pub struct SpaceActor<'a> {
    pub id: &'a UserId,
    pub request_id: &'a str,
}

/// The refusal of a write that named a policy that does not exist, or the error as it was.
fn unknown_policy(e: sqlx::Error, policy: Option<&str>) -> SpaceWriteError {
    match policy {
        Some(p) if violates(&e, "spaces_default_policy_fkey") => {
            SpaceRefusal::UnknownPolicy(p.to_string()).into()
        }
        _ => e.into(),
    }
}

impl PgStore {
    /// Every space (`keys` None) or those of `keys`, by key.
    pub async fn spaces(&self, keys: Option<&[String]>) -> Result<Vec<Space>, StoreError> {
        sqlx::query_as!(
            Space,
            "SELECT key, name, default_policy, created_at, updated_at FROM spaces \
             WHERE $1::text[] IS NULL OR key = ANY($1) ORDER BY key LIMIT $2",
            keys,
            MAX_SPACES
        )
        .fetch_all(&self.pool)
        .bounded(self)
        .await
    }

    pub async fn space(&self, key: &str) -> Result<Option<Space>, StoreError> {
        sqlx::query_as!(
            Space,
            "SELECT key, name, default_policy, created_at, updated_at FROM spaces WHERE key = $1",
            key
        )
        .fetch_optional(&self.pool)
        .bounded(self)
        .await
    }

    /// Creates the space `key` and links its creation into the admin chain, uncommitted (a
    /// request's idempotency record joins the transaction). A taken key and a default
    /// policy that does not exist are refused.
    pub async fn write_create_space(
        &self,
        key: &SpaceKey,
        name: &SpaceName,
        default_policy: Option<&str>,
        actor: SpaceActor<'_>,
    ) -> Result<Uncommitted<Space>, SpaceWriteError> {
        let mut tx = self.begin().await?;
        let space = sqlx::query_as!(
            Space,
            "INSERT INTO spaces (key, name, default_policy) VALUES ($1, $2, $3) \
             RETURNING key, name, default_policy, created_at, updated_at",
            key.as_str(),
            name.as_str(),
            default_policy
        )
        .fetch_one(&mut *tx)
        .await
        .map_err(|e| {
            if violates(&e, "spaces_pkey") {
                SpaceRefusal::Taken(key.to_string()).into()
            } else {
                unknown_policy(e, default_policy)
            }
        })?;
        let id = sqlx::query_scalar!(
            "INSERT INTO space_admin_actions \
               (space_id, action, name, default_policy, actor_id, request_id, at) \
             VALUES ($1, 'space.created', $2, $3, $4, $5, $6) RETURNING id",
            space.key,
            space.name,
            space.default_policy,
            actor.id.as_str(),
            actor.request_id,
            space.created_at
        )
        .fetch_one(&mut *tx)
        .await?;
        // The creation joins the admin chain, under its head's row lock.
        link_admin(&mut tx, &self.audit, Only::SpaceAction(id)).await?;
        Ok(Uncommitted::new(tx, space, None))
    }

    /// Writes `change` to the space `key`, with a row of its chain; the space as it is
    /// after.
    pub async fn update_space(
        &self,
        key: &str,
        change: SpaceUpdate<'_>,
        actor: SpaceActor<'_>,
    ) -> Result<Space, SpaceWriteError> {
        let write = async {
            let mut tx = self.begin().await?;
            let (set_policy, policy) = match change.default_policy {
                Some(p) => (true, p),
                None => (false, None),
            };
            let space = sqlx::query_as!(
                Space,
                "UPDATE spaces SET name = COALESCE($2, name), \
                   default_policy = CASE WHEN $3 THEN $4 ELSE default_policy END, \
                   updated_at = now() \
                 WHERE key = $1 \
                 RETURNING key, name, default_policy, created_at, updated_at",
                key,
                change.name.map(SpaceName::as_str),
                set_policy,
                policy
            )
            .fetch_optional(&mut *tx)
            .await
            .map_err(|e| unknown_policy(e, policy))?
            .ok_or(SpaceRefusal::NoSuchSpace)?;
            let row = ChangeRow {
                action: SpaceAction::Updated,
                subject: None,
                roles: None,
                previous_roles: None,
                name: Some(&space.name),
                default_policy: space.default_policy.as_deref(),
            };
            write_change(&mut tx, self, key, row, actor).await?;
            tx.commit().await?;
            Ok(space)
        };
        self.bounded(write).await
    }
}

/// A row of a space's chain, before it is written.
pub(crate) struct ChangeRow<'a> {
    pub action: SpaceAction,
    pub subject: Option<&'a str>,
    pub roles: Option<SpaceRoles>,
    pub previous_roles: Option<SpaceRoles>,
    pub name: Option<&'a str>,
    pub default_policy: Option<&'a str>,
}

/// Writes `row` into `space`'s chain and links it, in `tx` (which holds the space's row
/// lock, or takes it here).
pub(crate) async fn write_change(
    tx: &mut Transaction<'static, Postgres>,
    store: &PgStore,
    space: &str,
    row: ChangeRow<'_>,
    actor: SpaceActor<'_>,
) -> Result<(), sqlx::Error> {
    let names = |r: Option<SpaceRoles>| r.map(|r| r.names().into_iter().map(String::from));
    let roles: Option<Vec<String>> = names(row.roles).map(Iterator::collect);
    let previous: Option<Vec<String>> = names(row.previous_roles).map(Iterator::collect);
    sqlx::query!(
        "INSERT INTO space_audit_log (space_id, action, subject, roles, previous_roles, name, \
                                      default_policy, actor_id, request_id) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        space,
        row.action.as_str(),
        row.subject,
        roles.as_deref(),
        previous.as_deref(),
        row.name,
        row.default_policy,
        actor.id.as_str(),
        actor.request_id
    )
    .execute(&mut **tx)
    .await?;
    let conn: &mut PgConnection = tx;
    link_space(conn, &store.audit, space).await?;
    Ok(())
}
