//! Spaces: what a caller may do where (its [`Access`], made once per request from its
//! token and its memberships).

use crate::domain::{Access, TokenRoles, UserId};
use crate::store::PgStore;

use super::error::Error;

pub struct SpaceService {
    store: PgStore,
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
}
