//! A caller's memberships: what every authenticated request reads once, before it decides
//! anything (a change of membership holds from the next request on).

use crate::domain::{SpaceRoles, Subject, UserId};
use crate::store::error::StoreError;
use crate::store::pg::{PgStore, Statement};

impl PgStore {
    /// The roles of the user `id` and of its `groups` in each space where any of them is a
    /// member: one entry per membership (a space may come more than once).
    pub async fn memberships_of(
        &self,
        id: &UserId,
        groups: &[String],
    ) -> Result<Vec<(String, SpaceRoles)>, StoreError> {
        let subjects = Subject::of_caller(id, groups);
        let rows = sqlx::query!(
            "SELECT space_id, roles FROM space_members WHERE subject = ANY($1)",
            &subjects
        )
        .fetch_all(&self.access_pool)
        .bounded(self)
        .await?;
        // The table's CHECK admits only known roles; a name this release does not know (one
        // a later release added) grants nothing here.
        Ok(rows
            .into_iter()
            .map(|r| {
                let roles = r
                    .roles
                    .iter()
                    .filter_map(|n| crate::domain::SpaceRole::parse(n))
                    .collect::<Vec<_>>();
                (r.space_id, SpaceRoles::of(roles))
            })
            .collect())
    }
}
