//! The console over plain HTTP: its pages and files, their headers, the answers without or
//! with the wrong token, and the 405 and 404 of the API's routes.

use kh_review::console::PATHS as CONSOLE_PATHS;
use kh_review::web::auth::Role;
use kh_review::web::csp::CONSOLE_CONTENT_SECURITY_POLICY;
use reqwest::{Method, StatusCode};

use crate::support::app::{spawn_app, spawn_app_with, AppOptions, TestApp, AUTHOR};
use crate::support::inspect::expect_error;
use kh_review_testkit::proxy::dead_port;

async fn send(app: &TestApp, method: Method, path: &str, token: Option<&str>) -> reqwest::Response {
    let mut r = app.client.request(method, app.url(path));
    if let Some(t) = token {
        r = r.bearer_auth(t);
    }
    r.send().await.expect("request sent")
}

fn concrete(path: &str) -> String {
    let id = uuid::Uuid::new_v4().to_string();
    path.replace("{id}", &id)
        .replace("{review}", &id)
        .replace("{key}", "default")
        .replace("{file}", "console.js")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_are_html_under_the_console_policy_and_fragments_need_a_token() {
    let app = spawn_app().await;
    for (method, path) in CONSOLE_PATHS {
        let url = concrete(path);
        let m: Method = method.to_uppercase().parse().unwrap();
        let r = send(&app, m.clone(), &url, None).await;
        let fragment = path.starts_with("/console/f/");
        let want = if fragment {
            StatusCode::UNAUTHORIZED
        } else {
            StatusCode::OK
        };
        assert_eq!(r.status(), want, "{method} {path}");
        let h = r.headers().clone();
        if *path == "/console/static/{file}" {
            assert_eq!(h["content-type"], "text/javascript; charset=utf-8");
            continue;
        }
        assert_eq!(h["content-type"], "text/html; charset=utf-8", "{path}");
        assert_eq!(
            h["content-security-policy"], CONSOLE_CONTENT_SECURITY_POLICY,
            "{path}"
        );
        assert_eq!(h["cache-control"], "no-store", "{path}");
        assert_eq!(h["x-content-type-options"], "nosniff", "{path}");
        let body = r.text().await.unwrap();
        assert!(!body.contains("<script>"), "no inline script: {path}");
        if fragment {
            assert!(
                body.contains("data-code=\"UNAUTHORIZED\""),
                "{path}: {body}"
            );
            // An action's refusal goes above its form; a fragment's takes its place.
            let retarget = h
                .get("hx-retarget")
                .map(|v| v.to_str().unwrap().to_string());
            let action = *method == "post";
            assert_eq!(retarget.is_some(), action, "{method} {path}");
        }
        // A method the path does not serve is 405 with Allow, naming each it serves.
        let served = |m: &str| CONSOLE_PATHS.contains(&(m, *path));
        let allow = match (served("get"), served("post")) {
            (true, true) => "GET, HEAD, POST",
            (true, false) => "GET, HEAD",
            _ => "POST",
        };
        let other = if served("get") {
            Method::DELETE
        } else {
            Method::GET
        };
        let r = send(&app, other, &url, None).await;
        assert_eq!(r.status(), StatusCode::METHOD_NOT_ALLOWED, "{path}");
        assert_eq!(r.headers()["allow"], allow, "{path}");
    }
    // HEAD answers where GET does, without a body.
    let r = send(&app, Method::HEAD, "/console/queue", None).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert!(r.bytes().await.unwrap().is_empty());
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn roles_ids_and_files_are_refused_as_the_api_refuses_them() {
    let app = spawn_app().await;
    let author = app.author();
    let r = send(&app, Method::GET, "/console/f/operator", Some(&author)).await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert!(r
        .text()
        .await
        .unwrap()
        .contains("this action needs the admin role"));
    let r = send(&app, Method::GET, "/console/f/queue", Some(&author)).await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    let reviewer = app.reviewer();
    let r = send(&app, Method::GET, "/console/f/mine", Some(&reviewer)).await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    for bad in ["not-a-uuid", &uuid::Uuid::new_v4().to_string()] {
        let r = send(
            &app,
            Method::GET,
            &format!("/console/f/documents/{bad}"),
            Some(&reviewer),
        )
        .await;
        assert_eq!(r.status(), StatusCode::NOT_FOUND, "{bad}");
        assert!(r.text().await.unwrap().contains("data-code=\"NOT_FOUND\""));
    }
    let r = send(&app, Method::GET, "/console/static/secrets.txt", None).await;
    expect_error(r, StatusCode::NOT_FOUND, "NOT_FOUND").await;
    let r = send(&app, Method::GET, "/console/static/console.css", None).await;
    assert_eq!(r.headers()["content-type"], "text/css; charset=utf-8");
    // An approve on a document of one's own is refused by the rules, as in the API.
    let both = app.token(AUTHOR, &[Role::Author, Role::Reviewer]);
    let (doc, review) = app.pending_review().await;
    let r = app
        .client
        .post(app.url(&format!(
            "/console/f/documents/{doc}/reviews/{review}/approve"
        )))
        .bearer_auth(&both)
        .form(&[("comment", "")])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert!(r.text().await.unwrap().contains("SELF_REVIEW_FORBIDDEN"));
    // The console's routes have their own metric labels.
    let line =
        "http_requests_total{method=\"GET\",route=\"/console/f/documents/{id}\",status=\"404\"}";
    assert_eq!(app.metric(line).await, Some(2.0));
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_that_is_down_is_named() {
    let port = dead_port();
    let app = spawn_app_with(AppOptions {
        database_url: Some(format!("postgres://kh:kh@127.0.0.1:{port}/nowhere")),
        ..Default::default()
    })
    .await;
    let r = send(&app, Method::GET, "/console/f/queue", Some(&app.reviewer())).await;
    assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(r.headers().contains_key("retry-after"));
    let body = r.text().await.unwrap();
    assert!(
        body.contains("PostgreSQL is unavailable; try again shortly (503)"),
        "{body}"
    );
    assert!(!body.contains("127.0.0.1"), "no address leaks: {body}");
    app.stop().await;
}

async fn read(app: &TestApp, id: uuid::Uuid) -> serde_json::Value {
    let r = app
        .get(&format!("/api/v1/documents/{id}"), &app.author())
        .await;
    r.json().await.unwrap()
}

/// A console edit takes the bodies the API takes (its form was held to actix's 16 KiB
/// default), and above the API's limit both refuse with the same status and code, changing
/// nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_console_edit_takes_the_bodies_the_api_takes() {
    let app = spawn_app().await;
    let author = app.author();
    let id = app.create_document("Big", "small").await.id;
    let edit = |body: String| {
        let path = format!("/console/f/documents/{id}/edit");
        let form = [("title", "Big".to_string()), ("body", body)];
        app.client
            .post(app.url(&path))
            .bearer_auth(&author)
            .form(&form)
            .send()
    };
    let big = "x".repeat(100 * 1024);
    let r = edit(big.clone()).await.unwrap();
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap());
    let doc = read(&app, id).await;
    assert_eq!(doc["body"].as_str().map(str::len), Some(big.len()));
    assert_eq!(doc["version"], 2);

    let huge = "x".repeat(app.settings.server.json_limit_bytes);
    let r = edit(huge.clone()).await.unwrap();
    assert_eq!(r.status(), StatusCode::PAYLOAD_TOO_LARGE);
    let text = r.text().await.unwrap();
    assert!(text.contains("data-code=\"VALIDATION_FAILED\""), "{text}");
    let r = app
        .client
        .put(app.url(&format!("/api/v1/documents/{id}")))
        .bearer_auth(&author)
        .json(&serde_json::json!({"title": "Big", "body": huge}))
        .send()
        .await
        .unwrap();
    expect_error(r, StatusCode::PAYLOAD_TOO_LARGE, "VALIDATION_FAILED").await;
    assert_eq!(read(&app, id).await["version"], 2, "nothing changed");
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_history_page_with_an_absurd_round_count_is_a_normal_page() {
    let app = spawn_app().await;
    let (doc, review) = app.pending_review().await;
    let author = app.author();
    let path = |q: &str| format!("/console/f/documents/{doc}/history?{q}");
    // `rounds` is the number of rounds before the page, only used to number its rows: the
    // largest i64 (once an overflow of `rounds + 20`), the smallest, and a cursor past the
    // end with the largest.
    for query in [
        "rounds=9223372036854775807",
        "rounds=-9223372036854775808",
        "cursor=999999999999999999&rounds=9223372036854775807",
    ] {
        let r = send(&app, Method::GET, &path(query), Some(&author)).await;
        assert_eq!(r.status(), StatusCode::OK, "{query}");
        let body = r.text().await.unwrap();
        let first_page = !query.starts_with("cursor");
        assert_eq!(body.contains(&review), first_page, "{query}: {body}");
    }
    app.finish().await;
}
