//! Integration tests against real PostgreSQL, Redis, RabbitMQ and the MongoDB-compatible
//! server. Start them with `make services`.

mod architecture;
mod backlog;
mod bad_input;
mod brokers;
mod cluster;
mod concurrency;
mod consumer;
mod degraded;
mod documents;
mod harness;
mod idempotency;
mod instances;
mod leases;
mod lock_provider;
mod mongo_reads;
mod operations;
mod outbox;
mod plans;
mod reviews;
mod sentinel;
mod support;
