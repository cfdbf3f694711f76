//! Everything the integration tests share: the app they drive (`app`), what they read back
//! from the real stores (`inspect`), the rows they write straight into PostgreSQL (`seed`),
//! the faults they inject (`own_redis`), the service's replies as typed structs (`views`),
//! a real browser (`browser`), and a vote written one statement per row (`stepwise`, the
//! reference `routes::writes` holds the service's combined write to; the benchmark's floor
//! includes it). Where the stores are, fresh databases, AMQP queues and the TCP proxy are
//! the test kit's (`kh_review_testkit`, shared with the benchmark).

pub mod app;
pub mod binary;
pub mod browser;
mod chromium;
pub mod console;
pub mod delivery;
pub mod events;
pub mod haproxy;
pub mod inspect;
pub mod jwks;
pub mod load;
pub mod own_redis;
pub mod patroni;
pub mod receiver;
pub mod seed;
pub mod spaces;
pub mod stepwise;
pub mod stores;
mod teardown;
pub mod topology;
pub mod traces;
pub mod views;
pub mod workflow;
