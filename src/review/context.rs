//! What every use case is told about the request that runs it.

use crate::domain::UserId;
use crate::store::Claim;

use super::hooks::Hooks;

/// Who asks, for which request, with which test hooks and idempotency claim.
#[derive(Debug, Clone)]
pub struct Context {
    pub actor: UserId,
    pub request_id: String,
    pub hooks: Hooks,
    /// The request's `Idempotency-Key`, held: a success is recorded under it on COMMIT.
    pub claim: Option<Claim>,
}
