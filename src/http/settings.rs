//! The HTTP layer's configuration (`[server]` and `[auth]` in `config/default.toml`).

use std::time::Duration;

use jsonwebtoken::Algorithm;
use secrecy::SecretString;
use serde::Deserialize;
use serde_with::{serde_as, DurationMilliSeconds, DurationSeconds};

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

/// `[auth]`: which tokens are accepted, and where their keys come from.
#[serde_as]
#[derive(Debug, Clone, Deserialize)]
pub struct AuthSettings {
    /// HS256 secret of the bearer JWTs; used only when `algorithms` names an HMAC one.
    pub jwt_secret: SecretString,
    /// When set, a token's `iss` must be this. Unset: `iss` is not checked.
    #[serde(default)]
    pub issuer: Option<String>,
    /// When set, a token's `aud` must name this. Unset: `aud` is not checked (a token
    /// carrying one is accepted).
    #[serde(default)]
    pub audience: Option<String>,
    /// The `alg`s accepted: HMAC ones (HS256) are checked against `jwt_secret`, any other
    /// (RS256, ES256, ...) against the keys of `jwks_url`.
    pub algorithms: Vec<Algorithm>,
    /// The identity provider's JSON Web Key Set (its signing keys).
    #[serde(default)]
    pub jwks_url: Option<String>,
    /// An unknown `kid` fetches the key set at most this often.
    #[serde_as(as = "DurationSeconds<u64>")]
    #[serde(rename = "jwks_min_refresh_secs")]
    pub jwks_min_refresh: Duration,
    /// How often the key set is fetched again. Unset: as its `Cache-Control: max-age`
    /// says, within 60 s and 24 h (5 minutes without one).
    #[serde_as(as = "Option<DurationSeconds<u64>>")]
    #[serde(default, rename = "jwks_refresh_secs")]
    pub jwks_refresh: Option<Duration>,
    /// The longest a fetch of the key set may take (connecting included).
    #[serde_as(as = "DurationMilliSeconds<u64>")]
    #[serde(rename = "jwks_timeout_ms")]
    pub jwks_timeout: Duration,
    /// The longest a token may be valid: `exp - iat` (from now when it has no `iat`).
    #[serde_as(as = "DurationSeconds<u64>")]
    #[serde(rename = "max_token_lifetime_secs")]
    pub max_token_lifetime: Duration,
    /// Where a token's roles are: a claim's name, or a dotted path (`realm_access.roles`).
    pub roles_claim: String,
    /// Where a token's groups are, the same way.
    pub groups_claim: String,
}

impl AuthSettings {
    /// HS256 with `secret`, no issuer or audience, no JWKS: what tests and tools start from.
    pub fn with_secret(secret: SecretString) -> Self {
        Self {
            jwt_secret: secret,
            issuer: None,
            audience: None,
            algorithms: vec![Algorithm::HS256],
            jwks_url: None,
            jwks_min_refresh: Duration::from_secs(30),
            jwks_refresh: None,
            jwks_timeout: Duration::from_secs(3),
            max_token_lifetime: Duration::from_secs(24 * 3600),
            roles_claim: "roles".into(),
            groups_claim: "groups".into(),
        }
    }
}
