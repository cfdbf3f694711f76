//! The HTTP API route by route: requests, replies, refusals and concurrent callers,
//! against the real stores. Part of the parallel run (`make test`, `--test-threads=$(TEST_THREADS)`).

pub(crate) mod audit;
mod audit_checkpoints;
mod audit_formats;
mod auth;
mod bad_input;
mod claims;
mod comments;
pub(crate) mod concurrency;
mod console;
mod console_spaces;
mod documents;
mod drain;
mod editing;
mod events;
mod headers;
mod idempotency;
mod isolation;
mod lifecycle;
mod listing;
mod operations;
mod outbox_admin;
mod policies;
mod repeats;
mod review_queue;
mod reviews;
mod routing;
mod row_security;
mod schema_mismatches;
mod slow_clients;
mod space_access;
mod space_audit;
mod space_events;
mod space_lists;
mod space_members;
pub(crate) mod spaces;
mod writes;
