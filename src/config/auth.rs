//! The checks of `[auth]` (and of the test hooks) against `environment`: part of
//! `Settings::validate`, each problem naming its key.

use std::time::Duration;

use jsonwebtoken::AlgorithmFamily;
use secrecy::ExposeSecret;

use super::{Settings, DEV_SECRET, MIN_SECRET_BYTES};

/// The secret, the test hooks and the token checks against `environment`.
pub(super) fn check_auth(s: &Settings, bad: &mut impl FnMut(&'static str, &str)) {
    if s.server.test_hooks && !s.test_hooks() {
        let problem = "test hooks need environment = \"development\" or \"test\" \
                       (APP__ENVIRONMENT); turn them off anywhere else";
        bad("server.test_hooks", problem);
    }
    let auth = &s.auth;
    let hmac = auth
        .algorithms
        .iter()
        .any(|a| a.family() == AlgorithmFamily::Hmac);
    if auth.algorithms.is_empty() {
        bad(
            "auth.algorithms",
            "must name at least one algorithm (HS256, RS256, ES256, ...)",
        );
    }
    if hmac {
        check_secret(s, bad);
    }
    for (key, value) in [
        ("auth.issuer", &auth.issuer),
        ("auth.audience", &auth.audience),
    ] {
        match value.as_deref() {
            Some(v) if v.trim().is_empty() => {
                bad(key, "must not be empty when set (unset, it is not checked)")
            }
            None if s.environment.is_deployed() => bad(
                key,
                "is required outside environment = \"development\" and \"test\": the value \
                 the identity provider puts in its tokens (APP__AUTH__ISSUER, \
                 APP__AUTH__AUDIENCE)",
            ),
            _ => {}
        }
    }
    for (key, path) in [
        ("auth.roles_claim", &auth.roles_claim),
        ("auth.groups_claim", &auth.groups_claim),
    ] {
        if path.trim().is_empty() {
            bad(
                key,
                "must be a claim's name or a dotted path such as realm_access.roles",
            );
        }
    }
    if auth.max_token_lifetime.is_zero() {
        bad("auth.max_token_lifetime_secs", "must be greater than zero");
    }
    check_jwks(s, bad);
}

/// The HS256 secret: long enough, and the public one only in development.
fn check_secret(s: &Settings, bad: &mut impl FnMut(&'static str, &str)) {
    let secret = s.auth.jwt_secret.expose_secret();
    if s.environment.is_development() {
        if secret.len() < 16 {
            bad("auth.jwt_secret", "must be at least 16 bytes");
        }
    } else if secret == DEV_SECRET {
        let problem = "the development secret may only be used with environment = \
                       \"development\"; set APP__AUTH__JWT_SECRET to a secret of your own \
                       (or leave HS256 out of auth.algorithms)";
        bad("auth.jwt_secret", problem);
    } else if secret.len() < MIN_SECRET_BYTES {
        let problem = "must be at least 32 bytes outside environment = \"development\"";
        bad("auth.jwt_secret", problem);
    }
}

/// A JWKS goes with the public-key algorithms, over HTTPS where it matters.
fn check_jwks(s: &Settings, bad: &mut impl FnMut(&'static str, &str)) {
    let auth = &s.auth;
    let public = auth
        .algorithms
        .iter()
        .any(|a| a.family() != AlgorithmFamily::Hmac);
    match &auth.jwks_url {
        None if public => bad(
            "auth.jwks_url",
            "auth.algorithms names a public-key algorithm (RS256, ES256, ...): set the \
             identity provider's JWKS URL",
        ),
        None => {}
        Some(_) if !public => bad(
            "auth.algorithms",
            "auth.jwks_url is set: name the algorithms its keys sign with (RS256, ES256, \
             ...); HS256 tokens are only ever checked against auth.jwt_secret",
        ),
        Some(url) => {
            let relaxed = s.environment.allows_test_hooks();
            let scheme_ok = match url.split_once("://") {
                Some(("https", rest)) => !rest.is_empty(),
                Some(("http", rest)) => !rest.is_empty() && relaxed,
                _ => false,
            };
            if !scheme_ok {
                bad(
                    "auth.jwks_url",
                    "must be an https:// URL (http:// only in development and test)",
                );
            }
        }
    }
    if auth.jwks_min_refresh.is_zero() {
        bad("auth.jwks_min_refresh_secs", "must be greater than zero");
    }
    if auth.jwks_refresh.is_some_and(|d| d.is_zero()) {
        bad(
            "auth.jwks_refresh_secs",
            "must be greater than zero (or unset)",
        );
    }
    if auth.jwks_max_fresh.is_zero() || auth.jwks_max_fresh > Duration::from_secs(86_400) {
        bad(
            "auth.jwks_max_fresh_secs",
            "must be between 1 and 86400 (a day)",
        );
    }
    if auth.jwks_timeout.is_zero() {
        bad("auth.jwks_timeout_ms", "must be greater than zero");
    }
}
