//! How the JWKS is fetched and how long its keys last: a redirect is never followed (the
//! keys come from `auth.jwks_url` itself; a 3xx is a failed fetch and the cached keys stay),
//! and a key set is fetched again after `auth.jwks_max_fresh_secs` however long the
//! provider's `Cache-Control: max-age` says it may be kept.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;

use super::jwks::{app_of, claims, refused, status};
use crate::support::inspect::wait_for;
use crate::support::jwks::{JwksServer, TestKey};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jwks_url_that_redirects_is_a_failed_fetch_and_the_cached_keys_stay() {
    let (known, elsewhere) = (TestKey::rsa(0), TestKey::rsa(1));
    let server = JwksServer::start(&[known]).await;
    // Another key set, which the provider's URL comes to redirect to.
    let other = JwksServer::start(&[elsewhere]).await;
    let app = app_of(&server, |_| {}).await;
    let cached = known.sign(&claims(json!({})));
    assert_eq!(status(&app, &cached).await, StatusCode::OK);
    server.redirect_to(&other.url);
    let redirected = elsewhere.sign(&claims(json!({})));
    let before = server.fetches();
    // A token of the redirected set's key names a kid the cache lacks: it fetches (at most
    // once a second here), is answered 302, and is refused.
    wait_for(
        "a fetch answered with the redirect",
        Duration::from_secs(10),
        || async {
            refused(&app, &redirected, "a key of the set redirected to").await;
            (server.fetches() > before).then_some(())
        },
    )
    .await;
    assert_eq!(other.fetches(), 0, "the redirect was not followed");
    refused(&app, &redirected, "a key of the set redirected to").await;
    assert_eq!(
        status(&app, &cached).await,
        StatusCode::OK,
        "the cached keys stay after a redirect"
    );
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_up_fetch_that_redirects_brings_no_keys() {
    let key = TestKey::rsa(1);
    let server = JwksServer::start(&[]).await;
    let other = JwksServer::start(&[key]).await;
    server.redirect_to(&other.url);
    let app = app_of(&server, |_| {}).await;
    refused(
        &app,
        &key.sign(&claims(json!({}))),
        "redirected at start-up",
    )
    .await;
    wait_for("the start-up fetch", Duration::from_secs(10), || async {
        (server.fetches() >= 1).then_some(())
    })
    .await;
    refused(
        &app,
        &key.sign(&claims(json!({}))),
        "redirected at start-up",
    )
    .await;
    assert_eq!(other.fetches(), 0, "the redirect was not followed");
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_key_is_dropped_after_the_freshness_cap_whatever_max_age_says() {
    let (revoked, next) = (TestKey::rsa(0), TestKey::rsa(1));
    let server = JwksServer::start(&[revoked, next]).await;
    // The provider lets its key set be kept for a day.
    server.set_cache_control("public, max-age=86400");
    let app = app_of(&server, |s| s.auth.jwks_max_fresh = Duration::from_secs(1)).await;
    let token = revoked.sign(&claims(json!({})));
    assert_eq!(status(&app, &token).await, StatusCode::OK);
    let fetched = server.fetches();
    // The provider revokes the key. Its kid is cached, so no token fetches again: only the
    // background refresh, due after the cap (1 s here, not the answer's day), drops it.
    server.publish(&[next]);
    wait_for(
        "the revoked key to be refused",
        Duration::from_secs(10),
        || async { (status(&app, &token).await == StatusCode::UNAUTHORIZED).then_some(()) },
    )
    .await;
    assert!(
        server.fetches() > fetched,
        "fetched again in the background"
    );
    assert_eq!(
        status(&app, &next.sign(&claims(json!({})))).await,
        StatusCode::OK
    );
    app.finish().await;
}
