//! Standard Webhooks 1.0 deliveries: each event of a space, to the endpoints its admins
//! registered, signed, retried on a schedule, through the SSRF guard. The deliveries to
//! make come from the outbox (its trigger writes one row per endpoint in the event's own
//! transaction); this module sends them.

mod client;
pub mod disabled;
mod settings;
mod worker;

pub use disabled::ENDPOINT_DISABLED_EVENT;
pub use settings::WebhookSettings;
pub use worker::Deliverer;
