//! What a load balancer and its clients see when an instance is told to go (SIGTERM to
//! the real binary): `/readyz` 503 `draining` at once, requests in flight and new ones
//! still answered for `shutdown.drain_secs` (each with `Connection: close`), then a clean
//! exit within `shutdown.grace_secs`.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::app::{spawn_app, TestApp};
use crate::support::binary::{listening, serve_binary, KillOnDrop};
use crate::support::inspect::wait_for;
use kh_review::web::test_hooks::PAUSE_BEFORE_COMMIT_HEADER;
use kh_review_testkit::proxy::dead_port;

const DRAIN: Duration = Duration::from_secs(3);
const GRACE: Duration = Duration::from_secs(10);

/// The binary on a port of its own with the drain and grace above, listening and ready.
async fn draining_binary(app: &TestApp) -> (KillOnDrop, String) {
    let port = dead_port();
    let envs = [
        ("APP__SHUTDOWN__DRAIN_SECS", DRAIN.as_secs().to_string()),
        ("APP__SHUTDOWN__GRACE_SECS", GRACE.as_secs().to_string()),
    ];
    let child = serve_binary(app, port, &envs);
    let base = format!("http://127.0.0.1:{port}");
    listening(app, &base).await;
    let ready = app.client.get(format!("{base}/readyz")).send().await;
    assert_eq!(ready.unwrap().status(), StatusCode::OK);
    (child, base)
}

/// What the clients see during the drain: a new document and a new approval answered,
/// each told to close its connection, inside the drain window.
async fn served_during_the_drain(app: &TestApp, base: &str, review: &str, signalled: Instant) {
    let created = app
        .client
        .post(format!("{base}/api/v1/documents"))
        .bearer_auth(app.author())
        .json(&json!({"title": "Written during the drain", "body": "still served"}))
        .send()
        .await
        .expect("a request during the drain is answered");
    assert_eq!(created.status(), StatusCode::CREATED);
    assert_eq!(created.headers()["connection"], "close");
    let approved = app
        .client
        .post(format!("{base}/api/v1/reviews/{review}/approve"))
        .bearer_auth(app.reviewer())
        .json(&json!({}))
        .send()
        .await
        .expect("an approval during the drain is answered");
    assert_eq!(approved.status(), StatusCode::OK);
    assert!(
        signalled.elapsed() < DRAIN,
        "both were answered inside the drain window ({:?})",
        signalled.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_drains_readyz_503_while_requests_are_still_served() {
    let app = spawn_app().await; // for its stores; the binary below shares them
    let (_, in_flight) = app.pending_review().await;
    let (_, during_drain) = app.pending_review().await;
    let (mut child, base) = draining_binary(&app).await;
    // An approval that is still working (2 s before its COMMIT) when the signal lands.
    let slow = app
        .client
        .post(format!("{base}/api/v1/reviews/{in_flight}/approve"))
        .bearer_auth(app.reviewer())
        .header(PAUSE_BEFORE_COMMIT_HEADER, "2000")
        .json(&json!({}))
        .send();
    let slow = tokio::spawn(slow);
    wait_for(
        "the slow approval to hold its lock",
        Duration::from_secs(10),
        || async { (!app.lock_keys_left().await.is_empty()).then_some(()) },
    )
    .await;
    let signalled = Instant::now();
    let pid = child.0.id().to_string();
    let kill = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status();
    assert!(kill.unwrap().success());

    // At once: unready, so the load balancer takes it out of rotation.
    let readyz: Value = wait_for("readyz to say draining", Duration::from_secs(2), || async {
        let r = app.client.get(format!("{base}/readyz")).send().await.ok()?;
        (r.status() == StatusCode::SERVICE_UNAVAILABLE).then_some(())?;
        r.json().await.ok()
    })
    .await;
    assert_eq!(readyz["status"], "draining", "{readyz}");
    served_during_the_drain(&app, &base, &during_drain, signalled).await;
    // The approval that was in flight finishes too.
    let slow = slow
        .await
        .unwrap()
        .expect("the request in flight is answered");
    assert_eq!(slow.status(), StatusCode::OK);

    // Then a clean exit: not before the drain is over, well within the grace.
    let status = child.0.wait().expect("the binary exits");
    let took = signalled.elapsed();
    assert!(status.success(), "clean exit after draining: {status:?}");
    assert!(
        took >= DRAIN,
        "it kept serving for the drain: exited after {took:?}"
    );
    assert!(
        took <= GRACE,
        "gone within the grace: exited after {took:?}"
    );
    let after = app.client.get(format!("{base}/healthz")).send().await;
    assert!(
        after.is_err(),
        "new connections are refused once it has gone"
    );
    let approved = "SELECT count(*) FROM documents WHERE status = 'APPROVED'";
    assert_eq!(app.count(approved).await, 2);
    assert!(app.lock_keys_left().await.is_empty(), "no lock key left");
    app.finish().await;
}
