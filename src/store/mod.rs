//! Persistence. PostgreSQL is the only source of truth: every SQL statement of the service
//! is here, checked at compile time against the schema in `migrations/`. MongoDB holds a
//! projection of it (`mongo`).
//!
//! A write loads and locks its rows, asks `domain::rules` for a plan, writes it, and hands
//! the open transaction back as [`Uncommitted`]: the caller decides whether it commits. The
//! store never judges a change itself and knows nothing of locks, HTTP or idempotency
//! policy. Each noun has a file or a folder (`audit/`, `reviews/`, `outbox/`,
//! `retention/`); what they share (the pool, the transaction pieces, the errors, read-only
//! sessions) is at the top.

mod archive;
mod audit;
mod claims;
mod comments;
mod document_lists;
mod documents;
mod error;
mod idempotency;
mod lease_row;
mod leases;
mod migrations;
pub mod mongo;
mod outbox;
mod pg;
mod policies;
mod read_only;
mod replays;
mod retention;
mod reverify;
mod reviews;
pub mod scope;
mod spaces;
mod tx;
mod webhooks;

pub use audit::chain::{AuditChain, AuditSettings, DEV_AUDIT_KEY};
pub use audit::verify::{BrokenAt, Verified};
pub use claims::ClaimOp;
pub use document_lists::SpaceDocuments;
pub use documents::NewPolicy;
pub use error::{StoreError, StoreFailure, WriteError};
pub use idempotency::{HeldKey, KeyRecord, KeyState};
pub use leases::BrokenLease;
pub use migrations::{migrate, migration_lock_id};
pub use outbox::admin::{OutboxAction, OutboxFilter, OutboxRecord};
pub use outbox::delivery::OutboxRow;
pub use outbox::trace_context::{TraceContext, TRACEPARENT, TRACESTATE};
pub use pg::{DatabaseSettings, PgStore, PoolFigures};
pub use replays::{ReplayRecord, StoredEvent};
pub use retention::purges::{cancelled_by_statement_timeout, PurgeSession};
pub use retention::session_lock::{LockedSession, CHECKPOINT_LOCK, PURGE_LOCK};
pub use reviews::queue::{QueueFilter, QueueOrder};
pub use spaces::{SpaceActor, SpaceUpdate, SpaceWriteError};
pub use tx::{Committed, Uncommitted, WriteContext};
pub use webhooks::deliveries::{
    ClaimLimits, ClaimedDelivery, DeliveryRecord, DisabledEndpoint, Failure,
};
pub use webhooks::{NewWebhook, WebhookRecord, WebhookWriteError, WEBHOOKS_PER_SPACE};
