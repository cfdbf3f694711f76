//! Persistence. PostgreSQL is the only source of truth: every SQL statement of the service
//! is here, checked at compile time against the schema in `migrations/`. MongoDB holds a
//! projection of it (`mongo`).
//!
//! A write loads and locks its rows, asks `domain::rules` for a plan, writes it, and hands
//! the open transaction back as [`Staged`]: the caller decides whether it commits. The store
//! never judges a change itself and knows nothing of locks, HTTP or idempotency policy.

mod audit_admin;
mod audit_heads;
mod audit_link;
mod audit_verify;
mod chain;
mod claims;
mod combined;
mod documents;
mod error;
mod idempotency;
mod lifecycle;
mod links;
pub mod mongo;
mod outbox;
mod outbox_admin;
mod outbox_figures;
mod pg;
mod policies;
mod queue;
mod read_only;
mod replays;
mod retention;
mod review_lock;
mod review_rows;
mod reviews;
mod session_lock;
pub mod trace_context;
mod tx;
mod votes;

pub use audit_verify::{BrokenAt, Verified};
pub use chain::{AuditChain, AuditSettings, DEV_AUDIT_KEY};
pub use claims::ClaimOp;
pub use error::{StoreError, StoreFailure, WriteError};
pub use idempotency::{HeldKey, KeyRecord, KeyState};
pub use outbox::OutboxRow;
pub use outbox_admin::{OutboxAction, OutboxFilter, OutboxRecord};
pub use pg::{migrate, migration_lock_id, DatabaseSettings, PgStore, PoolFigures};
pub use queue::{QueueFilter, QueueOrder};
pub use replays::{ReplayRecord, StoredEvent};
pub use retention::{cancelled_by_statement_timeout, PurgeSession};
pub use session_lock::{LockedSession, CHECKPOINT_LOCK, PURGE_LOCK};
pub use trace_context::TraceContext;
pub use tx::{Committed, Staged, WriteContext};
