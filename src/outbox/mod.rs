//! Delivers the outbox: for each row, first the MongoDB projection, then (for events) the
//! confirmed RabbitMQ publish.
//!
//! The request that commits a change owns its row from the INSERT and delivers it right
//! after COMMIT, then marks it with one statement: nothing to take on the happy path. Whatever it
//! does not deliver (a dependency failed, the instance died, an earlier row of the document
//! was still waiting) the background loop takes and retries with exponential backoff, in
//! batches: projections run side by side, publishes are pipelined on one channel.
//!
//! Never publish an event before MongoDB holds its version, and never mark a row done
//! before its publish is confirmed. Delivery is at least once.

pub mod asyncapi;
pub mod checkpoint;
mod delivery;
mod dispatcher;
pub mod envelope;
mod fault;
pub mod marks;
pub(crate) mod nodes;
mod passes;
pub mod publisher;
pub mod replay;
mod required;
pub mod schemas;
mod settings;
pub mod trace_headers;
pub mod webhooks;

pub use delivery::DispatchStats;
pub use dispatcher::Dispatcher;
pub use envelope::EventSettings;
pub use marks::Marks;
pub use settings::{AmqpSettings, OutboxSettings, QueueType};
