//! `audit verify` under load and with a store missing: concurrent calls share one scan
//! (one at a time per instance and scope), and with the checkpoint store cut the check
//! still runs and says what it could not check.

use std::time::Duration;

use kh_review::web::auth::Role;
use kh_review::web::test_hooks::PAUSE_BEFORE_SCAN_HEADER;
use kh_review_testkit::proxy::Proxy;
use kh_review_testkit::stores::mongo_url;
use reqwest::StatusCode;
use secrecy::SecretString;
use serde_json::Value;

use crate::faults::parked::ADMIN;
use crate::routes::audit::{chained_rows, verify};
use crate::support::app::{spawn_app, spawn_app_with, AppOptions, TestApp};
use crate::support::inspect::wait_for;

/// `GET /api/v1/admin/audit/verify`, as an admin, the scan it starts (if any) paused for
/// `pause`: the status and the answer.
async fn verify_paused(app: &TestApp, query: &str, pause: Duration) -> (StatusCode, Value) {
    let r = app
        .client
        .get(app.url(&format!("/api/v1/admin/audit/verify{query}")))
        .bearer_auth(app.token(ADMIN, &[Role::Admin]))
        .header(PAUSE_BEFORE_SCAN_HEADER, pause.as_millis().to_string())
        .send()
        .await
        .expect("request sent");
    (r.status(), r.json().await.expect("a JSON answer"))
}

async fn scans(app: &TestApp, scope: &str) -> Option<f64> {
    let line = format!("kh_audit_verify_scans_total{{scope=\"{scope}\"}}");
    app.metric(&line).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_concurrent_verifies_run_one_scan_and_get_its_result() {
    let app = spawn_app().await;
    let (doc, _) = app.pending_review().await;
    app.outbox_drained(Duration::from_secs(15)).await;
    // The first call's scan waits 1.5 s before it reads: the other four arrive meanwhile.
    let pause = Duration::from_millis(1500);
    let calls = (0..5).map(|_| verify_paused(&app, "", pause));
    let answers = futures_util::future::join_all(calls).await;
    for (status, answer) in &answers {
        assert_eq!(*status, StatusCode::OK, "{answer}");
        assert_eq!(
            answer, &answers[0].1,
            "every caller gets the one scan's result"
        );
    }
    let rows = chained_rows(&app).await;
    assert_eq!(answers[0].1["checked"], rows, "{}", answers[0].1);
    assert_eq!(
        scans(&app, "all").await,
        Some(1.0),
        "one scan for five calls"
    );

    // A scan that ended is not reused; a one-document check is a scan of its own.
    let (status, _) = verify_paused(&app, "", Duration::ZERO).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(scans(&app, "all").await, Some(2.0));
    let one = format!("?document_id={doc}");
    let both = futures_util::future::join(
        verify_paused(&app, &one, pause),
        verify_paused(&app, "", pause),
    )
    .await;
    assert_eq!((both.0 .0, both.1 .0), (StatusCode::OK, StatusCode::OK));
    assert_eq!(scans(&app, "document").await, Some(1.0));
    assert_eq!(scans(&app, "all").await, Some(3.0));
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_checkpoint_store_cut_verify_checks_the_rest_and_says_what_it_could_not() {
    let (proxy, url) = Proxy::in_front_of(&mongo_url()).await;
    let app = spawn_app_with(AppOptions {
        configure: Some(Box::new(move |s| {
            s.audit.checkpoint_every = Duration::from_secs(1);
            s.audit.checkpoint_url = Some(SecretString::from(url.clone()));
        })),
        ..Default::default()
    })
    .await;
    let (doc, _) = app.pending_review().await;
    app.outbox_drained(Duration::from_secs(15)).await;
    wait_for(
        "a check against a checkpoint",
        Duration::from_secs(20),
        || async {
            let answer = verify(&app, None).await;
            (answer["checkpoint"]["status"] == "checked").then_some(())
        },
    )
    .await;

    proxy.cut();
    let answer = verify(&app, None).await;
    assert!(answer.get("broken_at").is_none(), "{answer}");
    assert_eq!(answer["checked"], chained_rows(&app).await, "{answer}");
    let checkpoint = &answer["checkpoint"];
    assert_eq!(checkpoint["status"], "unavailable", "{answer}");
    let unchecked = checkpoint["unchecked"].as_str().unwrap_or_default();
    assert!(
        unchecked.contains("were not looked for") && unchecked.contains("did not answer"),
        "{answer}"
    );
    // What the heads show is still found: a tail deleted, its head left as it was.
    sqlx::query("DELETE FROM audit_log WHERE document_id = $1::uuid AND seq = 2")
        .bind(&doc)
        .execute(&app.pg)
        .await
        .unwrap();
    let answer = verify(&app, Some(&doc)).await;
    assert_eq!(answer["broken_at"]["found"], "tail_missing", "{answer}");
    assert_eq!(answer["checkpoint"]["status"], "unavailable", "{answer}");
    app.finish().await;
}
