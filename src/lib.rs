//! kh-review: the document-review workflow service of the knowledge base.
//!
//! Layers, each importing only those below it (`docs/architecture.md`):
//! `domain` (rules, no I/O) <- `lock`, `store` <- `outbox` <- `usecases` <-
//! `http` <- `startup` (wiring, with `config`, `telemetry` and `shutdown`); `breaker` (a circuit
//! breaker, no imports) may be used by every layer above `domain`, and `tasks` (the
//! supervision of the background tasks, no imports) by `usecases` and `http`.

pub mod breaker;
pub mod config;
pub mod console;
pub mod domain;
pub mod http;
pub mod lock;
pub mod outbox;
pub mod shutdown;
pub mod startup;
pub mod store;
pub mod tasks;
pub mod telemetry;
pub mod usecases;
pub mod web;
