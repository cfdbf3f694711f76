//! Webhooks' rules, with no I/O: how a delivery is signed (Standard Webhooks 1.0,
//! `signing.rs`), which addresses a delivery may connect to (the SSRF guard's rules,
//! `address.rs`), when a failed delivery is tried again (`schedule.rs`), and what an
//! endpoint may be registered with (`endpoint.rs`).

mod address;
mod endpoint;
mod schedule;
mod signing;

pub use address::{refusal, AllowedRanges};
pub use endpoint::{check_event_types, check_url, MAX_EVENT_TYPES, MAX_URL_LEN};
pub use schedule::{parse_retry_after, RetrySchedule, MAX_RETRY_AFTER};
pub use signing::{sign, signature_header, WebhookSecret, SECRET_PREFIX};
