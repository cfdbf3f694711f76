//! Unit tests of the verifier with HS256 tokens: the claims every token is checked for.

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use secrecy::SecretString;
use serde_json::json;

use super::*;
use crate::web::AuthSettings;

const SECRET: &str = "a-test-secret-of-at-least-32-bytes!";

fn token(claims: serde_json::Value) -> String {
    let key = EncodingKey::from_secret(SECRET.as_bytes()).unwrap();
    jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &key).unwrap()
}

fn verifier(issuer: Option<&str>, audience: Option<&str>) -> JwtVerifier {
    let mut settings = AuthSettings::with_secret(SecretString::from(SECRET));
    settings.issuer = issuer.map(str::to_string);
    settings.audience = audience.map(str::to_string);
    JwtVerifier::from_settings(&settings, None).unwrap()
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
    let verified = futures_util::FutureExt::now_or_never(v.verify(&token(claims(extra))))
        .expect("an HS256 token needs no fetch");
    verified.map_or_else(|e| e.status.as_u16(), |_| 200)
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
fn role_names_the_service_does_not_know_are_ignored() {
    // A token with no known role passes the verifier: it may be a member of a space (the
    // extractor refuses it, 403, when it is not: routes::spaces).
    let v = verifier(None, None);
    let roles = |extra| {
        let token = token(claims(extra));
        futures_util::FutureExt::now_or_never(v.verify(&token))
            .unwrap()
            .unwrap()
            .roles
    };
    assert_eq!(roles(json!({"roles": []})), []);
    assert_eq!(roles(json!({"roles": ["guest"]})), []);
    assert_eq!(
        roles(json!({"roles": ["guest", "reviewer"]})),
        [Role::Reviewer]
    );
}

#[test]
fn a_token_valid_for_longer_than_the_maximum_is_refused() {
    let v = verifier(None, None);
    let now = chrono::Utc::now().timestamp();
    let day = 24 * 3600;
    assert_eq!(status(&v, json!({"iat": now, "exp": now + day})), 200);
    assert_eq!(status(&v, json!({"iat": now, "exp": now + day + 60})), 401);
    let old = now - 2 * day;
    assert_eq!(
        status(&v, json!({"iat": old, "exp": now + 60})),
        401,
        "from iat"
    );
    assert_eq!(
        status(&v, json!({"exp": now + day - 60})),
        200,
        "no iat: from now"
    );
    assert_eq!(
        status(&v, json!({"exp": now + day + 60})),
        401,
        "no iat: from now"
    );
    let later = json!({"iat": now + 3 * day, "exp": now + 3 * day + 60});
    assert_eq!(
        status(&v, later),
        401,
        "an iat in the future counts from now"
    );
    assert_eq!(status(&v, json!({"iat": "today"})), 401, "malformed iat");
}

#[test]
fn roles_and_groups_are_read_where_the_provider_puts_them() {
    let mut settings = AuthSettings::with_secret(SecretString::from(SECRET));
    settings.roles_claim = "realm_access.roles".into();
    settings.groups_claim = "https://kh.example.com/groups".into();
    let v = JwtVerifier::from_settings(&settings, None).unwrap();
    let caller = |extra| {
        let token = token(claims(extra));
        futures_util::FutureExt::now_or_never(v.verify(&token)).unwrap()
    };
    let keycloak = json!({
        "roles": null,
        "realm_access": {"roles": ["reviewer", "offline_access"]},
        "https://kh.example.com/groups": ["/kb/editors", "/kb/ops"],
    });
    let c = caller(keycloak).unwrap();
    assert_eq!(c.roles, [Role::Reviewer]);
    assert_eq!(c.groups, ["/kb/editors", "/kb/ops"]);
    let top_level_only = json!({"roles": ["author"]});
    assert!(
        caller(top_level_only).unwrap().roles.is_empty(),
        "not where configured"
    );
    let status = |extra| caller(extra).map_or_else(|e| e.status.as_u16(), |_| 200);
    for bad in [
        json!({"realm_access": {"roles": "reviewer"}}),
        json!({"realm_access": {"roles": [["reviewer"]]}}),
        json!({"realm_access": {"roles": ["reviewer"]}, "https://kh.example.com/groups": "ops"}),
        json!({"realm_access": {"roles": ["reviewer"]}, "https://kh.example.com/groups": [1]}),
    ] {
        assert_eq!(status(bad.clone()), 401, "{bad}");
    }
    let no_groups = json!({"realm_access": {"roles": ["reviewer"]}});
    assert!(caller(no_groups).unwrap().groups.is_empty());
}

#[test]
fn a_token_minted_with_the_longest_ttl_does_not_overflow() {
    let secret = SecretString::from(SECRET);
    let token = sign(&secret, "alice", &[Role::Author], u64::MAX);
    let mut v = jsonwebtoken::Validation::new(Algorithm::HS256);
    v.required_spec_claims.clear();
    let key = jsonwebtoken::DecodingKey::from_secret(SECRET.as_bytes()).unwrap();
    let read = jsonwebtoken::decode::<serde_json::Value>(&token, &key, &v).unwrap();
    assert_eq!(read.claims["exp"], u64::MAX, "saturated, not wrapped");
}
