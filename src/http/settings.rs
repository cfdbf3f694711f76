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
    /// Honour test-only request headers (`review::hooks`). Never in production.
    pub test_hooks: bool,
}

#[derive(Debug, Clone, Deserialize)]
pub struct AuthSettings {
    /// HS256 secret of the bearer JWTs.
    pub jwt_secret: SecretString,
}
