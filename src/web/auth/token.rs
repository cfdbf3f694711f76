//! What a verified token says: its claims (a JWT's fields, hence `TokenClaims`; not the
//! seats reviewers claim on a review) found by name or dotted path, and whether it lives
//! longer than `auth.max_token_lifetime_secs`. Also `sign`, which mints the HS256 tokens of
//! tests, benchmarks and `kh-review token`.

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::Role;
use crate::web::error::ApiError;

/// The claims `sign` writes.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TokenClaims {
    pub sub: String,
    #[serde(default)]
    pub roles: Vec<String>,
    pub exp: u64,
    /// Issued at (seconds since the epoch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iat: Option<u64>,
    /// Not before (seconds since the epoch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nbf: Option<u64>,
}

/// Signs an HS256 token; used by tests, benchmarks and the `token` command for local runs.
pub fn sign(secret: &SecretString, sub: &str, roles: &[Role], ttl_secs: u64) -> String {
    let now = chrono::Utc::now().timestamp() as u64;
    let claims = TokenClaims {
        sub: sub.to_string(),
        roles: roles
            .iter()
            .map(|r| {
                serde_json::to_value(r)
                    .unwrap()
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect(),
        // `kh-review token --ttl-secs` is typed by a person: a huge one means "never expires".
        exp: now.saturating_add(ttl_secs),
        iat: Some(now),
        nbf: None,
    };
    let key = EncodingKey::from_secret(secret.expose_secret().as_bytes())
        .expect("the signing secret is not empty");
    jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &key)
        .expect("HS256 signing cannot fail")
}

/// Where a claim is: a top-level name (`roles`, or a namespaced one such as
/// `https://kh.example.com/roles`), else a dotted path into nested objects
/// (`realm_access.roles`).
#[derive(Debug, Clone)]
pub struct TokenClaimPath(String);

impl TokenClaimPath {
    pub fn new(path: &str) -> Self {
        Self(path.to_string())
    }

    fn find<'a>(&self, claims: &'a Map<String, Value>) -> Option<&'a Value> {
        if let Some(v) = claims.get(&self.0) {
            return Some(v);
        }
        let mut parts = self.0.split('.');
        let mut at = claims.get(parts.next()?)?;
        for part in parts {
            at = at.as_object()?.get(part)?;
        }
        Some(at)
    }

    /// The strings of the claim; none when it is absent (or `null`). Anything but an array
    /// of strings is refused: a provider that puts something else there is misconfigured,
    /// and guessing could grant a role.
    pub fn strings(&self, claims: &Map<String, Value>) -> Result<Vec<String>, ApiError> {
        let refused = || {
            ApiError::unauthorized(format!(
                "the token's {} claim is not an array of strings",
                self.0
            ))
        };
        match self.find(claims) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| v.as_str().map(str::to_string).ok_or_else(refused))
                .collect(),
            Some(_) => Err(refused()),
        }
    }
}

/// Refuses a token that could be used for longer than `max_secs`: from its `iat` to its
/// `exp` or, without `iat` (or with one in the future), from now to its `exp`.
pub fn check_lifetime(claims: &Map<String, Value>, max_secs: u64) -> Result<(), ApiError> {
    let now = chrono::Utc::now().timestamp().max(0) as u64;
    let exp = claims.get("exp").and_then(Value::as_u64);
    let issued = match claims.get("iat") {
        None => now,
        Some(v) => v
            .as_u64()
            .ok_or_else(|| ApiError::unauthorized("the bearer token's iat is not a number"))?
            .min(now),
    };
    match exp {
        Some(exp) if exp.saturating_sub(issued) <= max_secs => Ok(()),
        _ => Err(ApiError::unauthorized(
            "the bearer token lives longer than this service accepts (exp - iat)",
        )),
    }
}
