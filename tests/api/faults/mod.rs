//! Faults injected while the service runs: stores cut, hung or slowed (through a
//! `support::proxy::Proxy`), leases lost, poison rows, refused start-ups, migrations racing,
//! an identity provider's keys rotated or out of reach.
//! Part of the parallel run (`make test`).

mod audit;
mod bounds;
mod brokers;
mod degraded;
mod envelope;
mod handover;
mod instances;
mod jwks;
mod jwks_fetch;
mod leases;
mod lock_provider;
mod marks;
mod migrations;
mod mongo_guard;
mod mongo_reads;
mod outbox;
pub(crate) mod parked;
mod probes;
mod read_only;
mod required_queues;
mod reverification;
pub(crate) mod review_lock;
mod startup;
mod tasks;
mod traces;
mod webhook_failing;
mod webhooks;
mod workflow_races;
