//! The headers every response carries: `X-Content-Type-Options: nosniff` on JSON, errors,
//! health, metrics and the description (once each), while `/docs` and the console keep
//! their own security headers.

use kh_review::web::csp::{CONSOLE_CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY};
use reqwest::{Response, StatusCode};
use serde_json::json;

use crate::support::app::spawn_app;

fn nosniff(what: &str, r: &Response) {
    let values: Vec<_> = r
        .headers()
        .get_all("x-content-type-options")
        .iter()
        .collect();
    assert_eq!(values, ["nosniff"], "{what} ({})", r.status());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_response_says_nosniff_and_pages_keep_their_policy() {
    let app = spawn_app().await;
    let author = app.author();
    let get = |path: &str| app.client.get(app.url(path)).send();
    let created = json!({"title": "Headers", "body": "nosniff"});
    let responses = [
        ("a JSON page", app.get("/api/v1/documents", &author).await),
        (
            "a created document",
            app.post("/api/v1/documents", &author, created).await,
        ),
        ("a 404", app.get("/api/v1/documents/x", &author).await),
        ("a 401", get("/api/v1/reviews").await.unwrap()),
        (
            "a 422",
            app.post("/api/v1/documents", &author, json!([])).await,
        ),
        (
            "a 405",
            app.client.delete(app.url("/healthz")).send().await.unwrap(),
        ),
        ("an unknown path", get("/nowhere").await.unwrap()),
        ("/healthz", get("/healthz").await.unwrap()),
        ("/readyz", get("/readyz").await.unwrap()),
        ("/metrics", get("/metrics").await.unwrap()),
        ("/openapi.json", get("/openapi.json").await.unwrap()),
    ];
    for (what, r) in &responses {
        nosniff(what, r);
    }
    assert_eq!(responses[0].1.status(), StatusCode::OK);
    assert_eq!(responses[3].1.status(), StatusCode::UNAUTHORIZED);
    for (path, policy) in [
        ("/docs", CONTENT_SECURITY_POLICY),
        ("/console/queue", CONSOLE_CONTENT_SECURITY_POLICY),
    ] {
        let r = get(path).await.unwrap();
        assert_eq!(r.status(), StatusCode::OK, "{path}");
        assert_eq!(r.headers()["content-security-policy"], policy, "{path}");
        nosniff(path, &r);
    }
    app.finish().await;
}
