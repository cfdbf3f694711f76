//! kh-review: the document-review workflow service of the knowledge base.
//!
//! Request path of a transition: authenticate, outer Redis lock (or degraded to none),
//! PostgreSQL transaction with row locks, COMMIT, then the outbox delivers the MongoDB
//! projection and the RabbitMQ event. See `docs/` and DESIGN.md for the contracts.

pub mod auth;
pub mod config;
pub mod domain;
pub mod http;
pub mod lock;
pub mod metrics;
pub mod outbox;
pub mod review;
pub mod startup;
pub mod store;
pub mod telemetry;
