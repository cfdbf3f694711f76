//! What every use case is told about the request that runs it.

use crate::domain::{Reader, UserId};
use crate::store::HeldKey;

use super::test_hooks::TestHooks;

/// Who asks (and in which groups), for which request, with which test hooks and held idempotency key.
#[derive(Debug, Clone)]
pub struct Context {
    pub actor: UserId,
    /// The caller holds the admin role (it may read every draft, archive any document).
    pub admin: bool,
    /// The groups of the caller's token: who may vote in a group-restricted stage.
    pub groups: Vec<String>,
    pub request_id: String,
    pub hooks: TestHooks,
    /// The request's `Idempotency-Key`, held: a success is recorded under it on COMMIT.
    pub held_key: Option<HeldKey>,
}

impl Context {
    /// The caller, as visibility sees it.
    pub fn reader(&self) -> Reader<'_> {
        Reader {
            id: &self.actor,
            admin: self.admin,
        }
    }
}
