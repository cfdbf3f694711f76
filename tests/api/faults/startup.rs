//! What start-up refuses, with the real binary: the built-in environment is production,
//! which takes neither the public development secret (nor the development audit key), nor
//! a short one, nor test hooks, and needs the issuer and audience of the tokens.

use jsonwebtoken::{decode, DecodingKey, Validation};
use kh_review::config::DEV_SECRET;
use kh_review::web::auth::TokenClaims;

use crate::support::binary::run_binary;

const OWN_SECRET: &str = "0123456789abcdef0123456789abcdef";
const OWN_AUDIT_KEY: &str = "fedcba9876543210fedcba9876543210";
/// What production needs besides its own secret.
const PRODUCTION: &[(&str, &str)] = &[
    ("APP__AUTH__JWT_SECRET", OWN_SECRET),
    ("APP__AUDIT__KEY", OWN_AUDIT_KEY),
    ("APP__AUTH__ISSUER", "https://idp.example.com/realms/kb"),
    ("APP__AUTH__AUDIENCE", "kh-review"),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_production_default_refuses_to_start_with_unsafe_settings() {
    for (envs, key, why) in [
        (vec![], "auth.jwt_secret", "development secret"),
        (vec![], "audit.key", "development key"),
        (
            vec![("APP__AUDIT__KEY", &OWN_AUDIT_KEY[..20])],
            "audit.key",
            "32 bytes",
        ),
        (
            vec![("APP__AUDIT__CHAIN", "false")],
            "audit.chain",
            "baseline",
        ),
        (
            vec![("APP__AUTH__JWT_SECRET", OWN_SECRET)],
            "auth.issuer",
            "required",
        ),
        (
            vec![("APP__AUTH__JWT_SECRET", OWN_SECRET)],
            "auth.audience",
            "required",
        ),
        (
            vec![("APP__AUTH__JWT_SECRET", &OWN_SECRET[..20])],
            "auth.jwt_secret",
            "32 bytes",
        ),
        (
            vec![
                ("APP__AUTH__JWT_SECRET", OWN_SECRET),
                ("APP__SERVER__TEST_HOOKS", "true"),
            ],
            "server.test_hooks",
            "development",
        ),
        (
            vec![
                ("APP__ENVIRONMENT", "staging"),
                ("APP__AUTH__JWT_SECRET", OWN_SECRET),
                ("APP__SERVER__TEST_HOOKS", "true"),
            ],
            "server.test_hooks",
            "development",
        ),
    ] {
        let (code, out) = run_binary(&["serve"], &envs).await;
        assert_eq!(code, Some(2), "{envs:?}: {out}");
        let line = out.lines().find(|l| l.contains(key));
        assert!(line.is_some_and(|l| l.contains(why)), "{envs:?}: {out}");
        assert!(!out.contains(OWN_SECRET), "no secret in the message: {out}");
        assert!(
            !out.contains(&OWN_AUDIT_KEY[..20]),
            "no key in the message: {out}"
        );
    }
    let (code, out) = run_binary(&["check-config"], &[("APP__ENVIRONMENT", "development")]).await;
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("environment: development"), "{out}");
    let (code, out) = run_binary(&["check-config"], PRODUCTION).await;
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("environment: production"), "{out}");
    // An identity provider's algorithms, as one comma-separated variable.
    let jwks = [
        ("APP__ENVIRONMENT", "development"),
        ("APP__AUTH__ALGORITHMS", "RS256,ES256"),
        ("APP__AUTH__JWKS_URL", "http://127.0.0.1:9/certs"),
    ];
    let (code, out) = run_binary(&["check-config"], &jwks).await;
    assert_eq!(code, Some(0), "{out}");
    let (code, out) = run_binary(&["check-config"], &jwks[..2]).await;
    assert_eq!(code, Some(2), "RS256 without a JWKS: {out}");
    assert!(out.contains("auth.jwks_url"), "{out}");
}

/// What `make token` runs: a token signed with the development secret, in development only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_are_minted_in_development_only() {
    let args = ["token", "alice", "--roles", "author,reviewer"];
    let (code, out) = run_binary(&args, &[("APP__ENVIRONMENT", "development")]).await;
    assert_eq!(code, Some(0), "{out}");
    let key = DecodingKey::from_secret(DEV_SECRET.as_bytes()).unwrap();
    let claims = decode::<TokenClaims>(out.trim(), &key, &Validation::default())
        .expect("a token signed with the development secret")
        .claims;
    assert_eq!((claims.sub.as_str(), claims.roles.len()), ("alice", 2));
    let (code, out) = run_binary(&args, PRODUCTION).await;
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("development"), "{out}");
}
