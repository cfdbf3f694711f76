//! The lock layer's configuration (`[redis]` and `[lock]` in `config/default.toml`).

use std::time::Duration;

use secrecy::SecretString;
use serde::Deserialize;
use serde_with::{serde_as, DurationMilliSeconds, DurationSeconds};

#[serde_as]
#[derive(Debug, Clone, Deserialize)]
pub struct RedisSettings {
    pub url: SecretString,
    pub key_prefix: String,
    pub pool_size: usize,
    /// A Redis call slower than this counts as Redis being down.
    #[serde_as(as = "DurationMilliSeconds<u64>")]
    #[serde(rename = "op_timeout_ms")]
    pub op_timeout: Duration,
}

#[serde_as]
#[derive(Debug, Clone, Deserialize)]
pub struct LockSettings {
    #[serde_as(as = "DurationMilliSeconds<u64>")]
    #[serde(rename = "ttl_ms")]
    pub ttl: Duration,
    /// How often the watchdog renews a held lock; defaults to ttl / 3.
    #[serde_as(as = "Option<DurationMilliSeconds<u64>>")]
    #[serde(rename = "renew_interval_ms", default)]
    pub renew_interval: Option<Duration>,
    #[serde_as(as = "DurationMilliSeconds<u64>")]
    #[serde(rename = "max_hold_ms")]
    pub max_hold: Duration,
    #[serde_as(as = "DurationSeconds<u64>")]
    #[serde(rename = "retry_after_secs")]
    pub retry_after: Duration,
    pub breaker_failure_threshold: u32,
    #[serde_as(as = "DurationMilliSeconds<u64>")]
    #[serde(rename = "breaker_open_ms")]
    pub breaker_open: Duration,
}

impl LockSettings {
    /// The watchdog's renewal interval: `lock.renew_interval_ms`, or ttl / 3.
    pub fn renew_every(&self) -> Duration {
        self.renew_interval
            .unwrap_or(self.ttl / 3)
            .max(Duration::from_millis(1))
    }
}
