//! What the integration tests (`tests/api`) and the benchmark (`benches/`) share: where the
//! stores are and a loud failure when one is missing (`stores`), fresh PostgreSQL databases
//! (`database`), AMQP connections, exchanges and queues (`amqp`), the TCP proxy that
//! cuts, freezes and slows a store's connections (`proxy`), a MongoDB wire proxy that
//! records commands and refuses write concerns (`mongo_wire`), and an OTLP/HTTP receiver
//! that keeps the spans a service exports to it (`otlp`).
//!
//! It knows nothing of kh-review itself: what needs the service (its migrations, its
//! settings) the caller passes in.

pub mod amqp;
pub mod database;
pub mod mongo_wire;
pub mod otlp;
pub mod proxy;
pub mod stores;
