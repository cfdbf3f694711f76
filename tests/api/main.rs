//! Integration tests against real PostgreSQL, Redis, RabbitMQ and the MongoDB-compatible
//! server. Start them with `make services`.

mod architecture;
mod auth;
mod backlog;
mod bad_input;
mod bounds;
mod brokers;
mod cluster;
mod concurrency;
mod console;
mod consumer;
mod degraded;
mod documents;
mod harness;
mod idempotency;
mod instances;
mod leases;
mod listing;
mod lock_provider;
mod migrations;
mod mongo_reads;
mod operations;
mod outbox;
mod outbox_admin;
mod parked;
mod plans;
mod review_queue;
mod reviews;
mod routing;
mod sentinel;
mod startup;
mod support;
mod ui_console;
mod ui_docs;
mod ui_operator;
