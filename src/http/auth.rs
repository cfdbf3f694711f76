//! Bearer-JWT authentication (HS256). Claims: `sub`, `roles`, `exp`. The token itself is
//! never logged.

use std::future::{ready, Ready};

use actix_web::{dev::Payload, web, FromRequest, HttpRequest};
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
}

/// Verifies tokens; built once from the configured secret.
#[derive(Clone)]
pub struct JwtVerifier {
    key: DecodingKey,
    validation: Validation,
}

impl JwtVerifier {
    pub fn from_settings(settings: &AuthSettings) -> Self {
        Self::new(&settings.jwt_secret)
    }

    pub fn new(secret: &SecretString) -> Self {
        let mut validation = Validation::new(Algorithm::HS256);
        validation.set_required_spec_claims(&["exp", "sub"]);
        validation.leeway = 5;
        Self {
            key: DecodingKey::from_secret(secret.expose_secret().as_bytes()),
            validation,
        }
    }

    pub fn verify(&self, token: &str) -> Result<Caller, ApiError> {
        let data = decode::<Claims>(token, &self.key, &self.validation)
            .map_err(|_| ApiError::unauthorized("the bearer token is invalid or expired"))?;
        let id = UserId::parse(&data.claims.sub)
            .map_err(|_| ApiError::unauthorized("the token's subject is not a valid user id"))?;
        // Unknown role names are ignored rather than refused: other services may add roles.
        let roles = data
            .claims
            .roles
            .iter()
            .filter_map(|r| serde_json::from_value(serde_json::Value::String(r.clone())).ok())
            .collect();
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
    };
    jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &claims,
        &EncodingKey::from_secret(secret.expose_secret().as_bytes()),
    )
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
