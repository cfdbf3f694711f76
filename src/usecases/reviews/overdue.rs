//! The overdue sweeper, and `[review]`: the reviews past their due date marked, each once,
//! by whichever instance gets to it.

use std::time::Duration;

use serde::Deserialize;
use serde_with::{serde_as, DurationMilliSeconds};
use tokio_util::sync::CancellationToken;

use crate::domain::{Access, UserId, DEFAULT_POLICY};
use crate::store::{PgStore, WriteContext};

/// `[review]` in `config/default.toml`.
#[serde_as]
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct ReviewSettings {
    /// The policy of a document created without one.
    pub default_policy: String,
    /// How often each instance looks for reviews past their due date.
    #[serde_as(as = "DurationMilliSeconds<u64>")]
    #[serde(rename = "overdue_sweep_ms")]
    pub overdue_sweep: Duration,
    /// How many due reviews one sweep transaction marks at most.
    pub overdue_batch: i64,
    /// How often each instance opens the re-verifications that came due and expires the
    /// documents nobody re-verified in time.
    #[serde_as(as = "DurationMilliSeconds<u64>")]
    #[serde(rename = "reverify_sweep_ms")]
    pub reverify_sweep: Duration,
    /// How many documents one pass of the re-verification scheduler takes at most.
    pub reverify_batch: i64,
}

impl Default for ReviewSettings {
    fn default() -> Self {
        Self {
            default_policy: DEFAULT_POLICY.to_string(),
            overdue_sweep: Duration::from_secs(5),
            overdue_batch: 200,
            reverify_sweep: Duration::from_secs(5),
            reverify_batch: 200,
        }
    }
}

/// Marks the reviews past their due date, every `every`, until `stop`: each once, with one
/// `review.overdue` event, whichever instance gets to it (rows another transaction holds
/// are skipped and taken on a later pass).
pub async fn sweep_overdue(store: PgStore, every: Duration, batch: i64, stop: CancellationToken) {
    let actor = UserId::parse("kh-review").expect("a valid user id");
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(every) => {}
        }
        let access = Access::platform_admin();
        let ctx = WriteContext::background(&actor, &access, "overdue-sweep");
        loop {
            // Each sweep is a trace of its own (no request started it): the events it
            // writes carry that trace.
            let sweep = tracing::debug_span!(parent: None, "overdue.sweep");
            match tracing::Instrument::instrument(store.sweep_overdue(batch, &ctx), sweep).await {
                Ok(n) if n >= batch as u64 => {
                    tracing::info!(marked = n, "reviews marked overdue; more are due");
                }
                Ok(0) => break,
                Ok(n) => {
                    tracing::info!(marked = n, "reviews marked overdue");
                    break;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "could not sweep overdue reviews");
                    break;
                }
            }
        }
    }
}
