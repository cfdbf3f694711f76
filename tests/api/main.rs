//! Integration tests against real PostgreSQL, Redis, RabbitMQ and the MongoDB-compatible
//! server. Start them with `make services`.
//!
//! One folder per kind of run; the Makefile selects a run by its module path, so a test
//! joins the run of the folder it is in, whatever its name:
//! - `routes::`, `faults::`, `meta::`, `event_replays::`: the parallel run (`make test`)
//! - `volume::`: one at a time, after the parallel run (`make test-volume`)
//! - `topologies::`: the Redis Cluster and Sentinel set-ups (`make test-topologies`)
//! - `pages::`: headless Chromium (`make test-ui`)
//!
//! `support` is what they share.

mod event_replays;
mod faults;
mod meta;
mod pages;
mod routes;
mod support;
mod topologies;
mod volume;
