//! The use cases the HTTP layer calls, each a service over the stores. `reviews` runs
//! submit, votes and withdraw under the outer lock; `workflow` the queue, claims, policies
//! and the overdue sweeper; `documents` creates, edits and reads;
//! `idempotency` is the policy of `Idempotency-Key`; `probes` is what operators read;
//! `outbox_admin` what admins do with parked outbox rows; `replays` how they ask for a
//! replay of the events; `audit` the audit chain's check, `checkpoints` the writer of its checkpoints; `test_hooks` where tests may
//! step in. Every write commits through `commit`, the one seam.
//!
//! Nothing here knows HTTP: each use case returns a typed result, which the caller renders.

mod audit;
mod audit_checkpoint;
mod checkpoints;
mod commit;
mod context;
mod documents;
mod error;
pub mod idempotency;
mod lifecycle;
mod outbox_admin;
mod probes;
mod records;
mod replays;
mod retention;
mod reviews;
mod stage_needs;
mod stats;
mod test_hooks;
mod workflow;

pub use audit::{AuditError, AuditService};
pub use audit_checkpoint::{AuditReport, CheckpointUse};
pub use checkpoints::{CheckpointRound, CheckpointWriter};
pub use context::Context;
pub use documents::{BodySource, DocumentRead, DocumentService};
pub use error::Error;
pub use idempotency::{Idempotency, IdempotencySettings, Recordable, Recorded, SentReply};
pub use lifecycle::PublishedRead;
pub use outbox_admin::{AdminError, OutboxAdmin, OutboxStats};
pub use probes::{Check, OutboxFigures, Probes, QueuesCheck, Readiness};
pub use replays::{ReplayError, ReplayService};
pub use retention::{PurgeRound, Retention, RetentionSettings, RetentionStats};
pub use reviews::ReviewService;
pub use stats::{ReviewStats, LATENCY_BUCKETS};
pub use test_hooks::{commit_signalled, Delivery, Point, TestHooks};
pub use workflow::{sweep_overdue, PolicyError, PolicyService, ReviewSettings};
