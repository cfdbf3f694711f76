//! What the JSON API (`http`) and the console (`console`) share, below both: the caller
//! and its token (`auth`), `AppState`, the error envelope and the mapping to it of the
//! use cases' errors (`error.rs`, `service_errors.rs`), request bodies and forms under
//! their limits (`body.rs`), a POST in its own task under its `Idempotency-Key`
//! (`post.rs`), the views of typed results both show (`views.rs`, `replay_view.rs`,
//! `space_views.rs`, `readiness.rs`, the review queue's page: `queue.rs`), paging and
//! cursors, the entity tags of conditional requests (`preconditions.rs`), the request id, routes grouped by path for both registrations (`routing.rs`), the pages'
//! security headers (`csp.rs`), the test-hook
//! headers, the HTTP metrics and the `[server]`/`[auth]` settings. It imports neither
//! `http` nor `console`; those two never import each other.

pub mod auth;
pub mod body;
pub mod csp;
pub mod error;
mod event_docs;
pub mod fields;
pub mod metrics;
pub mod paging;
pub mod post;
pub mod preconditions;
pub mod queue;
pub mod readiness;
pub mod replay_view;
pub mod request_id;
pub mod routing;
mod service_errors;
mod settings;
pub mod space_views;
pub mod state;
pub mod test_hooks;
pub mod views;
pub mod webhook_views;

pub use event_docs::EventDocs;
pub use preconditions::HttpSettings;
pub use settings::{AuthSettings, ServerSettings};
pub use state::AppState;
