//! Checks a bearer token. Its `alg` must be one of `auth.algorithms`, and picks the key: an
//! HMAC `alg` the shared secret, any other the provider's key named by `kid` (which must
//! be of that algorithm's type), so no token can make one kind of key stand in for
//! another. Then: the signature, `exp` and `nbf` always (5 seconds of leeway), `iss` and
//! `aud` when configured, the lifetime (`auth.max_token_lifetime_secs`), `sub`, roles and
//! groups (`auth.roles_claim`, `auth.groups_claim`).

use std::collections::HashMap;

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{decode, decode_header, Algorithm, AlgorithmFamily, DecodingKey, Validation};
use secrecy::{ExposeSecret, SecretString};
use serde_json::{Map, Value};

use super::jwks::Jwks;
use super::token::{check_lifetime, TokenClaimPath};
use super::{Caller, Role};
use crate::domain::UserId;
use crate::web::error::ApiError;
use crate::web::settings::AuthSettings;

/// Verifies tokens; built once from `[auth]`.
pub struct JwtVerifier {
    /// The shared secret, when an HMAC algorithm is accepted.
    secret: Option<DecodingKey>,
    /// The provider's keys, when `auth.jwks_url` is set.
    jwks: Option<Jwks>,
    /// One validation per accepted algorithm (each names only its own algorithm).
    validations: HashMap<Algorithm, Validation>,
    max_lifetime_secs: u64,
    roles: TokenClaimPath,
    groups: TokenClaimPath,
}

impl JwtVerifier {
    /// `jwks` is the key source of `auth.jwks_url` (see `Jwks::from_settings`). Fails only on
    /// an empty secret (start-up validation refuses one first).
    pub fn from_settings(settings: &AuthSettings, jwks: Option<Jwks>) -> anyhow::Result<Self> {
        let hmac = settings
            .algorithms
            .iter()
            .any(|a| a.family() == AlgorithmFamily::Hmac);
        let secret = match hmac {
            true => Some(DecodingKey::from_secret(
                settings.jwt_secret.expose_secret().as_bytes(),
            )?),
            false => None,
        };
        let validations = settings
            .algorithms
            .iter()
            .map(|alg| (*alg, validation(settings, *alg)))
            .collect();
        Ok(Self {
            secret,
            jwks,
            validations,
            max_lifetime_secs: settings.max_token_lifetime.as_secs(),
            roles: TokenClaimPath::new(&settings.roles_claim),
            groups: TokenClaimPath::new(&settings.groups_claim),
        })
    }

    /// A verifier of HS256 tokens signed with `secret` that checks neither issuer nor
    /// audience.
    pub fn new(secret: &SecretString) -> anyhow::Result<Self> {
        Self::from_settings(&AuthSettings::with_secret(secret.clone()), None)
    }

    pub async fn verify(&self, token: &str) -> Result<Caller, ApiError> {
        let header = decode_header(token)
            .map_err(|_| ApiError::unauthorized("the bearer token is invalid or expired"))?;
        let validation = self.validations.get(&header.alg).ok_or_else(|| {
            ApiError::unauthorized("the bearer token's algorithm (alg) is not accepted")
        })?;
        let claims = match header.alg.family() {
            AlgorithmFamily::Hmac => {
                let key = self.secret.as_ref().ok_or_else(|| {
                    ApiError::internal(anyhow::anyhow!("an HMAC algorithm without the secret"))
                })?;
                decode_claims(token, key, validation)?
            }
            _ => {
                let jwks = self.jwks.as_ref().ok_or_else(|| {
                    ApiError::internal(anyhow::anyhow!("a public-key algorithm without a JWKS"))
                })?;
                let kid = header
                    .kid
                    .as_deref()
                    .ok_or_else(|| ApiError::unauthorized("the bearer token names no key (kid)"))?;
                let key = jwks.key_for(kid, header.alg).await?;
                decode_claims(token, key.decoding_key(), validation)?
            }
        };
        self.caller(&claims)
    }

    fn caller(&self, claims: &Map<String, Value>) -> Result<Caller, ApiError> {
        check_lifetime(claims, self.max_lifetime_secs)?;
        let sub = claims
            .get("sub")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let id = UserId::parse(sub)
            .map_err(|_| ApiError::unauthorized("the token's subject is not a valid user id"))?;
        // Unknown role names are ignored rather than refused: other services may add roles.
        let roles: Vec<Role> = self
            .roles
            .strings(claims)?
            .into_iter()
            .filter_map(|r| serde_json::from_value(Value::String(r)).ok())
            .collect();
        let groups = self.groups.strings(claims)?;
        // The caller's access in each space is added by the extractor once its memberships
        // are read (a token with no role of its own may be a member).
        Ok(Caller {
            id,
            roles,
            groups,
            access: Default::default(),
        })
    }
}

/// What every token of `alg` must carry: `exp`, `sub`, `nbf` if any, and `iss` and `aud`
/// when configured.
fn validation(settings: &AuthSettings, alg: Algorithm) -> Validation {
    let mut validation = Validation::new(alg);
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
    validation
}

fn decode_claims(
    token: &str,
    key: &DecodingKey,
    validation: &Validation,
) -> Result<Map<String, Value>, ApiError> {
    let data = decode::<Map<String, Value>>(token, key, validation).map_err(|e| {
        ApiError::unauthorized(match e.kind() {
            ErrorKind::ImmatureSignature => "the bearer token is not valid yet (nbf)",
            ErrorKind::InvalidIssuer => "the bearer token's issuer (iss) is not accepted",
            ErrorKind::InvalidAudience => "the bearer token is not meant for this service (aud)",
            ErrorKind::MissingRequiredClaim(_) => "the bearer token lacks a required claim",
            _ => "the bearer token is invalid or expired",
        })
    })?;
    Ok(data.claims)
}
