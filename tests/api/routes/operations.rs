//! OpenAPI, metrics and graceful shutdown.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::Value;

use crate::support::app::{spawn_app, TestApp};
use crate::support::binary::{listening, serve_binary};
use crate::support::inspect::{expect_error, redis_cmd, wait_for};
use kh_review_testkit::proxy::dead_port;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openapi_description_matches_the_routes_served() {
    let app = spawn_app().await;
    let spec: Value = app.public_json("/api/v1/openapi.json").await;
    let root: Value = app.public_json("/openapi.json").await;
    assert_eq!(spec, root);
    assert!(spec["openapi"].as_str().unwrap().starts_with("3."));
    let mut documented = BTreeSet::new();
    for (path, item) in spec["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            documented.insert((method.to_string(), path.to_string()));
        }
    }
    let served: BTreeSet<(String, String)> = kh_review::http::ROUTES
        .iter()
        .filter(|(_, p)| *p != "/api/v1/openapi.json") // the same document at a second address
        .map(|(m, p)| (m.to_string(), p.to_string()))
        .collect();
    assert_eq!(
        documented, served,
        "every served route is documented, and only those"
    );
    every_route_answers(&app, &served).await;
    // Bearer auth, the error envelope and every error code are described.
    assert_eq!(
        spec["components"]["securitySchemes"]["bearer"]["scheme"],
        "bearer"
    );
    let codes: Vec<&str> = spec["components"]["schemas"]["ErrorCode"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    for code in [
        "LOCK_NOT_ACQUIRED",
        "INVALID_STATE",
        "LOCK_LOST",
        "NOT_FOUND",
        "VALIDATION_FAILED",
        "UNAUTHORIZED",
        "FORBIDDEN",
        "SELF_REVIEW_FORBIDDEN",
        "IDEMPOTENCY_KEY_REUSED",
        "IDEMPOTENCY_IN_FLIGHT",
        "DEPENDENCY_UNAVAILABLE",
        "INTERNAL",
        "METHOD_NOT_ALLOWED",
    ] {
        assert!(
            codes.contains(&code),
            "{code} missing from the ErrorCode schema"
        );
    }
    let docs = app.client.get(app.url("/docs")).send().await.unwrap();
    assert_eq!(docs.status(), StatusCode::OK);
    assert!(docs.text().await.unwrap().contains("/openapi.json"));
    app.finish().await;
}

/// Every documented route answers (not the catch-all 404 of an unknown route).
async fn every_route_answers(app: &TestApp, served: &BTreeSet<(String, String)>) {
    for (method, path) in served {
        let id = uuid::Uuid::new_v4().to_string();
        let url = app.url(&path.replace("{id}", &id).replace("{name}", "fuzz"));
        let r = app
            .client
            .request(method.to_uppercase().parse().unwrap(), url)
            .send()
            .await
            .unwrap();
        if r.status() == StatusCode::NOT_FOUND {
            let v: Value = r.json().await.unwrap();
            assert!(
                !v["message"].as_str().unwrap().starts_with("no route"),
                "{method} {path} is not served"
            );
        }
    }
}

/// Every route that takes a body refuses one in another content type (415) and one over the
/// size limit (413), and documents both (the fuzzer found the 415s undocumented).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_bodies_get_statuses_their_operations_document() {
    let app = spawn_app().await;
    let spec: Value = app.public_json("/openapi.json").await;
    let admin = app.token("fuzz-admin", &[kh_review::web::auth::Role::Admin]);
    let too_large = "x".repeat(app.settings.server.json_limit_bytes + 1);
    // The operations that read a body: every POST, PUT and PATCH (the admin's outbox
    // actions and submit read one only for the Idempotency-Key fingerprint, before the
    // path's id). Taking an edit lease, rotating a webhook's secret and re-sending a
    // delivery read none: their POSTs have no body to refuse.
    let bodyless = ["/lease", "/rotate", "/resend"];
    let bodies: Vec<_> = kh_review::http::ROUTES
        .iter()
        .filter(|(m, p)| {
            matches!(*m, "post" | "put" | "patch") && !bodyless.iter().any(|b| p.ends_with(b))
        })
        .collect();
    assert_eq!(
        bodies.len(),
        18,
        "POST and PUT /documents, submit, withdraw, archive, comment, approve, reject, claim, retry, skip, PUT policy, POST replays, POST spaces, PATCH space, PUT member, POST and PATCH webhook"
    );
    for (method, path) in bodies {
        let id = uuid::Uuid::new_v4().to_string();
        let path_of = path.replace("{id}", &id).replace("{name}", "fuzz");
        let url = app.url(
            &path_of
                .replace("{key}", "default")
                .replace("{subject}", "user:fuzz")
                .replace("{webhook_id}", &id),
        );
        for (content_type, body, status) in [
            (
                "text/plain",
                "{}".to_string(),
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ),
            (
                "application/json",
                too_large.clone(),
                StatusCode::PAYLOAD_TOO_LARGE,
            ),
        ] {
            let r = app
                .client
                .request(method.to_uppercase().parse().unwrap(), &url)
                .bearer_auth(&admin)
                .header("content-type", content_type)
                .body(body)
                .send()
                .await
                .unwrap();
            expect_error(r, status, "VALIDATION_FAILED").await;
            let documented = &spec["paths"][path][method]["responses"][status.as_str()];
            assert!(
                documented["content"]["application/json"].is_object(),
                "{method} {path} answers {status} but does not document it"
            );
        }
    }
    app.finish().await;
}

fn metric(text: &str, line_start: &str) -> f64 {
    text.lines()
        .find(|l| l.starts_with(line_start))
        .unwrap_or_else(|| panic!("no metric line starting with {line_start}"))
        .rsplit(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_requests_locks_transitions_and_the_outbox() {
    let app = spawn_app().await;
    let (_, review_id) = app.pending_review().await;
    let key = app.lock_key_review(&review_id);
    redis_cmd(&app.redis, &["SET", &key, "x", "PX", "60000"]).await;
    assert_eq!(
        app.approve(&review_id, &app.reviewer()).await.status(),
        StatusCode::CONFLICT
    );
    redis_cmd(&app.redis, &["DEL", &key]).await;
    assert_eq!(
        app.approve(&review_id, &app.reviewer()).await.status(),
        StatusCode::OK
    );
    app.outbox_drained(Duration::from_secs(10)).await;
    let r = app.client.get(app.url("/metrics")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let text = r.text().await.unwrap();
    assert_eq!(
        metric(&text, "http_requests_total{method=\"POST\",route=\"/api/v1/reviews/{id}/approve\",status=\"409\"}"),
        1.0
    );
    assert_eq!(
        metric(&text, "http_requests_total{method=\"POST\",route=\"/api/v1/reviews/{id}/approve\",status=\"200\"}"),
        1.0
    );
    assert_eq!(
        metric(&text, "kh_lock_acquisitions_total{outcome=\"acquired\"}"),
        2.0
    );
    assert_eq!(
        metric(&text, "kh_lock_acquisitions_total{outcome=\"contended\"}"),
        1.0
    );
    assert_eq!(metric(&text, "kh_transitions_total{type=\"approve\"}"), 1.0);
    assert_eq!(metric(&text, "kh_transitions_total{type=\"submit\"}"), 1.0);
    assert_eq!(metric(&text, "kh_events_published_total"), 2.0);
    assert_eq!(metric(&text, "kh_outbox_backlog"), 0.0);
    assert_eq!(metric(&text, "kh_outbox_parked"), 0.0);
    assert_eq!(metric(&text, "kh_outbox_parked_oldest_age_seconds"), 0.0);
    assert_eq!(metric(&text, "kh_redis_circuit_breaker_state"), 0.0);
    for name in [
        "http_request_duration_seconds_bucket",
        "kh_lock_acquire_duration_seconds_bucket",
        "kh_lock_renewals_total",
        "kh_lock_renewal_retries_total",
        "kh_lock_release_retries_total",
        "kh_lock_leases_lost_total",
        "kh_outbox_oldest_unsent_age_seconds",
        "kh_projection_failures_total",
        "kh_publish_failures_total",
    ] {
        assert!(text.contains(name), "{name} missing");
    }
    app.finish().await;
}

/// SIGTERM to the real binary under load: every request in flight gets its answer, and no
/// lock key is left behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_mid_load_drains_without_resets_or_leftover_locks() {
    let app = spawn_app().await; // for its stores; the binary below shares them
    let port = dead_port();
    let mut reviews = Vec::new();
    for _ in 0..10 {
        reviews.push(app.pending_review().await.1);
    }
    let mut child = serve_binary(&app, port, &[]);
    let base = format!("http://127.0.0.1:{port}");
    listening(&app, &base).await;
    // Slow approvals (each pauses 2 s before COMMIT), all in flight when SIGTERM lands.
    let calls = reviews.iter().map(|review_id| {
        let req = app
            .client
            .post(format!("{base}/api/v1/reviews/{review_id}/approve"))
            .bearer_auth(app.reviewer())
            .header(
                kh_review::web::test_hooks::PAUSE_BEFORE_COMMIT_HEADER,
                "2000",
            )
            .json(&serde_json::json!({}));
        async move { req.send().await }
    });
    let load = futures_util::future::join_all(calls);
    let signal = async {
        wait_for(
            "every request to hold its lock",
            Duration::from_secs(10),
            || async { (app.lock_keys_left().await.len() == reviews.len()).then_some(()) },
        )
        .await;
        let sent = Instant::now();
        let rc = std::process::Command::new("kill")
            .args(["-TERM", &child.0.id().to_string()])
            .status()
            .unwrap();
        assert!(rc.success());
        sent
    };
    let (results, _) = tokio::join!(load, signal);
    for r in results {
        let r = r.expect("no request got a reset connection");
        assert_eq!(r.status(), StatusCode::OK);
    }
    let status = child.0.wait().expect("the binary exits");
    assert!(status.success(), "clean exit after draining: {status:?}");
    assert!(
        app.lock_keys_left().await.is_empty(),
        "no lock key left behind"
    );
    assert_eq!(
        app.count("SELECT count(*) FROM documents WHERE status = 'APPROVED'")
            .await,
        10
    );
    // New connections are refused once it has stopped.
    assert!(app
        .client
        .get(format!("{base}/healthz"))
        .send()
        .await
        .is_err());
    app.finish().await;
}
