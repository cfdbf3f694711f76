//! `/docs` in a real headless Chromium whose network reaches the service only: RapiDoc,
//! served by the service itself, lists every operation of `/openapi.json`, under a
//! Content-Security-Policy that it does not break; and the vendored files as HTTP serves them.

use std::collections::BTreeSet;

use reqwest::StatusCode;
use serde_json::{json, Value};

use kh_review::web::csp::CONTENT_SECURITY_POLICY;

use crate::support::app::spawn_app;
use crate::support::browser::{Browser, Window};
use crate::support::inspect::expect_error;

/// Every (METHOD, path) of the description.
fn operations(spec: &Value) -> BTreeSet<(String, String)> {
    let mut ops = BTreeSet::new();
    for (path, item) in spec["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            ops.insert((method.to_uppercase(), path.to_string()));
        }
    }
    ops
}

/// The operations RapiDoc rendered and shows: in read mode each is a `section-operation`
/// part (RapiDoc's styling interface) whose id is `<method>-<path>`, with `{x}` written
/// `-x-`, inside `<rapi-doc>`'s shadow root.
const RENDERED: &str = "const root = document.querySelector('rapi-doc')?.shadowRoot;
    if (!root) return null;
    const ops = [...root.querySelectorAll('[part~=section-operation][id]')]
        .filter(e => e.offsetParent !== null)
        .map(e => e.id);
    return ops.length >= arguments[0] ? ops : null;";

/// Waits until RapiDoc shows `expected`'s count of operations, and returns them as
/// (METHOD, path).
async fn rendered_operations(b: &Browser, expected: usize) -> BTreeSet<(String, String)> {
    let script = RENDERED.replace("arguments[0]", &expected.to_string());
    let ids = b
        .wait_until("RapiDoc to render the operations", &script)
        .await;
    let param = regex::Regex::new(r"-(\w+)-").unwrap();
    let mut ops = BTreeSet::new();
    for id in ids.as_array().unwrap() {
        let (method, path) = id.as_str().unwrap().split_once('-').unwrap();
        let path = param.replace_all(path, "{$1}");
        ops.insert((method.to_uppercase(), path.to_string()));
    }
    ops
}

/// Every resource the page loaded, by URL.
async fn loaded(b: &Browser) -> Vec<String> {
    let v = b
        .eval("return performance.getEntriesByType('resource').map(e => e.name);")
        .await;
    serde_json::from_value(v).unwrap()
}

/// What the console says the Content-Security-Policy refused.
async fn refused(b: &Browser) -> Vec<String> {
    let console = b.console().await;
    let messages = console.iter().filter_map(|e| e["message"].as_str());
    messages
        .filter(|m| m.contains("Content Security Policy"))
        .map(str::to_string)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_every_operation_loading_from_the_service_alone() {
    let app = spawn_app().await;
    let expected = operations(&app.public_json("/openapi.json").await);
    assert!(expected.len() >= 16, "{expected:?}");
    let page = app.client.get(app.url("/docs")).send().await.unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    let h = page.headers();
    assert_eq!(h["content-security-policy"], CONTENT_SECURITY_POLICY);
    assert_eq!(h["x-content-type-options"], "nosniff");
    let html = page.text().await.unwrap();
    let scripts: Vec<&str> = html.split("<script").skip(1).collect();
    assert_eq!(scripts.len(), 1, "{html}");
    assert!(
        scripts[0]
            .starts_with(r#" type="module" src="/assets/rapidoc-9.3.8/rapidoc-min.js"></script>"#),
        "one script, from the service, none inline: {html}"
    );

    for (window, name) in [(Window::DESKTOP, "docs-1280"), (Window::PHONE, "docs-390")] {
        let b = Browser::open_with(&app.address, window).await;
        b.goto("/docs").await;
        let shown = rendered_operations(&b, expected.len()).await;
        assert_eq!(shown, expected, "{name}: the page lists every operation");
        b.screenshot(name).await;
        let origin = format!("{}/", app.address);
        let resources = loaded(&b).await;
        assert!(
            resources.iter().any(|r| r.ends_with("/rapidoc-min.js")),
            "{resources:?}"
        );
        // A `data:` URL is inline (RapiDoc's own select arrow, in its script): nothing is
        // fetched, from anywhere.
        let foreign: Vec<_> = resources
            .iter()
            .filter(|r| !r.starts_with(&origin) && !r.starts_with("data:"))
            .collect();
        assert!(
            foreign.is_empty(),
            "{name}: loaded from elsewhere: {foreign:?}"
        );
        let refused = refused(&b).await;
        assert!(refused.is_empty(), "{name}: the CSP refused {refused:#?}");
        b.close().await;
    }
    app.finish().await;
}

/// The browsers of these tests reach no host but the loopback addresses: a page of another
/// host does not load, and the request went to the test's proxy, not out. The service's
/// address, the only one the browser may reach, does load.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_browser_reaches_nothing_but_the_service() {
    let app = spawn_app().await;
    let b = Browser::open(&app.address).await;
    b.goto("/healthz").await;
    b.wait_for("pre").await;
    b.wait_for_text(r#""status":"ok""#).await;
    for (url, asked) in [
        ("http://example.com/", "GET http://example.com/"),
        ("https://example.com/", "CONNECT example.com:443"),
        ("http://192.0.2.1:8080/", "GET http://192.0.2.1:8080/"),
    ] {
        let error = b.try_goto(url).await.expect_err(url);
        assert!(error.contains("ERR_"), "{url}: {error}");
        let outside = b.outside_requests();
        assert!(
            outside.iter().any(|r| r.starts_with(asked)),
            "{url} was not sent to the proxy (so maybe out): {outside:?}"
        );
    }
    // A page's own request to another host fails too (no CSP here to refuse it; `no-cors`,
    // so that only a network failure, not a CORS refusal, rejects).
    let fetched = b
        .eval_with(
            "return fetch(arguments[0], { mode: 'no-cors' }).then(() => 'reached', e => 'failed: ' + e);",
            vec![json!("http://example.org/")],
        )
        .await;
    assert!(fetched.as_str().unwrap().starts_with("failed"), "{fetched}");
    let outside = b.outside_requests();
    assert!(
        outside
            .iter()
            .any(|r| r.starts_with("GET http://example.org/")),
        "{outside:?}"
    );
    b.close().await;
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vendored_assets_are_served_cached_for_good_and_nothing_else() {
    let app = spawn_app().await;
    let js = "text/javascript; charset=utf-8";
    let text = "text/plain; charset=utf-8";
    for (path, content_type) in [
        ("/assets/rapidoc-9.3.8/rapidoc-min.js", js),
        ("/assets/rapidoc-9.3.8/LICENSE.txt", text),
        ("/assets/rapidoc-9.3.8/rapidoc-min.js.LICENSE.txt", text),
        ("/assets/htmx.org-2.0.11/htmx.min.js", js),
        ("/assets/htmx.org-2.0.11/LICENSE", text),
        ("/assets/uplot-1.6.32/uPlot.iife.min.js", js),
        (
            "/assets/uplot-1.6.32/uPlot.min.css",
            "text/css; charset=utf-8",
        ),
        ("/assets/uplot-1.6.32/LICENSE", text),
    ] {
        let on_disk = std::fs::read(format!(
            "{}/assets/vendor/{}",
            env!("CARGO_MANIFEST_DIR"),
            path.trim_start_matches("/assets/")
        ))
        .unwrap();
        for method in [reqwest::Method::GET, reqwest::Method::HEAD] {
            let r = app
                .client
                .request(method.clone(), app.url(path))
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), StatusCode::OK, "{method} {path}");
            let h = r.headers();
            assert_eq!(h["content-type"], content_type, "{path}");
            assert_eq!(h["cache-control"], "public, max-age=31536000, immutable");
            assert_eq!(h["x-content-type-options"], "nosniff");
            let body = r.bytes().await.unwrap();
            if method == reqwest::Method::GET {
                assert!(body == on_disk, "{path}: the vendored file, byte for byte");
            } else {
                assert!(body.is_empty(), "HEAD {path}");
            }
        }
    }
    for path in [
        "/assets/rapidoc-9.3.8/nope.js",
        "/assets/rapidoc-9.3.4/rapidoc-min.js",
        "/assets/htmx.org-2.0.11/..%2F..%2FCargo.toml",
        "/assets/vendor/README.md",
        "/assets/rapidoc-min.js",
    ] {
        let r = app.client.get(app.url(path)).send().await.unwrap();
        assert!(r.headers().get("cache-control").is_none(), "{path}");
        expect_error(r, StatusCode::NOT_FOUND, "NOT_FOUND").await;
    }
    for method in ["POST", "PUT", "DELETE"] {
        let url = app.url("/assets/rapidoc-9.3.8/rapidoc-min.js");
        let r = app
            .client
            .request(method.parse().unwrap(), url)
            .send()
            .await
            .unwrap();
        assert_eq!(r.headers()["allow"], "GET, HEAD", "{method}");
        expect_error(r, StatusCode::METHOD_NOT_ALLOWED, "METHOD_NOT_ALLOWED").await;
    }
    app.finish().await;
}
