//! The lock layer's configuration (`[redis]` and `[lock]` in `config/default.toml`).

use std::time::Duration;

use secrecy::SecretString;
use serde::{Deserialize, Deserializer};
use serde_with::{serde_as, DurationMilliSeconds, DurationSeconds};

use super::Ttl;

/// How the service finds its Redis (`redis.mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub enum RedisMode {
    /// One server at `redis.url`.
    Standalone,
    /// The master that `redis.sentinels` name for `redis.master_name`, followed across
    /// failovers.
    Sentinel,
    /// A Redis Cluster reached through any of `redis.nodes`; MOVED and ASK are followed.
    Cluster,
}

impl TryFrom<String> for RedisMode {
    type Error = String;

    fn try_from(mode: String) -> Result<Self, String> {
        match mode.as_str() {
            "standalone" => Ok(RedisMode::Standalone),
            "sentinel" => Ok(RedisMode::Sentinel),
            "cluster" => Ok(RedisMode::Cluster),
            _ => Err(format!(
                "redis.mode: must be standalone, sentinel or cluster, not {mode:?}"
            )),
        }
    }
}

#[serde_as]
#[derive(Debug, Clone, Deserialize)]
pub struct RedisSettings {
    pub mode: RedisMode,
    /// Standalone: the server's URL (`redis://` or `rediss://` for TLS, with the password in
    /// it).
    pub url: SecretString,
    /// Cluster: seed nodes, any subset of the cluster (same URL form as `url`).
    #[serde(default)]
    pub nodes: Vec<SecretString>,
    /// Sentinel: the sentinels' URLs (with the sentinels' own password, if any).
    #[serde(default)]
    pub sentinels: Vec<SecretString>,
    /// Sentinel: the name the sentinels monitor the master under.
    #[serde(default)]
    pub master_name: String,
    /// Sentinel: the password of the master and replicas (the sentinels' is in their URLs).
    #[serde(default)]
    pub password: Option<SecretString>,
    /// Sentinel: connect to the master and replicas over TLS.
    #[serde(default)]
    pub tls: bool,
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
    /// Never zero: there are no permanent locks.
    #[serde(rename = "ttl_ms", deserialize_with = "ttl_ms")]
    pub ttl: Ttl,
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
    /// While Redis is unavailable: how many transitions of one item this instance lets wait
    /// on its row lock at once; more are refused with `409 LOCK_NOT_ACQUIRED` at once.
    pub degraded_per_key: usize,
}

impl LockSettings {
    /// How long a fence counter outlives the acquisition that last set it: the longest a
    /// lease can live (renewals stop at `max_hold`, and the last one lasts a `ttl`). After
    /// that no holder of any token it issued can still commit, and the time floor keeps
    /// later tokens above it (`docs/decisions.md`, Fencing tokens).
    pub fn fence_retention(&self) -> Duration {
        self.max_hold + self.ttl.as_duration()
    }

    /// The watchdog's renewal interval: `lock.renew_interval_ms`, or ttl / 3.
    pub fn renew_every(&self) -> Duration {
        self.renew_interval
            .unwrap_or(self.ttl.as_duration() / 3)
            .max(Duration::from_millis(1))
    }
}

/// `lock.ttl_ms`, refused at load when zero (the error names the key: the loader does not).
fn ttl_ms<'de, D: Deserializer<'de>>(d: D) -> Result<Ttl, D::Error> {
    let ms = u64::deserialize(d)?;
    Ttl::new(Duration::from_millis(ms)).ok_or_else(|| {
        serde::de::Error::custom("lock.ttl_ms: must be greater than zero: no permanent locks")
    })
}
