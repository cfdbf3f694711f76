//! The HTTP layer's configuration (`[server]` and `[auth]` in `config/default.toml`).

use std::time::Duration;

use jsonwebtoken::Algorithm;
use secrecy::SecretString;
use serde::Deserialize;
use serde_with::{serde_as, DurationMilliSeconds, DurationSeconds};

use crate::domain::{DocumentBody, DocumentTitle};

#[serde_as]
#[derive(Debug, Clone, Deserialize)]
pub struct ServerSettings {
    pub host: String,
    pub port: u16,
    /// Largest accepted request body, in bytes (JSON bodies and the console's forms alike); at
    /// least [`ServerSettings::LARGEST_VALID_BODY`].
    pub json_limit_bytes: usize,
    /// How long a handler waits for the whole request body once it starts reading it; a
    /// body that is not all there by then is answered 408 `REQUEST_TIMEOUT`.
    #[serde_as(as = "DurationMilliSeconds<u64>")]
    #[serde(rename = "body_timeout_ms")]
    pub body_timeout: Duration,
    /// How long a connection has to send the head (request line and headers) of its first
    /// request; then it is answered 408 and closed (actix's `client_request_timeout`).
    #[serde_as(as = "DurationMilliSeconds<u64>")]
    #[serde(rename = "client_request_timeout_ms")]
    pub client_request_timeout: Duration,
    /// How long an idle connection is kept open for its next request.
    #[serde_as(as = "DurationMilliSeconds<u64>")]
    #[serde(rename = "keep_alive_ms")]
    pub keep_alive: Duration,
    /// How long a connection being closed is given to go: after an answer to a request whose
    /// body was not read (a 401, 408 or 413 before the body), the rest of it is read and
    /// dropped for this long at most (actix's `client_disconnect_timeout`).
    #[serde_as(as = "DurationMilliSeconds<u64>")]
    #[serde(rename = "client_disconnect_timeout_ms")]
    pub client_disconnect_timeout: Duration,
    /// Honour test-only request headers (`web::test_hooks`). Never in production.
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
    /// The largest body a request valid under the published schemas can have: a document of
    /// the longest title and body, every character sent as a JSON escape of 12 bytes (a
    /// character outside the Basic Multilingual Plane as a surrogate pair, `\ud83d\ude00`;
    /// 12 bytes in a console form too, `%F0%9F%98%80`). `server.json_limit_bytes` may not be
    /// below it, or the service would refuse with 413 what its schema accepts.
    pub const LARGEST_VALID_BODY: usize = 12 * (DocumentTitle::MAX_CHARS + DocumentBody::MAX_CHARS)
        + r#"{"title":"","body":""}"#.len();

    /// Reports each problem of the `[server]` section to `bad`, naming its key: a body limit
    /// below [`ServerSettings::LARGEST_VALID_BODY`], a timeout that could never fire, probe
    /// answers kept too long.
    pub fn check(&self, bad: &mut impl FnMut(&'static str, &str)) {
        if self.json_limit_bytes < Self::LARGEST_VALID_BODY {
            let problem = format!(
                "must be at least {} (the largest body the API's schema allows: a 200-character \
                 title and a 200,000-character body, each character a 12-byte JSON escape)",
                Self::LARGEST_VALID_BODY
            );
            bad("server.json_limit_bytes", &problem);
        }
        if self.body_timeout.is_zero() {
            bad("server.body_timeout_ms", "must be greater than zero");
        }
        if self.probe_cache > Duration::from_secs(60) {
            let problem = "must be at most 60000: /readyz would report a state that old";
            bad("server.probe_cache_ms", problem);
        }
        for (key, timeout) in [
            (
                "server.client_request_timeout_ms",
                self.client_request_timeout,
            ),
            ("server.keep_alive_ms", self.keep_alive),
            (
                "server.client_disconnect_timeout_ms",
                self.client_disconnect_timeout,
            ),
        ] {
            // actix sets these timers from a clock it reads every 500 ms: one shorter than
            // that can be set in the past, and then never fires (zero turns it off).
            if timeout < Duration::from_secs(1) {
                bad(key, "must be at least 1000");
            }
        }
    }

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
    /// says, within 60 s and `jwks_max_fresh` (5 minutes without one).
    #[serde_as(as = "Option<DurationSeconds<u64>>")]
    #[serde(default, rename = "jwks_refresh_secs")]
    pub jwks_refresh: Option<Duration>,
    /// The longest a fetched key set is used without fetching it again, whatever its
    /// `Cache-Control` or `jwks_refresh` says: how long a key the provider revoked can
    /// still be accepted.
    #[serde_as(as = "DurationSeconds<u64>")]
    #[serde(rename = "jwks_max_fresh_secs")]
    pub jwks_max_fresh: Duration,
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
            jwks_max_fresh: Duration::from_secs(3600),
            jwks_timeout: Duration::from_secs(3),
            max_token_lifetime: Duration::from_secs(24 * 3600),
            roles_claim: "roles".into(),
            groups_claim: "groups".into(),
        }
    }
}
