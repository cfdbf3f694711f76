//! Bearer-JWT authentication (HS256). Claims: `sub`, `roles`, `exp`, and `nbf`, `iss`, `aud`
//! when present. `exp` and `nbf` are always checked; `iss` and `aud` when `auth.issuer` and
//! `auth.audience` are set. A token that carries none of the known roles is refused (403):
//! reading needs a role too. The token itself is never logged.

use std::future::{ready, Ready};

use actix_web::{dev::Payload, web, FromRequest, HttpRequest};
use anyhow::Context;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{decode, Algorithm, DecodingKey, EncodingKey, Header, Validation};
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};

use super::error::ApiError;
use super::settings::AuthSettings;
use crate::domain::UserId;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Author,
    Reviewer,
    Admin,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Claims {
    pub sub: String,
    #[serde(default)]
    pub roles: Vec<String>,
    pub exp: u64,
    /// Not before (seconds since the epoch); read so that a malformed one is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nbf: Option<u64>,
}

/// Verifies tokens; built once from the configured secret.
#[derive(Clone)]
pub struct JwtVerifier {
    key: DecodingKey,
    validation: Validation,
}

impl JwtVerifier {
    /// Fails only on an empty secret (start-up validation refuses one first).
    pub fn from_settings(settings: &AuthSettings) -> anyhow::Result<Self> {
        let mut validation = Validation::new(Algorithm::HS256);
        let mut required = vec!["exp", "sub"];
        validation.validate_nbf = true;
        validation.leeway = 5;
        if let Some(issuer) = &settings.issuer {
            validation.set_issuer(&[issuer]);
            required.push("iss");
        }
        // Without a configured audience a token's `aud` is not ours to judge (identity
        // providers set one for every token); with one, the token must name it.
        match &settings.audience {
            Some(audience) => {
                validation.set_audience(&[audience]);
                required.push("aud");
            }
            None => validation.validate_aud = false,
        }
        validation.set_required_spec_claims(&required);
        let secret = settings.jwt_secret.expose_secret().as_bytes();
        Ok(Self {
            key: DecodingKey::from_secret(secret).context("auth.jwt_secret")?,
            validation,
        })
    }

    /// A verifier of `secret` that checks neither issuer nor audience.
    pub fn new(secret: &SecretString) -> anyhow::Result<Self> {
        Self::from_settings(&AuthSettings {
            jwt_secret: secret.clone(),
            issuer: None,
            audience: None,
        })
    }

    pub fn verify(&self, token: &str) -> Result<Caller, ApiError> {
        let data = decode::<Claims>(token, &self.key, &self.validation).map_err(|e| {
            ApiError::unauthorized(match e.kind() {
                ErrorKind::ImmatureSignature => "the bearer token is not valid yet (nbf)",
                ErrorKind::InvalidIssuer => "the bearer token's issuer (iss) is not accepted",
                ErrorKind::InvalidAudience => {
                    "the bearer token is not meant for this service (aud)"
                }
                ErrorKind::MissingRequiredClaim(_) => "the bearer token lacks a required claim",
                _ => "the bearer token is invalid or expired",
            })
        })?;
        let id = UserId::parse(&data.claims.sub)
            .map_err(|_| ApiError::unauthorized("the token's subject is not a valid user id"))?;
        // Unknown role names are ignored rather than refused: other services may add roles.
        let roles: Vec<Role> = data
            .claims
            .roles
            .iter()
            .filter_map(|r| serde_json::from_value(serde_json::Value::String(r.clone())).ok())
            .collect();
        if roles.is_empty() {
            return Err(ApiError::forbidden(
                "the token carries none of the roles author, reviewer, admin",
            ));
        }
        Ok(Caller { id, roles })
    }
}

/// Signs a token; used by tests, benchmarks and the `token` command for local runs.
pub fn sign(secret: &SecretString, sub: &str, roles: &[Role], ttl_secs: u64) -> String {
    let exp = chrono::Utc::now().timestamp() as u64 + ttl_secs;
    let claims = Claims {
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
        exp,
        nbf: None,
    };
    let key = EncodingKey::from_secret(secret.expose_secret().as_bytes())
        .expect("the signing secret is not empty");
    jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &key)
        .expect("HS256 signing cannot fail")
}

/// The authenticated caller of a request.
#[derive(Debug, Clone)]
pub struct Caller {
    pub id: UserId,
    pub roles: Vec<Role>,
}

impl Caller {
    pub fn has(&self, role: Role) -> bool {
        self.roles.contains(&role) || self.roles.contains(&Role::Admin)
    }

    pub fn require(&self, role: Role) -> Result<(), ApiError> {
        if self.has(role) {
            Ok(())
        } else {
            Err(ApiError::forbidden(format!(
                "this action needs the {} role",
                serde_json::to_value(role).unwrap().as_str().unwrap()
            )))
        }
    }
}

impl FromRequest for Caller {
    type Error = ApiError;
    type Future = Ready<Result<Self, Self::Error>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(authenticate(req))
    }
}

fn authenticate(req: &HttpRequest) -> Result<Caller, ApiError> {
    let verifier = req
        .app_data::<web::Data<JwtVerifier>>()
        .ok_or_else(|| ApiError::internal(anyhow::anyhow!("JwtVerifier missing from app data")))?;
    let header = req
        .headers()
        .get(actix_web::http::header::AUTHORIZATION)
        .ok_or_else(|| ApiError::unauthorized("an Authorization: Bearer token is required"))?;
    let value = header
        .to_str()
        .map_err(|_| ApiError::unauthorized("the Authorization header is not valid text"))?;
    let token = value
        .strip_prefix("Bearer ")
        .or_else(|| value.strip_prefix("bearer "))
        .ok_or_else(|| {
            ApiError::unauthorized("the Authorization header must be 'Bearer <token>'")
        })?;
    verifier.verify(token.trim())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const SECRET: &str = "a-test-secret-of-at-least-32-bytes!";

    fn token(claims: serde_json::Value) -> String {
        let key = EncodingKey::from_secret(SECRET.as_bytes()).unwrap();
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &key).unwrap()
    }

    fn verifier(issuer: Option<&str>, audience: Option<&str>) -> JwtVerifier {
        JwtVerifier::from_settings(&AuthSettings {
            jwt_secret: SecretString::from(SECRET),
            issuer: issuer.map(str::to_string),
            audience: audience.map(str::to_string),
        })
        .unwrap()
    }

    fn claims(extra: serde_json::Value) -> serde_json::Value {
        let now = chrono::Utc::now().timestamp();
        let mut c = json!({"sub": "alice", "roles": ["author"], "exp": now + 600});
        c.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        c
    }

    fn status(v: &JwtVerifier, extra: serde_json::Value) -> u16 {
        v.verify(&token(claims(extra)))
            .map_or_else(|e| e.status.as_u16(), |_| 200)
    }

    #[test]
    fn not_before_is_checked_with_the_leeway() {
        let v = verifier(None, None);
        let now = chrono::Utc::now().timestamp();
        assert_eq!(status(&v, json!({"nbf": now + 3600})), 401);
        assert_eq!(
            status(&v, json!({"nbf": now + 2})),
            200,
            "within the leeway"
        );
        assert_eq!(status(&v, json!({"nbf": now - 60})), 200);
        assert_eq!(status(&v, json!({"nbf": "tomorrow"})), 401, "malformed");
    }

    #[test]
    fn audience_and_issuer_are_checked_only_when_configured() {
        let open = verifier(None, None);
        assert_eq!(status(&open, json!({"aud": "some-api"})), 200);
        assert_eq!(status(&open, json!({"iss": "https://idp"})), 200);
        let strict = verifier(Some("https://idp"), Some("kh-review"));
        let good = json!({"iss": "https://idp", "aud": "kh-review"});
        assert_eq!(status(&strict, good), 200);
        let both = json!({"iss": "https://idp", "aud": ["other", "kh-review"]});
        assert_eq!(status(&strict, both), 200, "one of several audiences");
        for bad in [
            json!({"iss": "https://idp", "aud": "other"}),
            json!({"iss": "https://idp"}),
            json!({"iss": "https://evil", "aud": "kh-review"}),
            json!({"aud": "kh-review"}),
        ] {
            assert_eq!(status(&strict, bad.clone()), 401, "{bad}");
        }
    }

    #[test]
    fn a_token_without_a_known_role_is_forbidden() {
        let v = verifier(None, None);
        assert_eq!(status(&v, json!({"roles": []})), 403);
        assert_eq!(status(&v, json!({"roles": ["guest"]})), 403);
        assert_eq!(status(&v, json!({"roles": ["guest", "reviewer"]})), 200);
    }
}
