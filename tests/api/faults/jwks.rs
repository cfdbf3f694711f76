//! Tokens of an identity provider: RS256 and ES256 keys published as a JWKS by a server of
//! the test (`support::jwks`), rotated, served slowly or not at all, and tokens crafted to
//! confuse one kind of key for another (redirects and the freshness cap: `jwks_fetch.rs`).

use std::time::{Duration, Instant};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use kh_review::config::Settings;
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::app::{expose, spawn_app_with, AppOptions, TestApp};
use crate::support::inspect::wait_for;
use crate::support::jwks::{JwksServer, Mode, TestKey};

const ISSUER: &str = "https://idp.test/realms/kb";
const AUDIENCE: &str = "kh-review";
const MINE: &str = "/api/v1/documents";

/// An app taking RS256 and ES256 tokens of `server`'s keys, with `tune` on top.
pub(super) async fn app_of(
    server: &JwksServer,
    tune: impl Fn(&mut Settings) + Send + Sync + 'static,
) -> TestApp {
    let url = server.url.clone();
    spawn_app_with(AppOptions {
        configure: Some(Box::new(move |s| {
            s.auth.algorithms = vec![Algorithm::RS256, Algorithm::ES256];
            s.auth.jwks_url = Some(url.clone());
            s.auth.issuer = Some(ISSUER.into());
            s.auth.audience = Some(AUDIENCE.into());
            s.auth.jwks_min_refresh = Duration::from_secs(1);
            s.auth.jwks_timeout = Duration::from_millis(500);
            tune(s);
        })),
        ..AppOptions::default()
    })
    .await
}

/// An author's claims as the provider issues them, with `extra` on top.
pub(super) fn claims(extra: Value) -> Value {
    let now = chrono::Utc::now().timestamp();
    let mut c = json!({
        "sub": "alice", "roles": ["author"], "iss": ISSUER, "aud": AUDIENCE,
        "iat": now, "exp": now + 300,
    });
    c.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    c
}

pub(super) async fn status(app: &TestApp, token: &str) -> StatusCode {
    app.get(MINE, token).await.status()
}

/// Asserts `401 UNAUTHORIZED`; its message.
pub(super) async fn refused(app: &TestApp, token: &str, why: &str) -> String {
    let r = app.get(MINE, token).await;
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "{why}");
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["code"], "UNAUTHORIZED", "{why}: {v}");
    v["message"].as_str().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rs256_and_es256_tokens_of_the_published_keys_are_accepted() {
    let (rsa, ec) = (TestKey::rsa(0), TestKey::ec(0));
    let server = JwksServer::start(&[rsa, &ec]).await;
    let app = app_of(&server, |_| {}).await;
    assert_eq!(
        status(&app, &rsa.sign(&claims(json!({})))).await,
        StatusCode::OK
    );
    assert_eq!(
        status(&app, &ec.sign(&claims(json!({})))).await,
        StatusCode::OK
    );
    let r = app
        .post(
            MINE,
            &ec.sign(&claims(json!({}))),
            json!({"title": "Runbook", "body": "Restart."}),
        )
        .await;
    assert_eq!(r.status(), StatusCode::CREATED);
    assert_eq!(
        server.fetches(),
        1,
        "both keys came with the start-up fetch"
    );
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_rotation_at_the_provider_needs_no_restart() {
    let (old, new) = (TestKey::rsa(0), TestKey::rsa(1));
    let server = JwksServer::start(&[old]).await;
    let app = app_of(&server, |_| {}).await;
    assert_eq!(
        status(&app, &old.sign(&claims(json!({})))).await,
        StatusCode::OK
    );
    // The provider publishes its new key and drops the old one.
    server.publish(&[new]);
    let started = Instant::now();
    let token = new.sign(&claims(json!({})));
    wait_for(
        "the new kid to be accepted",
        Duration::from_secs(10),
        || async { (status(&app, &token).await == StatusCode::OK).then_some(()) },
    )
    .await;
    let took = started.elapsed();
    // One fetch at start-up, then at most one per second (auth.jwks_min_refresh_secs = 1).
    let allowed = 2 + took.as_secs() as usize;
    assert!(
        server.fetches() <= allowed,
        "{} fetches in {took:?}",
        server.fetches()
    );
    refused(&app, &old.sign(&claims(json!({}))), "the old kid is gone").await;
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_kid_fetches_at_most_once_per_min_refresh() {
    let key = TestKey::rsa(0);
    let server = JwksServer::start(&[key]).await;
    let app = app_of(&server, |s| {
        s.auth.jwks_min_refresh = Duration::from_secs(3600)
    })
    .await;
    assert_eq!(server.fetches(), 1);
    for n in 0..20 {
        let token = key.sign_as(&format!("unknown-{n}"), &claims(json!({})));
        refused(&app, &token, "an unknown kid").await;
    }
    assert_eq!(
        server.fetches(),
        1,
        "the start-up fetch was less than an hour ago"
    );
    assert_eq!(
        status(&app, &key.sign(&claims(json!({})))).await,
        StatusCode::OK
    );
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_jwks_down_cached_keys_work_and_a_new_kid_is_refused_quickly() {
    let (known, new) = (TestKey::rsa(0), TestKey::rsa(1));
    let server = JwksServer::start(&[known]).await;
    let app = app_of(&server, |_| {}).await;
    let cached = known.sign(&claims(json!({})));
    assert_eq!(status(&app, &cached).await, StatusCode::OK);
    server.publish(&[known, new]);
    // Hung: a request for the new kid waits for one fetch, at most auth.jwks_timeout_ms.
    server.set_mode(Mode::Hang);
    let fresh = new.sign(&claims(json!({})));
    let before = server.fetches();
    wait_for(
        "a fetch to the hung JWKS",
        Duration::from_secs(10),
        || async {
            let started = Instant::now();
            let got = status(&app, &fresh).await;
            assert_eq!(got, StatusCode::UNAUTHORIZED);
            assert!(
                started.elapsed() < Duration::from_secs(2),
                "{:?}",
                started.elapsed()
            );
            (server.fetches() > before).then_some(())
        },
    )
    .await;
    assert_eq!(
        status(&app, &cached).await,
        StatusCode::OK,
        "cached key, provider hung"
    );
    // Twenty requests at once for a kid the cache lacks share one fetch.
    let batch = |token: String| {
        let app = &app;
        async move {
            let started = Instant::now();
            let s = status(app, &token).await;
            (s, started.elapsed())
        }
    };
    let mut shared = false;
    let deadline = Instant::now() + Duration::from_secs(10);
    while !shared && Instant::now() < deadline {
        let before = server.fetches();
        let answers = futures_util::future::join_all((0..20).map(|_| batch(fresh.clone()))).await;
        let fetched = server.fetches() - before;
        for (s, took) in answers {
            assert_eq!(s, StatusCode::UNAUTHORIZED);
            assert!(
                took < Duration::from_secs(2),
                "refused within the timeout: {took:?}"
            );
        }
        assert!(fetched <= 1, "{fetched} fetches for one batch");
        shared = fetched == 1;
    }
    assert!(shared, "a batch made its fetch");
    // Stopped: connecting is refused, the cached key still works, the new one is 401 at once.
    server.stop().await;
    assert_eq!(
        status(&app, &cached).await,
        StatusCode::OK,
        "cached key, provider gone"
    );
    let started = Instant::now();
    refused(&app, &fresh, "new kid, provider gone").await;
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_up_does_not_wait_for_the_provider_and_its_keys_arrive_later() {
    let key = TestKey::rsa(0);
    let server = JwksServer::start(&[key]).await;
    server.set_mode(Mode::Fail);
    let app = app_of(&server, |_| {}).await;
    let token = key.sign(&claims(json!({})));
    refused(&app, &token, "no keys yet").await;
    server.set_mode(Mode::Serve);
    wait_for("the keys to arrive", Duration::from_secs(10), || async {
        (status(&app, &token).await == StatusCode::OK).then_some(())
    })
    .await;
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_keys_are_fetched_again_in_the_background() {
    let key = TestKey::rsa(0);
    let server = JwksServer::start(&[key]).await;
    let _app = app_of(&server, |s| {
        s.auth.jwks_refresh = Some(Duration::from_secs(1))
    })
    .await;
    wait_for(
        "two background fetches",
        Duration::from_secs(10),
        || async { (server.fetches() >= 3).then_some(()) },
    )
    .await;
    _app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_token_can_make_one_kind_of_key_stand_in_for_another() {
    let (rsa, ec) = (TestKey::rsa(0), TestKey::ec(0));
    let server = JwksServer::start(&[rsa, &ec]).await;
    let app = app_of(&server, |_| {}).await;
    let c = claims(json!({}));
    // HS256 signed with the RSA public key's bytes, naming the RSA key.
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some(rsa.kid.clone());
    let secret = EncodingKey::from_secret(rsa.public_pem.as_bytes()).unwrap();
    let forged = jsonwebtoken::encode(&header, &c, &secret).unwrap();
    refused(&app, &forged, "HS256 with the public key").await;
    // HS256 with the service's own jwt_secret: only JWKS algorithms are configured.
    let own = EncodingKey::from_secret(expose(&app.settings.auth.jwt_secret).as_bytes()).unwrap();
    let hs = jsonwebtoken::encode(&Header::new(Algorithm::HS256), &c, &own).unwrap();
    refused(&app, &hs, "HS256 not accepted").await;
    // alg: none, naming the RSA key.
    let b64 = |v: &Value| {
        use base64::Engine;
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
    };
    let none = format!(
        "{}.{}.",
        b64(&json!({"alg": "none", "kid": rsa.kid})),
        b64(&c)
    );
    refused(&app, &none, "alg none").await;
    let unsigned = format!(
        "{}.{}.",
        b64(&json!({"alg": "RS256", "kid": rsa.kid})),
        b64(&c)
    );
    refused(&app, &unsigned, "RS256 without a signature").await;
    // An ES256 token naming the RSA key, and the other way round.
    refused(&app, &ec.sign_as(&rsa.kid, &c), "ES256 naming the RSA key").await;
    refused(&app, &rsa.sign_as(&ec.kid, &c), "RS256 naming the EC key").await;
    // RS384 is not in auth.algorithms, even with a key that could check it.
    let rs384 = rsa.sign_with(Algorithm::RS384, &rsa.kid, &c);
    let why = refused(&app, &rs384, "RS384").await;
    assert!(why.contains("alg"), "{why}");
    assert_eq!(
        status(&app, &rsa.sign(&c)).await,
        StatusCode::OK,
        "the genuine token"
    );
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_issuer_or_audience_or_a_long_lifetime_is_refused() {
    let key = TestKey::ec(0);
    let server = JwksServer::start(&[&key]).await;
    let app = app_of(&server, |s| {
        s.auth.max_token_lifetime = Duration::from_secs(3600)
    })
    .await;
    let now = chrono::Utc::now().timestamp();
    for (extra, why) in [
        (json!({"iss": "https://evil.test/realms/kb"}), "iss"),
        (json!({"aud": "another-service"}), "aud"),
        (json!({"iat": now, "exp": now + 7200}), "exp - iat"),
        (json!({"iat": null, "exp": now + 7200}), "iat"),
    ] {
        let mut c = claims(extra.clone());
        c.as_object_mut().unwrap().retain(|_, v| !v.is_null());
        let message = refused(&app, &key.sign(&c), why).await;
        assert!(message.contains(why), "{extra}: {message}");
    }
    let short = claims(json!({"exp": now + 1800}));
    assert_eq!(status(&app, &key.sign(&short)).await, StatusCode::OK);
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn roles_come_from_realm_access_and_a_malformed_claim_is_refused() {
    let key = TestKey::rsa(0);
    let server = JwksServer::start(&[key]).await;
    let app = app_of(&server, |s| {
        s.auth.roles_claim = "realm_access.roles".into()
    })
    .await;
    let keycloak = claims(json!({"roles": null, "realm_access": {"roles": ["author", "uma"]}}));
    let r = app
        .post(
            MINE,
            &key.sign(&keycloak),
            json!({"title": "Runbook", "body": "Restart."}),
        )
        .await;
    assert_eq!(
        r.status(),
        StatusCode::CREATED,
        "an author by its realm roles"
    );
    let r = app.get(MINE, &key.sign(&claims(json!({})))).await;
    assert_eq!(
        r.status(),
        StatusCode::FORBIDDEN,
        "top-level roles are not where configured"
    );
    for bad in [
        json!({"realm_access": {"roles": "author"}}),
        json!({"realm_access": {"roles": ["author"]}, "groups": [{"name": "ops"}]}),
    ] {
        let message = refused(&app, &key.sign(&claims(bad.clone())), "malformed").await;
        assert!(message.contains("array of strings"), "{bad}: {message}");
    }
    app.finish().await;
}
