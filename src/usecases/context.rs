//! What every use case is told about the request that runs it.

use std::sync::Arc;
use std::time::Duration;

use crate::domain::{Access, Conditions, Guard, IfMatch, Reader, UserId};
use crate::store::{HeldKey, WriteContext};

use super::test_hooks::TestHooks;

/// Who asks (and in which groups), for which request, with which test hooks and held idempotency key.
#[derive(Debug, Clone)]
pub struct Context {
    pub actor: UserId,
    /// The caller's roles in each space (the platform admin: every role everywhere).
    pub access: Arc<Access>,
    /// The groups of the caller's token: who may vote in a group-restricted stage.
    pub groups: Vec<String>,
    pub request_id: String,
    pub hooks: TestHooks,
    /// The request's `Idempotency-Key`, held: a success is recorded under it on COMMIT.
    pub held_key: Option<HeldKey>,
    /// The request's `If-Match` (`None`: it sent none), judged under the row lock.
    pub if_match: Option<IfMatch>,
    /// The request's `Lease-Token` (an edit's), judged under the row lock.
    pub lease_token: Option<String>,
}

impl Context {
    /// What a write of this request runs with: its actor, request id, `guard`, and how long
    /// it owns the outbox row it adds.
    pub(super) fn writing(
        &self,
        guard: Guard,
        own_outbox_for: Option<Duration>,
    ) -> WriteContext<'_> {
        WriteContext {
            actor: &self.actor,
            access: &self.access,
            request_id: &self.request_id,
            guard,
            own_outbox_for,
            conditions: Conditions {
                if_match: self.if_match.as_ref(),
                lease_token: self.lease_token.as_deref(),
            },
        }
    }

    /// The caller, as visibility sees it.
    pub fn reader(&self) -> Reader<'_> {
        Reader {
            id: &self.actor,
            access: &self.access,
        }
    }
}
