//! `[webhooks]`: how deliveries are made and retried, and where they may go.

use std::time::Duration;

use serde::Deserialize;
use serde_with::{serde_as, DurationMilliSeconds, DurationSeconds};

use crate::domain::webhooks::{AllowedRanges, RetrySchedule};

/// `[webhooks]` in `config/default.toml`; every key has a default.
#[serde_as]
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct WebhookSettings {
    /// How often each instance looks for due deliveries.
    #[serde_as(as = "DurationMilliSeconds<u64>")]
    #[serde(rename = "poll_ms")]
    pub poll: Duration,
    /// How long a receiver has to answer one delivery.
    #[serde_as(as = "DurationMilliSeconds<u64>")]
    #[serde(rename = "timeout_ms")]
    pub timeout: Duration,
    /// The waits before each retry of a failed delivery, in seconds.
    pub retry_schedule_secs: Vec<u64>,
    /// The most deliveries in flight to one endpoint, over every instance.
    pub per_endpoint_concurrency: i64,
    /// The most deliveries one instance sends at once.
    pub concurrency: i64,
    /// An endpoint whose every delivery failed for this long is disabled.
    #[serde_as(as = "DurationSeconds<u64>")]
    #[serde(rename = "disable_after_secs")]
    pub disable_after: Duration,
    /// How long the secret a rotation replaced keeps signing beside the new one.
    #[serde_as(as = "DurationSeconds<u64>")]
    #[serde(rename = "secret_overlap_secs")]
    pub secret_overlap: Duration,
    /// Private address ranges receivers may be in (CIDR), for receivers on premises;
    /// every other loopback, private, link-local or CGNAT address is refused.
    pub allowed_ranges: Vec<String>,
}

impl Default for WebhookSettings {
    fn default() -> Self {
        Self {
            poll: Duration::from_secs(1),
            timeout: Duration::from_secs(15),
            retry_schedule_secs: vec![5, 300, 1800, 7200, 18000, 36000, 36000],
            per_endpoint_concurrency: 4,
            concurrency: 32,
            disable_after: Duration::from_secs(5 * 24 * 3600),
            secret_overlap: Duration::from_secs(24 * 3600),
            allowed_ranges: Vec::new(),
        }
    }
}

impl WebhookSettings {
    /// The retry schedule (checked by [`WebhookSettings::check`]).
    pub fn schedule(&self) -> RetrySchedule {
        RetrySchedule::from_secs(&self.retry_schedule_secs).unwrap_or_default()
    }

    /// The allowed private ranges (checked by [`WebhookSettings::check`]).
    pub fn allowed(&self) -> AllowedRanges {
        AllowedRanges::parse(&self.allowed_ranges).unwrap_or_default()
    }

    /// Reports each invalid setting to `bad` by its key.
    pub fn check(&self, bad: &mut impl FnMut(&'static str, &str)) {
        if let Err(e) = RetrySchedule::from_secs(&self.retry_schedule_secs) {
            bad("webhooks.retry_schedule_secs", &e);
        }
        if let Err(e) = AllowedRanges::parse(&self.allowed_ranges) {
            bad("webhooks.allowed_ranges", &e);
        }
        let ms = |d: Duration| d.as_millis();
        if !(10..=3_600_000).contains(&ms(self.poll)) {
            bad("webhooks.poll_ms", "must be 10 to 3600000");
        }
        if !(100..=120_000).contains(&ms(self.timeout)) {
            bad("webhooks.timeout_ms", "must be 100 to 120000");
        }
        if !(1..=100).contains(&self.per_endpoint_concurrency) {
            bad("webhooks.per_endpoint_concurrency", "must be 1 to 100");
        }
        if !(1..=1000).contains(&self.concurrency) {
            bad("webhooks.concurrency", "must be 1 to 1000");
        }
        if self.disable_after.is_zero() {
            bad("webhooks.disable_after_secs", "must be at least 1");
        }
        if self.secret_overlap.as_secs() > 30 * 24 * 3600 {
            bad(
                "webhooks.secret_overlap_secs",
                "must be at most 2592000 (30 days)",
            );
        }
    }
}
