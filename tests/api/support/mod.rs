//! Everything the integration tests share: the app they drive (`app`), what they read back
//! from the real stores (`inspect`), the faults they inject (`proxy`, `own_redis`), the
//! service's replies as typed structs (`views`), and a real browser (`browser`).

pub mod app;
pub mod binary;
pub mod browser;
mod chromium;
pub mod console;
pub mod inspect;
pub mod own_redis;
pub mod proxy;
pub mod stores;
mod teardown;
pub mod topology;
pub mod views;

pub use app::*;
pub use binary::{listening, run_binary, serve_binary};
pub use browser::{Browser, Window};
pub use console::{events_of, fits_and_is_labelled, signed_in, text};
pub use inspect::*;
pub use own_redis::OwnRedis;
pub use proxy::{blackhole, dead_port, Proxy};
pub use stores::{amqp_connection, amqp_url, mongo_url, pg_url, redis_url, with_db};
pub use views::*;
