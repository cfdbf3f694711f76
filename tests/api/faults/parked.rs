//! Poison rows: a message the broker keeps refusing is parked after `outbox.max_attempts`,
//! holds back its document's later events, shows in the metrics and the admin listing, and
//! an admin retries or skips it (audited). A broker or MongoDB that is down parks nothing.

use std::time::Duration;

use kh_review::web::auth::Role;
use lapin::options::QueueBindOptions;
use lapin::types::FieldTable;
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::app::{spawn_app_with, AppOptions, TestApp};
use crate::support::inspect::{expect_error, poll_until, wait_for};
use crate::support::views::typed_events;
use kh_review_testkit::proxy::Proxy;
use kh_review_testkit::stores::{amqp_url, mongo_url};

pub(crate) const ADMIN: &str = "root";

pub(crate) fn with_max_attempts(n: i32) -> AppOptions {
    AppOptions {
        configure: Some(Box::new(move |s| s.outbox.max_attempts = n)),
        ..Default::default()
    }
}

/// The example: the only queue on the exchange takes `document.approved` alone, so
/// every `document.submitted` comes back unroutable.
pub(crate) async fn route_only_approvals(app: &TestApp) {
    let (queue, exchange) = (&app.shared.queue, &app.shared.exchange);
    let args = FieldTable::default;
    app.amqp
        .queue_unbind(
            queue.as_str().into(),
            exchange.as_str().into(),
            "#".into(),
            args(),
        )
        .await
        .unwrap();
    let bind = QueueBindOptions::default();
    (app.amqp)
        .queue_bind(
            queue.as_str().into(),
            exchange.as_str().into(),
            "document.approved".into(),
            bind,
            args(),
        )
        .await
        .unwrap();
}

/// Every routing key reaches the test's queue again.
pub(crate) async fn route_everything(app: &TestApp) {
    let (queue, exchange) = (&app.shared.queue, &app.shared.exchange);
    let bind = QueueBindOptions::default();
    (app.amqp)
        .queue_bind(
            queue.as_str().into(),
            exchange.as_str().into(),
            "#".into(),
            bind,
            FieldTable::default(),
        )
        .await
        .unwrap();
}

/// A document submitted (its event parked) and then approved; returns (document id, the
/// parked row's id).
pub(crate) async fn parked_submission(app: &TestApp, max_attempts: i32) -> (String, i64) {
    route_only_approvals(app).await;
    let (doc, review) = app.pending_review().await;
    let id = wait_for(
        "the submission to be parked",
        Duration::from_secs(15),
        || async {
            sqlx::query_scalar::<_, i64>(
                "SELECT id FROM outbox WHERE document_id = $1::uuid \
             AND event_type = 'document.submitted' AND parked_at IS NOT NULL",
            )
            .bind(&doc)
            .fetch_optional(&app.pg)
            .await
            .unwrap()
        },
    )
    .await;
    let (attempts, error, reason): (i32, String, String) =
        sqlx::query_as("SELECT attempts, last_error, parked_reason FROM outbox WHERE id = $1")
            .bind(id)
            .fetch_one(&app.pg)
            .await
            .unwrap();
    assert_eq!(attempts, max_attempts);
    assert!(error.contains("unroutable"), "{error}");
    assert!(reason.contains("unroutable"), "{reason}");
    let r = app.approve(&review, &app.reviewer()).await;
    assert_eq!(r.status(), StatusCode::OK);
    (doc, id)
}

/// The approval waits behind the parked row: projected (MongoDB has version 3), never
/// tried, never published, while the dispatcher runs a dozen publish passes.
pub(crate) async fn assert_approval_held_back(app: &TestApp, doc: &str) {
    wait_for(
        "the approval's projection",
        Duration::from_secs(10),
        || async {
            app.mongo_doc(doc)
                .await
                .filter(|d| d.get_i64("version") == Ok(3))
        },
    )
    .await;
    let published = poll_until(Duration::from_millis(1200), || async {
        let events = app.take_events().await;
        (!events.is_empty()).then_some(events)
    });
    assert!(published.await.is_none(), "nothing may pass the parked row");
    let (done, attempts): (bool, i32) = sqlx::query_as(
        "SELECT done_at IS NOT NULL, attempts FROM outbox \
         WHERE document_id = $1::uuid AND event_type = 'document.approved'",
    )
    .bind(doc)
    .fetch_one(&app.pg)
    .await
    .unwrap();
    assert_eq!((done, attempts), (false, 0), "the approval is held back");
}

pub(crate) async fn metric(app: &TestApp, name: &str) -> f64 {
    let text = app.client.get(app.url("/metrics")).send().await.unwrap();
    let text = text.text().await.unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("{name} in /metrics"))
}

pub(crate) async fn parked_list(app: &TestApp) -> Vec<Value> {
    let admin = app.token(ADMIN, &[Role::Admin]);
    let r = app.get("/api/v1/admin/outbox?state=parked", &admin).await;
    assert_eq!(r.status(), StatusCode::OK);
    let page: Value = r.json().await.unwrap();
    assert_eq!(page["next_cursor"], Value::Null);
    page["items"].as_array().unwrap().clone()
}

pub(crate) async fn act(app: &TestApp, id: i64, action: &str, token: &str) -> reqwest::Response {
    app.post(
        &format!("/api/v1/admin/outbox/{id}/{action}"),
        token,
        json!({}),
    )
    .await
}

/// (action, actor, attempts found) of every audit row of outbox row `id`.
pub(crate) async fn audit(app: &TestApp, id: i64) -> Vec<(String, String, i32)> {
    sqlx::query_as(
        "SELECT action, actor_id, attempts FROM outbox_admin_actions WHERE outbox_id = $1 ORDER BY id",
    )
    .bind(id)
    .fetch_all(&app.pg)
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unroutable_event_is_parked_holds_its_document_back_and_skip_lets_the_rest_go() {
    let app = spawn_app_with(with_max_attempts(3)).await;
    let (doc, id) = parked_submission(&app, 3).await;
    assert_approval_held_back(&app, &doc).await;
    assert_eq!(metric(&app, "kh_outbox_parked").await, 1.0);
    assert!(metric(&app, "kh_outbox_parked_oldest_age_seconds").await > 0.0);
    let items = parked_list(&app).await;
    assert_eq!(items.len(), 1, "{items:?}");
    let row = &items[0];
    assert_eq!(row["id"], id);
    assert_eq!(row["document_id"], doc.as_str());
    assert_eq!(row["event_type"], "document.submitted");
    assert_eq!(row["state"], "parked");
    assert_eq!(row["attempts"], 3);
    assert!(row["last_error"].as_str().unwrap().contains("unroutable"));
    assert!(row["parked_reason"]
        .as_str()
        .unwrap()
        .contains("refused 3 times"));
    assert!(row["parked_at"].is_string() && row["created_at"].is_string());

    let r = act(&app, id, "skip", &app.token(ADMIN, &[Role::Admin])).await;
    assert_eq!(r.status(), StatusCode::OK);
    let skipped: Value = r.json().await.unwrap();
    assert_eq!(
        (skipped["id"].as_i64(), &skipped["state"]),
        (Some(id), &json!("skipped"))
    );
    let events = typed_events(&app.wait_events(1, Duration::from_secs(10)).await);
    assert_eq!(events[0].event_type, "document.approved");
    assert_eq!(events[0].document_id.to_string(), doc);
    assert_eq!(audit(&app, id).await, [("skip".into(), ADMIN.into(), 3)]);
    app.outbox_drained(Duration::from_secs(10)).await;
    assert_eq!(metric(&app, "kh_outbox_parked").await, 0.0);
    assert!(parked_list(&app).await.is_empty());
    let again = act(&app, id, "skip", &app.token(ADMIN, &[Role::Admin])).await;
    expect_error(again, StatusCode::CONFLICT, "INVALID_STATE").await;
    assert!(
        app.take_events().await.is_empty(),
        "the skipped event never comes"
    );
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_puts_a_parked_event_back_in_line_and_the_document_s_events_follow_in_order() {
    let app = spawn_app_with(with_max_attempts(2)).await;
    let (doc, id) = parked_submission(&app, 2).await;
    assert_approval_held_back(&app, &doc).await;
    route_everything(&app).await;
    let r = act(&app, id, "retry", &app.token(ADMIN, &[Role::Admin])).await;
    assert_eq!(r.status(), StatusCode::OK);
    let row: Value = r.json().await.unwrap();
    assert_eq!(
        (&row["state"], &row["attempts"]),
        (&json!("pending"), &json!(0))
    );
    assert_eq!(row["parked_at"], Value::Null);
    let events = typed_events(&app.wait_events(2, Duration::from_secs(10)).await);
    let kinds: Vec<(&str, i64)> = events
        .iter()
        .map(|e| (e.event_type.as_str(), e.document_version))
        .collect();
    assert_eq!(kinds, [("document.submitted", 2), ("document.approved", 3)]);
    assert_eq!(audit(&app, id).await, [("retry".into(), ADMIN.into(), 2)]);
    app.outbox_drained(Duration::from_secs(10)).await;
    app.finish().await;
}

/// A row parked again after a retry that still fails: the retry really attempted it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_that_is_refused_again_parks_the_row_again() {
    let app = spawn_app_with(with_max_attempts(2)).await;
    let (doc, id) = parked_submission(&app, 2).await;
    let admin = app.token(ADMIN, &[Role::Admin]);
    assert_eq!(
        act(&app, id, "retry", &admin).await.status(),
        StatusCode::OK
    );
    wait_for(
        "the row to be parked again",
        Duration::from_secs(10),
        || async {
            let items = parked_list(&app).await;
            items.first().filter(|r| r["attempts"] == 2).map(|_| ())
        },
    )
    .await;
    assert_approval_held_back(&app, &doc).await;
    assert_eq!(act(&app, id, "skip", &admin).await.status(), StatusCode::OK);
    let actions: Vec<String> = audit(&app, id).await.into_iter().map(|a| a.0).collect();
    assert_eq!(actions, ["retry", "skip"]);
    app.wait_events(1, Duration::from_secs(10)).await;
    app.finish().await;
}

/// A dependency that is down costs no attempt: with `max_attempts = 1`, any counted
/// failure would park a row at once.
async fn a_dependency_down_parks_nothing(which: &str) {
    let upstream = if which == "rabbitmq" {
        amqp_url()
    } else {
        mongo_url()
    };
    let (proxy, url) = Proxy::in_front_of(&upstream).await;
    proxy.cut();
    let mut opts = with_max_attempts(1);
    let failures = if which == "rabbitmq" {
        opts.amqp_url = Some(url);
        "kh_publish_failures_total"
    } else {
        opts.mongo_url = Some(url);
        "kh_projection_failures_total"
    };
    let app = spawn_app_with(opts).await;
    app.approved_review().await;
    let sql = "SELECT count(*) FROM outbox WHERE parked_at IS NOT NULL OR attempts > 0";
    // Six failed deliveries, or (what must not happen) a counted attempt, which would end
    // the failures.
    let counted = wait_for("six failed deliveries", Duration::from_secs(20), || async {
        let n = app.count(sql).await;
        (n > 0 || metric(&app, failures).await >= 6.0).then_some(n)
    })
    .await;
    assert_eq!(
        counted, 0,
        "{which} down: no attempt counted, nothing parked"
    );
    assert_eq!(metric(&app, "kh_outbox_parked").await, 0.0);
    assert!(parked_list(&app).await.is_empty());
    proxy.restore();
    app.wait_events(2, Duration::from_secs(30)).await;
    app.outbox_drained(Duration::from_secs(10)).await;
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_that_is_down_never_parks_anything() {
    a_dependency_down_parks_nothing("rabbitmq").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mongodb_that_is_down_never_parks_anything() {
    a_dependency_down_parks_nothing("mongodb").await;
}

/// An event body over `amqp.max_message_bytes` is refused before it is sent, and parked
/// as too large; the document's earlier event went out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_too_large_to_send_is_parked() {
    let app = spawn_app_with(AppOptions {
        configure: Some(Box::new(|s| {
            s.outbox.max_attempts = 2;
            s.amqp.max_message_bytes = 1000;
        })),
        ..Default::default()
    })
    .await;
    let (_, review) = app.pending_review().await;
    let comment = "long ".repeat(300);
    let path = format!("/api/v1/reviews/{review}/approve");
    let r = app
        .post(&path, &app.reviewer(), json!({ "comment": comment }))
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    let sql = "SELECT id, last_error FROM outbox \
               WHERE event_type = 'document.approved' AND parked_at IS NOT NULL";
    let (id, error): (i64, String) = wait_for(
        "the approval to be parked",
        Duration::from_secs(10),
        || async { sqlx::query_as(sql).fetch_optional(&app.pg).await.unwrap() },
    )
    .await;
    assert!(error.contains("too large"), "{error}");
    let events = typed_events(&app.wait_events(1, Duration::from_secs(10)).await);
    assert_eq!(events[0].event_type, "document.submitted");
    let r = act(&app, id, "skip", &app.token(ADMIN, &[Role::Admin])).await;
    assert_eq!(r.status(), StatusCode::OK);
    app.outbox_drained(Duration::from_secs(10)).await;
    assert!(
        app.take_events().await.is_empty(),
        "the skipped event never comes"
    );
    app.finish().await;
}
