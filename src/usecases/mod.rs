//! The use cases the HTTP layer calls, each a service over the stores. `reviews` runs
//! submit, votes and withdraw under the outer lock, the queue and claims, and the overdue
//! sweeper; `policies` reads and writes review policies; `documents` creates, edits and
//! reads, and posts comments; `idempotency` is the policy of `Idempotency-Key`; `probes`
//! is what operators read; `outbox_admin` what admins do with parked outbox rows;
//! `replays` how they ask for a replay of the events; `spaces` the spaces and their
//! memberships, and what a caller may do where; `audit` the audit chain's check and
//! the writer of its checkpoints; `test_hooks` where tests may step in. Every write commits
//! through `commit`, the one seam.
//!
//! Nothing here knows HTTP: each use case returns a typed result, which the caller renders.

mod audit;
mod commit;
mod context;
mod diffs;
mod documents;
mod error;
pub mod idempotency;
mod leases;
mod lists;
mod outbox_admin;
mod policies;
mod probes;
mod replays;
mod retention;
mod reviews;
mod spaces;
mod stats;
mod test_hooks;
mod unseen;
mod webhooks;

pub use audit::check::{AuditError, AuditService};
pub use audit::checkpoints::{CheckpointRound, CheckpointWriter};
pub use audit::report::{AuditReport, CheckpointUse};
pub use context::Context;
pub use diffs::{Held, HeldCopy};
pub use documents::{BodySource, DocumentRead, DocumentService, EditChange, PublishedRead};
pub use error::Error;
pub use idempotency::{Idempotency, IdempotencySettings, Recordable, Recorded, SentReply};
pub use leases::{EditSettings, GivenBack, LeaseSeen, LeaseService, LeaseState};
pub use lists::DocumentsPage;
pub use outbox_admin::{AdminError, OutboxAdmin, OutboxStats};
pub use policies::{PolicyError, PolicyService};
pub use probes::{Check, OutboxFigures, Probes, QueuesCheck, Readiness};
pub use replays::{ReplayError, ReplayService};
pub use retention::{PurgeRound, Retention, RetentionSettings, RetentionStats};
pub use reviews::overdue::{sweep_overdue, ReviewSettings};
pub use reviews::reverify::schedule_reverifications;
pub use reviews::service::ReviewService;
pub use spaces::{SpaceError, SpaceSeen, SpaceService};
pub use stats::{ReviewStats, LATENCY_BUCKETS};
pub use test_hooks::{commit_signalled, Delivery, Point, TestHooks};
pub use webhooks::{WebhookError, WebhookService, WithSecret};
