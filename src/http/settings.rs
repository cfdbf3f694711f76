//! The HTTP layer's configuration (`[server]` and `[auth]` in `config/default.toml`).

use std::time::Duration;

use secrecy::SecretString;
use serde::Deserialize;
use serde_with::{serde_as, DurationMilliSeconds};

#[serde_as]
#[derive(Debug, Clone, Deserialize)]
pub struct ServerSettings {
    pub host: String,
    pub port: u16,
    /// Largest accepted request body, in bytes.
    pub json_limit_bytes: usize,
    /// Grace period for in-flight requests on SIGTERM/SIGINT.
    #[serde_as(as = "DurationMilliSeconds<u64>")]
    #[serde(rename = "shutdown_grace_ms")]
    pub shutdown_grace: Duration,
    /// Honour test-only request headers (`http::test_hooks`). Never in production.
    pub test_hooks: bool,
    /// HTTP worker threads. They parse requests and write responses; the work of a request
    /// runs on the store runtime. Unset: [`ServerSettings::workers`].
    #[serde(default, rename = "workers")]
    pub workers_setting: Option<usize>,
    /// How long `/readyz` and `/metrics` reuse what their round trips found (the checks of
    /// every dependency, the outbox counts); zero: every request makes them.
    #[serde_as(as = "DurationMilliSeconds<u64>")]
    #[serde(rename = "probe_cache_ms")]
    pub probe_cache: Duration,
}

impl ServerSettings {
    /// The HTTP worker threads: `server.workers`, or half the CPU cores (at least one). The
    /// store runtime has a thread per core and does the work of every request; HTTP workers
    /// only parse and write, and each one more than that needs costs thread switches
    /// (measured on 2 cores: 1 worker used 8-25% less CPU per approval than 2).
    pub fn workers(&self) -> usize {
        self.workers_setting.unwrap_or_else(|| {
            std::thread::available_parallelism().map_or(1, |n| (n.get() / 2).max(1))
        })
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct AuthSettings {
    /// HS256 secret of the bearer JWTs.
    pub jwt_secret: SecretString,
    /// When set, a token's `iss` must be this. Unset: `iss` is not checked.
    #[serde(default)]
    pub issuer: Option<String>,
    /// When set, a token's `aud` must name this. Unset: `aud` is not checked (a token
    /// carrying one is accepted).
    #[serde(default)]
    pub audience: Option<String>,
}
