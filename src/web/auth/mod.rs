//! Bearer-JWT authentication. A token is checked against the key its `alg` calls for: the
//! shared secret (`auth.jwt_secret`) for HS256, the identity provider's published keys
//! (`auth.jwks_url`, see `jwks`) for RS256, ES256 and the like, and only when that `alg` is
//! one of `auth.algorithms`. `verifier` says what a token must carry. A token that carries
//! none of the known roles is refused (403): reading needs a role too. The token itself is
//! never logged.

mod jwks;
mod token;
mod verifier;

use std::sync::Arc;

use futures_util::future::LocalBoxFuture;

use actix_web::{dev::Payload, web, FromRequest, HttpRequest};
use serde::{Deserialize, Serialize};

use super::error::ApiError;
use crate::domain::{Access, Reader, SpaceRole, TokenRoles, UserId};
use crate::usecases::SpaceService;
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

/// The authenticated caller of a request: its token's subject, roles and groups, and what
/// it may do in each space (its token's roles in `default`, its memberships, read for this
/// request).
#[derive(Debug, Clone)]
pub struct Caller {
    pub id: UserId,
    /// The roles of the token itself (they count in the space `default`; `admin` is the
    /// platform admin).
    pub roles: Vec<Role>,
    /// The token's groups (`auth.groups_claim`) as the identity provider names them: group
    /// memberships of spaces, and who may vote in a group-restricted stage.
    pub groups: Vec<String>,
    pub access: Arc<Access>,
}

impl Caller {
    /// The roles of the token, as they count in the space `default`.
    pub fn token_roles(&self) -> TokenRoles {
        TokenRoles {
            author: self.roles.contains(&Role::Author),
            reviewer: self.roles.contains(&Role::Reviewer),
            admin: self.roles.contains(&Role::Admin),
        }
    }

    /// The caller holds `role` in some space (`Admin`: it is the platform admin). What it
    /// may do with a document is decided by its roles in the document's space.
    pub fn has(&self, role: Role) -> bool {
        match role {
            Role::Author => self.access.has_anywhere(SpaceRole::Author),
            Role::Reviewer => self.access.has_anywhere(SpaceRole::Reviewer),
            Role::Admin => self.access.is_platform_admin(),
        }
    }

    /// The caller as visibility sees it (its roles in each space).
    pub fn reader(&self) -> Reader<'_> {
        Reader {
            id: &self.id,
            access: &self.access,
        }
    }

    /// The caller administers some space (a space admin there, or the platform admin); what
    /// it may administer is decided by the space of what it acts on.
    pub fn require_space_admin(&self) -> Result<(), ApiError> {
        if self.access.has_anywhere(SpaceRole::SpaceAdmin) {
            Ok(())
        } else {
            Err(ApiError::forbidden(
                "this action needs the admin role, or space_admin in a space",
            ))
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

    /// The token checked, then the caller's memberships read: a token with no role of its
    /// own and no membership is refused (403) on every route.
    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        authenticate(req, |_| false)
    }
}

/// The caller of a vote (approve, reject) or a claim: a [`Caller`] whose memberships, when its token
/// carries the reviewer role, are read by each of the request's transactions as it begins
/// rather than before ([`Access::memberships_unread`]): what the handler checks before its
/// transaction (the reviewer role somewhere) the token alone passes then, and what the
/// transaction decides by the document's space, it decides with the memberships it read.
/// Any other token is checked as [`Caller`] checks it.
pub struct Voter(pub Caller);

impl FromRequest for Voter {
    type Error = ApiError;
    type Future = LocalBoxFuture<'static, Result<Self, Self::Error>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let caller = authenticate(req, |token| token.reviewer);
        Box::pin(async move { caller.await.map(Voter) })
    }
}

/// The caller of a comment: a [`Caller`] whose memberships, when its token carries the
/// author or the reviewer role, are read by the comment's transaction as it begins, as a
/// [`Voter`]'s are: the handler checks nothing by space before it (a role somewhere, which
/// the token passes), and who may comment (whoever may read the document) is decided under
/// the document's row lock with the memberships that transaction read.
pub struct Commenter(pub Caller);

impl FromRequest for Commenter {
    type Error = ApiError;
    type Future = LocalBoxFuture<'static, Result<Self, Self::Error>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let caller = authenticate(req, |token| token.author || token.reviewer);
        Box::pin(async move { caller.await.map(Commenter) })
    }
}

/// The token checked, then the caller's memberships read (or, for a token whose roles
/// `defer` them, left to the request's transactions).
fn authenticate(
    req: &HttpRequest,
    defer: fn(TokenRoles) -> bool,
) -> LocalBoxFuture<'static, Result<Caller, ApiError>> {
    let found = bearer_token(req).and_then(|token| {
        let verifier = req.app_data::<web::Data<JwtVerifier>>().ok_or_else(|| {
            ApiError::internal(anyhow::anyhow!("JwtVerifier missing from app data"))
        })?;
        let spaces = req.app_data::<web::Data<SpaceService>>().ok_or_else(|| {
            ApiError::internal(anyhow::anyhow!("SpaceService missing from app data"))
        })?;
        Ok((verifier.clone(), spaces.clone(), token.to_string()))
    });
    Box::pin(async move {
        let (verifier, spaces, token) = found?;
        let mut caller = verifier.verify(&token).await?;
        let roles = caller.token_roles();
        if defer(roles)
            && !roles.admin
            && crate::store::scope::defer(&caller.id, &caller.groups, roles)
        {
            caller.access = Arc::new(Access::memberships_unread(roles));
            return Ok(caller);
        }
        let access = spaces.access(&caller.id, &caller.groups, roles).await?;
        if !access.is_anyone() {
            return Err(ApiError::forbidden(
                "the token carries none of the roles author, reviewer, admin, and its \
                 subject is a member of no space",
            ));
        }
        // From here on, this request's transactions see the rows of the caller's spaces.
        crate::store::scope::grant(&access);
        caller.access = Arc::new(access);
        Ok(caller)
    })
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
