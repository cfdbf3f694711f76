//! Bearer-JWT authentication. A token is checked against the key its `alg` calls for: the
//! shared secret (`auth.jwt_secret`) for HS256, the identity provider's published keys
//! (`auth.jwks_url`, see `jwks`) for RS256, ES256 and the like, and only when that `alg` is
//! one of `auth.algorithms`. `verifier` says what a token must carry. A token that carries
//! none of the known roles is refused (403): reading needs a role too. The token itself is
//! never logged.

mod jwks;
mod token;
mod verifier;

use futures_util::future::LocalBoxFuture;

use actix_web::{dev::Payload, web, FromRequest, HttpRequest};
use serde::{Deserialize, Serialize};

use super::error::ApiError;
use crate::domain::{Reader, UserId};
pub use jwks::Jwks;
pub use token::{sign, TokenClaims};
pub use verifier::JwtVerifier;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Author,
    Reviewer,
    Admin,
}

/// The authenticated caller of a request.
#[derive(Debug, Clone)]
pub struct Caller {
    pub id: UserId,
    pub roles: Vec<Role>,
    /// The token's groups (`auth.groups_claim`) as the identity provider names them, for
    /// the review policies to come; no route uses them yet.
    pub groups: Vec<String>,
}

impl Caller {
    pub fn has(&self, role: Role) -> bool {
        self.roles.contains(&role) || self.roles.contains(&Role::Admin)
    }

    /// The caller as visibility sees it (who may read a draft never submitted).
    pub fn reader(&self) -> Reader<'_> {
        Reader {
            id: &self.id,
            admin: self.roles.contains(&Role::Admin),
        }
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
    type Future = LocalBoxFuture<'static, Result<Self, Self::Error>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let found = bearer_token(req).and_then(|token| {
            let verifier = req.app_data::<web::Data<JwtVerifier>>().ok_or_else(|| {
                ApiError::internal(anyhow::anyhow!("JwtVerifier missing from app data"))
            })?;
            Ok((verifier.clone(), token.to_string()))
        });
        Box::pin(async move {
            let (verifier, token) = found?;
            verifier.verify(&token).await
        })
    }
}

fn bearer_token(req: &HttpRequest) -> Result<&str, ApiError> {
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
    Ok(token.trim())
}

#[cfg(test)]
mod tests;
