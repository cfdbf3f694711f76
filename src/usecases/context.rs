//! What every use case is told about the request that runs it.

use crate::domain::UserId;
use crate::store::HeldKey;

use super::test_hooks::TestHooks;

/// Who asks (and in which groups), for which request, with which test hooks and held idempotency key.
#[derive(Debug, Clone)]
pub struct Context {
    pub actor: UserId,
    /// The groups of the caller's token: who may vote in a group-restricted stage.
    pub groups: Vec<String>,
    pub request_id: String,
    pub hooks: TestHooks,
    /// The request's `Idempotency-Key`, held: a success is recorded under it on COMMIT.
    pub held_key: Option<HeldKey>,
}
