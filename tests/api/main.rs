//! Integration tests against real PostgreSQL, Redis, RabbitMQ and the MongoDB-compatible
//! server. Start them with `make services`.

mod architecture;
mod backlog;
mod bad_input;
mod bounds;
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
mod migrations;
mod mongo_reads;
mod operations;
mod outbox;
mod plans;
mod review_queue;
mod reviews;
mod sentinel;
mod support;
