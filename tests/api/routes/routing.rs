//! Routing edges: a wrong method on a known path is 405 with `Allow`, an unknown path 404,
//! and the request metrics keep to a fixed set of labels whatever a client sends.

use std::collections::BTreeSet;

use reqwest::{Method, StatusCode};

use crate::support::app::{spawn_app, TestApp};
use crate::support::inspect::expect_error;

/// The series of a scrape: every sample line without its value.
async fn series(app: &TestApp) -> BTreeSet<String> {
    let r = app.client.get(app.url("/metrics")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let text = r.text().await.unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| l.rsplit_once(' ').map_or(l, |(k, _)| k).to_string())
        .collect()
}

async fn send(app: &TestApp, method: &str, path: &str) -> reqwest::Response {
    let method = Method::from_bytes(method.as_bytes()).unwrap();
    app.client
        .request(method, app.url(path))
        .bearer_auth(app.author())
        .send()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn made_up_methods_add_no_metric_series() {
    let app = spawn_app().await;
    let paths = ["/healthz", "/api/v1/documents", "/api/v1/no-such-thing"];
    // One made-up method per path, and a scrape, make the series they belong to.
    for path in paths {
        send(&app, "WARMUP", path).await;
    }
    series(&app).await;
    let before = series(&app).await;
    for path in paths {
        for i in 0..200 {
            let r = send(&app, &format!("FOO{i}"), path).await;
            assert!(r.status().is_client_error(), "{path}: {}", r.status());
        }
    }
    let after = series(&app).await;
    let added: Vec<_> = after.difference(&before).take(5).collect();
    assert!(added.is_empty(), "new series: {added:?}");
    assert_eq!(after.len(), before.len());
    assert!(
        after.iter().any(|s| s.starts_with(
            "http_requests_total{method=\"other\",route=\"/healthz\",status=\"405\"}"
        )),
        "made-up methods are counted as `other`"
    );
    assert!(
        after.iter().any(|s| s
            .starts_with("http_requests_total{method=\"other\",route=\"other\",status=\"404\"}")),
        "unknown paths are counted as `other`"
    );
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_method_on_a_known_path_is_405_with_allow() {
    let app = spawn_app().await;
    let id = uuid::Uuid::new_v4();
    for (method, path, allow) in [
        ("DELETE", "/api/v1/documents".to_string(), "POST, GET, HEAD"),
        ("PUT", "/healthz".to_string(), "GET, HEAD"),
        ("PATCH", format!("/api/v1/documents/{id}"), "GET, HEAD, PUT"),
        ("GET", format!("/api/v1/reviews/{id}/approve"), "POST"),
    ] {
        let r = send(&app, method, &path).await;
        assert_eq!(r.headers().get("allow").unwrap(), allow, "{method} {path}");
        expect_error(r, StatusCode::METHOD_NOT_ALLOWED, "METHOD_NOT_ALLOWED").await;
    }
    // Every path the service serves, and nothing but its own methods in `Allow`.
    let paths: BTreeSet<&str> = kh_review::http::ROUTES.iter().map(|(_, p)| *p).collect();
    for path in paths {
        let mut allowed: Vec<String> = kh_review::http::ROUTES
            .iter()
            .filter(|(_, p)| *p == path)
            .map(|(m, _)| m.to_uppercase())
            .collect();
        if allowed.iter().any(|m| m == "GET") {
            allowed.push("HEAD".into());
        }
        allowed.sort();
        let r = send(&app, "FOO", &path.replace("{id}", &id.to_string())).await;
        assert_eq!(r.status(), StatusCode::METHOD_NOT_ALLOWED, "{path}");
        let mut got: Vec<String> = r.headers()["allow"]
            .to_str()
            .unwrap()
            .split(", ")
            .map(str::to_string)
            .collect();
        got.sort();
        assert_eq!(got, allowed, "{path}");
    }
    // An unknown path is still 404, whatever the method, also beside known ones (the
    // API's paths are registered in a scope per noun: `/api/v1/reviews`).
    let near = [
        "/api/v1/no-such-thing".to_string(),
        "/api/v1/reviews/".to_string(),
        "/api/v1/reviewsx".to_string(),
        format!("/api/v1/reviews/{id}/nope"),
        format!("/api/v1/documents/{id}/submit/again"),
    ];
    for path in &near {
        for method in ["GET", "DELETE", "FOO"] {
            let r = send(&app, method, path).await;
            expect_error(r, StatusCode::NOT_FOUND, "NOT_FOUND").await;
        }
    }
    app.finish().await;
}

/// HEAD is served wherever GET is (RFC 9110 asks it of every general-purpose server; load
/// balancers probe with it): the GET's status and headers, no body.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn head_answers_wherever_get_does() {
    let app = spawn_app().await;
    let doc = app.create_document("Head", "body").await;
    let path = format!("/api/v1/documents/{}", doc.id);
    for (path, token) in [("/healthz", String::new()), (path.as_str(), app.author())] {
        let get = app.get(path, &token).await;
        let r = app
            .client
            .head(app.url(path))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK, "HEAD {path}");
        assert_eq!(
            r.headers()["content-type"],
            get.headers()["content-type"],
            "{path}"
        );
        assert!(
            r.bytes().await.unwrap().is_empty(),
            "HEAD {path} sent a body"
        );
    }
    app.finish().await;
}
