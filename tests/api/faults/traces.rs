//! Trace context end to end, read back from an OTLP/HTTP receiver of each test's own (the
//! test kit's, which the binaries export to): the HTTP span of a transition and the PRODUCER span of its
//! event are one trace, whose context the message's `traceparent` carries; also when
//! another instance publishes the event after the first was killed after COMMIT, and when
//! an admin retries a parked event. The binaries export; the in-process app only holds the
//! stores and the test's queue (its dispatcher is off, so it publishes nothing).

use std::time::Duration;

use kh_review::web::auth::Role;
use kh_review::web::test_hooks::SKIP_DISPATCH_HEADER;
use kh_review_testkit::otlp::OtlpReceiver;
use kh_review_testkit::proxy::dead_port;
use reqwest::StatusCode;
use serde_json::json;

use super::parked::{route_everything, route_only_approvals, ADMIN};
use crate::support::app::{spawn_app_with, AppOptions, TestApp};
use crate::support::binary::{listening, serve_binary, KillOnDrop};
use crate::support::inspect::wait_for;
use crate::support::traces::{
    exporting, header, ids, messages, new_traceparent, receiver, wait_trace, TraceView,
};

const APPROVE: &str = "POST /api/v1/reviews/{id}/approve";
const WAIT: Duration = Duration::from_secs(20);

/// The stores and the test's queue, with no dispatcher of its own, and the test's receiver;
/// a review pending, its submission already delivered.
async fn stores_only() -> (TestApp, OtlpReceiver, String) {
    let app = spawn_app_with(AppOptions {
        run_dispatcher: false,
        ..Default::default()
    })
    .await;
    let receiver = receiver().await;
    let (_, review) = app.pending_review().await;
    app.outbox_drained(Duration::from_secs(10)).await;
    let _ = app.take_events().await;
    (app, receiver, review)
}

/// A `kh-review serve` exporting to `to` as `service`, with `envs` on top, once it listens.
async fn binary(
    app: &TestApp,
    to: &OtlpReceiver,
    service: &str,
    envs: &[(&str, &str)],
) -> (KillOnDrop, String) {
    let port = dead_port();
    let mut all = exporting(to, service);
    all.extend(envs.iter().map(|(k, v)| (*k, v.to_string())));
    let child = serve_binary(app, port, &all);
    let base = format!("http://127.0.0.1:{port}");
    listening(app, &base).await;
    (child, base)
}

/// Kills `bin` once the outbox is drained: a request's done mark is written in a group a
/// moment after its publish (`outbox.mark_window_ms`), which the trace may show first, and
/// a kill in between would leave the delivered row unmarked for the teardown to find.
async fn kill_when_drained(app: &TestApp, bin: KillOnDrop) {
    app.outbox_drained(WAIT).await;
    drop(bin);
}

async fn approve(app: &TestApp, base: &str, review: &str, headers: &[(&str, &str)]) {
    let mut req = (app.client)
        .post(format!("{base}/api/v1/reviews/{review}/approve"))
        .bearer_auth(app.reviewer())
        .json(&json!({}));
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let r = req.send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap());
}

fn has_http_and_publish(t: &TraceView) -> bool {
    !t.named(APPROVE).is_empty() && !t.of_kind("producer").is_empty()
}

/// The producer span the header names, checked against the messaging conventions.
fn producer(t: &TraceView, app: &TestApp, sent_span: &str, event_id: &str) {
    let p = t.span(sent_span).unwrap_or_else(|| {
        panic!(
            "the header names span {sent_span}, not in the trace:\n{}",
            t.outline()
        )
    });
    assert_eq!(p.kind(), Some("producer"), "{p:?}");
    assert_eq!(p.name, format!("publish {}", app.shared.exchange));
    assert_eq!(p.tag("messaging.system"), Some("rabbitmq"));
    assert_eq!(p.tag("messaging.operation.type"), Some("send"));
    assert_eq!(
        p.tag("messaging.destination.name"),
        Some(app.shared.exchange.as_str())
    );
    assert_eq!(
        p.tag("messaging.rabbitmq.destination.routing_key"),
        Some("document.approved")
    );
    assert_eq!(p.tag("messaging.message.id"), Some(event_id));
    // Its parent is the span that wrote the outbox row, inside the request's transaction.
    let above = t.ancestors(p);
    for name in ["pg.transaction", APPROVE] {
        assert!(
            above.contains(&name),
            "{name} above the publish:\n{}",
            t.outline()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approve_and_the_publish_of_its_event_are_one_trace() {
    let (app, otlp, review) = stores_only().await;
    let (bin, base) = binary(&app, &otlp, "kh-review-a", &[]).await;
    let (tp, trace, caller) = new_traceparent();
    let state = [("traceparent", tp.as_str()), ("tracestate", "caller=1")];
    approve(&app, &base, &review, &state).await;

    let msgs = messages(&app, 1, WAIT).await;
    let (event, props) = &msgs[0];
    let sent = header(props, "traceparent").expect("the event carries a traceparent");
    let (sent_trace, sent_span) = ids(&sent);
    assert_eq!(
        sent_trace, trace,
        "the caller's trace is continued to the consumer"
    );
    assert_eq!(header(props, "tracestate").as_deref(), Some("caller=1"));
    // The spans reach the receiver in batches: every one the test reads is waited for.
    let inner = ["lock.acquire", "pg.transaction", "mongo.project"];
    let t = wait_trace(&otlp, &trace, WAIT, |t| {
        has_http_and_publish(t) && inner.iter().all(|name| !t.named(name).is_empty())
    })
    .await;
    let server = t.named(APPROVE)[0];
    assert_eq!(server.kind(), Some("server"));
    assert_eq!(
        server.parent.as_deref(),
        Some(caller.as_str()),
        "the caller's span"
    );
    assert_eq!(server.service, "kh-review-a");
    producer(&t, &app, &sent_span, event["event_id"].as_str().unwrap());
    kill_when_drained(&app, bin).await;
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_without_a_valid_traceparent_starts_a_trace_of_its_own() {
    let (app, otlp, first) = stores_only().await;
    let (_, second) = app.pending_review().await;
    app.outbox_drained(Duration::from_secs(10)).await;
    let _ = app.take_events().await;
    let (bin, base) = binary(&app, &otlp, "kh-review-a", &[]).await;
    let malformed = "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01";
    for (review, headers) in [
        (&first, vec![]),
        (&second, vec![("traceparent", malformed)]),
    ] {
        approve(&app, &base, review, &headers).await;
        let msgs = messages(&app, 1, WAIT).await;
        let sent = header(&msgs[0].1, "traceparent").expect("a traceparent");
        let (trace, _) = ids(&sent);
        assert_ne!(trace, "4bf92f3577b34da6a3ce929d0e0e4736");
        let t = wait_trace(&otlp, &trace, WAIT, has_http_and_publish).await;
        let server = t.named(APPROVE)[0];
        assert_eq!(server.parent, None, "a new trace's root:\n{}", t.outline());
    }
    kill_when_drained(&app, bin).await;
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_published_by_another_instance_stays_in_the_trace_of_its_approve() {
    let (app, otlp, review) = stores_only().await;
    let no_dispatcher = [
        ("APP__OUTBOX__RUN_DISPATCHER", "false"),
        ("APP__OUTBOX__INLINE_LEASE_MS", "1000"),
    ];
    let (first, base) = binary(&app, &otlp, "kh-review-first", &no_dispatcher).await;
    let (tp, trace, _) = new_traceparent();
    let skip = [("traceparent", tp.as_str()), (SKIP_DISPATCH_HEADER, "true")];
    approve(&app, &base, &review, &skip).await;
    // Its spans are out; then the first instance dies (SIGKILL) with the event undelivered.
    wait_trace(&otlp, &trace, WAIT, |t| !t.named(APPROVE).is_empty()).await;
    drop(first);
    let stored = format!(
        "SELECT count(*) FROM outbox WHERE done_at IS NULL AND traceparent LIKE '00-{trace}-%'"
    );
    assert_eq!(
        app.count(&stored).await,
        1,
        "the row keeps the request's trace"
    );
    assert!(app.take_events().await.is_empty());

    let (second, _) = binary(&app, &otlp, "kh-review-second", &[]).await;
    let msgs = messages(&app, 1, WAIT).await;
    let (event, props) = &msgs[0];
    let (sent_trace, sent_span) = ids(&header(props, "traceparent").unwrap());
    assert_eq!(sent_trace, trace);
    let t = wait_trace(&otlp, &trace, WAIT, has_http_and_publish).await;
    assert_eq!(t.named(APPROVE)[0].service, "kh-review-first");
    let publish = t.span(&sent_span).map(|s| s.service.as_str());
    assert_eq!(publish, Some("kh-review-second"), "{}", t.outline());
    producer(&t, &app, &sent_span, event["event_id"].as_str().unwrap());
    kill_when_drained(&app, second).await;
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parked_event_retried_by_an_admin_keeps_the_trace_of_its_request() {
    let app = spawn_app_with(AppOptions {
        run_dispatcher: false,
        ..Default::default()
    })
    .await;
    let otlp = receiver().await;
    let doc = app.create_document("Traced", "A body.").await.id;
    app.outbox_drained(Duration::from_secs(10)).await;
    route_only_approvals(&app).await;
    let (bin, base) = binary(
        &app,
        &otlp,
        "kh-review-a",
        &[("APP__OUTBOX__MAX_ATTEMPTS", "1")],
    )
    .await;
    let (tp, trace, _) = new_traceparent();
    let r = (app.client)
        .post(format!("{base}/api/v1/documents/{doc}/submit"))
        .bearer_auth(app.author())
        .header("traceparent", &tp)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::CREATED);
    let parked =
        format!("SELECT id FROM outbox WHERE document_id = '{doc}' AND parked_at IS NOT NULL");
    let id = wait_for("the submission to be parked", WAIT, || async {
        sqlx::query_scalar::<_, i64>(sqlx::AssertSqlSafe(parked.clone()))
            .fetch_optional(&app.pg)
            .await
            .unwrap()
    })
    .await;
    route_everything(&app).await;
    let admin = app.token(ADMIN, &[Role::Admin]);
    let r = (app.client)
        .post(format!("{base}/api/v1/admin/outbox/{id}/retry"))
        .bearer_auth(admin)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);

    let msgs = messages(&app, 1, WAIT).await;
    let (sent_trace, sent_span) = ids(&header(&msgs[0].1, "traceparent").unwrap());
    assert_eq!(sent_trace, trace, "the retry sends the submission's trace");
    let t = wait_trace(&otlp, &trace, WAIT, |t| t.of_kind("producer").len() >= 2).await;
    let publishes = t.of_kind("producer");
    let refused: Vec<_> = publishes.iter().filter(|p| p.failed()).collect();
    assert_eq!(
        refused.len(),
        1,
        "the unroutable first try:\n{}",
        t.outline()
    );
    let sent = t.span(&sent_span).expect("the retried publish");
    assert!(!sent.failed());
    assert_eq!(
        sent.parent, refused[0].parent,
        "both continue the row's context"
    );
    kill_when_drained(&app, bin).await;
    app.finish().await;
}
