//! Review policies: read by anyone, written by admins; the built-in policy cannot be
//! changed.

use crate::domain::{Policy, PolicyDraft, PolicyName, Refusal, UserId, DEFAULT_POLICY};
use crate::store::{PgStore, StoreError};

use super::error::Error;

/// Review policies: read by anyone, written by admins.
pub struct PolicyService {
    store: PgStore,
}

impl PolicyService {
    pub fn new(store: PgStore) -> Self {
        Self { store }
    }

    pub async fn get(&self, name: &str) -> Result<Policy, Error> {
        Ok(self.store.policy(name).await?.ok_or(Refusal::NotFound)?)
    }

    pub async fn list(&self) -> Result<Vec<Policy>, Error> {
        Ok(self.store.policies().await?)
    }

    /// Writes the next version of `name`; the built-in policy cannot be changed.
    pub async fn put(
        &self,
        actor: &UserId,
        name: &PolicyName,
        draft: &PolicyDraft,
    ) -> Result<Policy, PolicyError> {
        if name.as_str() == DEFAULT_POLICY {
            return Err(PolicyError::BuiltIn);
        }
        Ok(self.store.put_policy(name, draft, actor.as_str()).await?)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("the built-in policy \"default\" cannot be changed; write a policy of another name")]
    BuiltIn,
    #[error(transparent)]
    Store(#[from] StoreError),
}
