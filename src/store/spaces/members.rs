//! Statements on `space_members`: a space's members by pages (in subject order), and a
//! membership put or removed. A write takes the space's row lock first, so the writes of
//! one space's memberships run one at a time: what keeps the rule about its last
//! `space_admin` true under concurrent writes, and orders its chain.

use chrono::{DateTime, Utc};
use sqlx::{Postgres, Transaction};

use super::space::{write_change, ChangeRow, SpaceActor, SpaceWriteError};
use crate::domain::{
    check_last_admin, Membership, SpaceAction, SpaceRefusal, SpaceRole, SpaceRoles, Subject,
};
use crate::store::error::StoreError;
use crate::store::pg::{PgStore, Statement};

struct MemberRow {
    space_id: String,
    subject: String,
    roles: Vec<String>,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
}

/// Roles by name as stored; a name this release does not know (one a later release added)
/// is left out.
fn roles_of(names: &[String]) -> SpaceRoles {
    SpaceRoles::of(names.iter().filter_map(|n| SpaceRole::parse(n)))
}

impl From<MemberRow> for Membership {
    fn from(r: MemberRow) -> Self {
        Membership {
            roles: roles_of(&r.roles),
            space: r.space_id,
            subject: r.subject,
            created_at: r.created_at,
            updated_at: r.updated_at,
        }
    }
}

/// A membership as a write finds it, under the space's row lock: its roles (None: there
/// is none), and how many other memberships of the space hold `space_admin`.
struct Found {
    before: Option<SpaceRoles>,
    other_admins: i64,
}

/// Locks the space `space` (refused when there is none) and reads `subject`'s membership
/// there.
async fn lock_and_find(
    tx: &mut Transaction<'static, Postgres>,
    space: &str,
    subject: &str,
) -> Result<Found, SpaceWriteError> {
    sqlx::query_scalar!("SELECT key FROM spaces WHERE key = $1 FOR UPDATE", space)
        .fetch_optional(&mut **tx)
        .await?
        .ok_or(SpaceRefusal::NoSuchSpace)?;
    let found = sqlx::query!(
        r#"SELECT (SELECT roles FROM space_members WHERE space_id = $1 AND subject = $2)
                    AS before,
                  (SELECT count(*) FROM space_members
                   WHERE space_id = $1 AND subject <> $2 AND 'space_admin' = ANY(roles))
                    AS "other_admins!""#,
        space,
        subject
    )
    .fetch_one(&mut **tx)
    .await?;
    Ok(Found {
        before: found.before.as_deref().map(roles_of),
        other_admins: found.other_admins,
    })
}

impl PgStore {
    /// Up to `limit` members of `space` after the subject `after`, in subject order.
    pub async fn members(
        &self,
        space: &str,
        after: Option<&str>,
        limit: i64,
    ) -> Result<Vec<Membership>, StoreError> {
        let rows = sqlx::query_as!(
            MemberRow,
            "SELECT space_id, subject, roles, created_at, updated_at FROM space_members \
             WHERE space_id = $1 AND ($2::text IS NULL OR subject > $2) \
             ORDER BY subject LIMIT $3",
            space,
            after,
            limit
        )
        .fetch_all(&self.pool)
        .bounded(self)
        .await?;
        Ok(rows.into_iter().map(Membership::from).collect())
    }

    /// Gives `subject` exactly `roles` in `space` (created, or replaced), with a row of the
    /// space's chain: the membership, and whether it was created. Demoting the space's
    /// last `space_admin` is refused unless `platform_admin`.
    pub async fn put_member(
        &self,
        space: &str,
        subject: &Subject,
        roles: SpaceRoles,
        platform_admin: bool,
        actor: SpaceActor<'_>,
    ) -> Result<(Membership, bool), SpaceWriteError> {
        let subject = subject.to_string();
        let write = async {
            let mut tx = self.begin().await?;
            let found = lock_and_find(&mut tx, space, &subject).await?;
            check_last_admin(
                found.before,
                Some(roles),
                found.other_admins,
                platform_admin,
            )?;
            let names: Vec<String> = roles.names().into_iter().map(String::from).collect();
            let row = sqlx::query_as!(
                MemberRow,
                "INSERT INTO space_members (space_id, subject, roles) VALUES ($1, $2, $3) \
                 ON CONFLICT (space_id, subject) \
                   DO UPDATE SET roles = EXCLUDED.roles, updated_at = now() \
                 RETURNING space_id, subject, roles, created_at, updated_at",
                space,
                subject,
                &names
            )
            .fetch_one(&mut *tx)
            .await?;
            let change = ChangeRow {
                action: SpaceAction::MemberPut,
                subject: Some(&subject),
                roles: Some(roles),
                previous_roles: found.before,
                name: None,
                default_policy: None,
            };
            write_change(&mut tx, self, space, change, actor).await?;
            tx.commit().await?;
            Ok((Membership::from(row), found.before.is_none()))
        };
        self.bounded(write).await
    }

    /// Removes `subject`'s membership of `space`, with a row of the space's chain: the
    /// membership removed. Removing the space's last `space_admin` is refused unless
    /// `platform_admin`.
    pub async fn remove_member(
        &self,
        space: &str,
        subject: &Subject,
        platform_admin: bool,
        actor: SpaceActor<'_>,
    ) -> Result<Membership, SpaceWriteError> {
        let subject = subject.to_string();
        let write = async {
            let mut tx = self.begin().await?;
            let found = lock_and_find(&mut tx, space, &subject).await?;
            if found.before.is_none() {
                return Err(SpaceRefusal::NoSuchMember(subject.clone()).into());
            }
            check_last_admin(found.before, None, found.other_admins, platform_admin)?;
            let row = sqlx::query_as!(
                MemberRow,
                "DELETE FROM space_members WHERE space_id = $1 AND subject = $2 \
                 RETURNING space_id, subject, roles, created_at, updated_at",
                space,
                subject
            )
            .fetch_one(&mut *tx)
            .await?;
            let change = ChangeRow {
                action: SpaceAction::MemberRemoved,
                subject: Some(&subject),
                roles: None,
                previous_roles: found.before,
                name: None,
                default_policy: None,
            };
            write_change(&mut tx, self, space, change, actor).await?;
            tx.commit().await?;
            Ok(Membership::from(row))
        };
        self.bounded(write).await
    }
}
