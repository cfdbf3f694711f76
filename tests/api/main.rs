//! Integration tests against real PostgreSQL, Redis, RabbitMQ and the MongoDB-compatible
//! server. Start them with `make services`.

mod bad_input;
mod concurrency;
mod consumer;
mod degraded;
mod documents;
mod helpers;
mod idempotency;
mod inspect;
mod instances;
mod leases;
mod lock_provider;
mod operations;
mod outbox;
mod proxy;
mod reviews;
