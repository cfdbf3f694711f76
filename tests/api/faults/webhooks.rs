//! Webhook deliveries end to end, to a receiver in Python that verifies each with the
//! reference `standardwebhooks` package: signed with the endpoint's secret, with both
//! secrets through a rotation; retried on the schedule, a `Retry-After` honoured; a 410
//! disables the endpoint (one `webhook.endpoint_disabled` on the bus); a receiver killed
//! mid-delivery gets the event again; a name that resolves to 127.0.0.1 is refused when
//! connecting.

use std::time::Duration;

use serde_json::Value;

use crate::support::app::{spawn_app_with, AppOptions, TestApp};
use crate::support::inspect::wait_for;
use crate::support::receiver::Receiver;

/// An app whose deliverer polls often, retries after 1 s, times out after `timeout_ms`,
/// and may reach 127.0.0.1 (where the test's receivers are) unless `guarded`.
pub(crate) async fn delivering(timeout_ms: u64, guarded: bool) -> TestApp {
    spawn_app_with(AppOptions {
        configure: Some(Box::new(move |s| {
            s.webhooks.poll = Duration::from_millis(50);
            s.webhooks.timeout = Duration::from_millis(timeout_ms);
            s.webhooks.retry_schedule_secs = vec![1, 1, 1, 1];
            s.webhooks.per_endpoint_concurrency = 2;
            if !guarded {
                s.webhooks.allowed_ranges = vec!["127.0.0.1/32".into()];
            }
        })),
        ..Default::default()
    })
    .await
}

impl TestApp {
    /// The endpoint `id`'s delivery log, newest first.
    async fn deliveries(&self, id: &str) -> Vec<Value> {
        let path = format!("/api/v1/spaces/default/webhooks/{id}/deliveries");
        let page: Value = self.get(&path, &self.admin()).await.json().await.unwrap();
        page["items"].as_array().unwrap().clone()
    }

    /// Waits until the endpoint `id`'s delivery of `event_type` satisfies `done`.
    async fn delivery_when(
        &self,
        id: &str,
        event_type: &str,
        done: impl Fn(&Value) -> bool,
    ) -> Value {
        wait_for(
            &format!("the {event_type} delivery"),
            Duration::from_secs(30),
            || async {
                let log = self.deliveries(id).await;
                log.into_iter()
                    .find(|d| d["event_type"] == event_type && done(d))
            },
        )
        .await
    }
}

fn verified(r: &Value) -> Vec<bool> {
    serde_json::from_value(r["verified"].clone()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deliveries_verify_with_the_reference_library_through_a_secret_rotation() {
    let app = delivering(5000, false).await;
    let first = Receiver::start(&["whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"], "200", 0).await;
    let made = app
        .register_webhook(
            &first.url("/kh"),
            &["document.submitted", "document.approved"],
        )
        .await;
    let (id, old) = (
        made["id"].as_str().unwrap().to_string(),
        made["secret"].as_str().unwrap().to_string(),
    );
    first.kill().await;
    let receiver = Receiver::start(
        &[&old, "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"],
        "200",
        portof(&made),
    )
    .await;
    let (doc, review) = app.pending_review().await;
    let got = receiver.wait_for(1).await;
    let r = &got[0].record;
    assert_eq!(
        verified(r),
        [true, false],
        "signed with its secret alone: {r}"
    );
    assert_eq!(r["body"]["event_type"], "document.submitted");
    assert_eq!(r["body"]["document_id"], doc.as_str());
    assert_eq!(
        r["webhook_id"], r["body"]["event_id"],
        "webhook-id is the event's id"
    );
    app.delivery_when(&id, "document.submitted", |d| d["state"] == "delivered")
        .await;

    // Rotated: both secrets sign the next delivery, and either verifies it.
    let rotated: Value = app
        .post(
            &format!("/api/v1/spaces/default/webhooks/{id}/rotate"),
            &app.admin(),
            serde_json::json!({}),
        )
        .await
        .json()
        .await
        .unwrap();
    let new = rotated["secret"].as_str().unwrap().to_string();
    let port = receiver.port;
    receiver.kill().await;
    let receiver = Receiver::start(&[&old, &new], "200", port).await;
    assert_eq!(app.approve(&review, &app.reviewer()).await.status(), 200);
    let got = receiver.wait_for(1).await;
    let r = &got[0].record;
    assert_eq!(r["body"]["event_type"], "document.approved");
    assert_eq!(
        verified(r),
        [true, true],
        "the old and the new secret both verify: {r}"
    );
    assert_eq!(r["signatures"].as_str().unwrap().split(' ').count(), 2);
    app.delivery_when(&id, "document.approved", |d| {
        d["state"] == "delivered" && d["attempts"] == 1
    })
    .await;
    app.stop().await;
}

/// The port of a registered endpoint's URL.
fn portof(made: &Value) -> u16 {
    let url = made["url"].as_str().unwrap();
    let rest = url.rsplit_once(':').unwrap().1;
    rest.split('/').next().unwrap().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_are_retried_a_retry_after_honoured_and_a_410_disables_the_endpoint() {
    let app = delivering(5000, false).await;
    let receiver = Receiver::start(
        &["whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"],
        "500,429:3,200",
        0,
    )
    .await;
    let made = app
        .register_webhook(&receiver.url("/kh"), &["document.submitted"])
        .await;
    let id = made["id"].as_str().unwrap().to_string();
    app.pending_review().await;
    let got = receiver.wait_for(3).await;
    assert_eq!(
        got.iter()
            .map(|g| g.record["reply"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["500", "429:3", "200"]
    );
    assert!(
        got.iter()
            .all(|g| g.record["webhook_id"] == got[0].record["webhook_id"]),
        "the same event each time"
    );
    let waited = got[2].at - got[1].at;
    assert!(
        waited >= Duration::from_millis(2900),
        "Retry-After: 3 honoured over the schedule's 1 s: {waited:?}"
    );
    let d = app
        .delivery_when(&id, "document.submitted", |d| d["state"] == "delivered")
        .await;
    assert_eq!(
        (d["attempts"].clone(), d["last_status"].clone()),
        (3.into(), 200.into()),
        "{d}"
    );
    let metrics = app.get("/metrics", "").await.text().await.unwrap();
    for line in [r#"{outcome="retry"} 2"#, r#"{outcome="delivered"} 1"#] {
        assert!(
            metrics.contains(&format!("kh_webhook_attempts_total{line}")),
            "{line}"
        );
    }

    gone_disables(&app).await;
    app.stop().await;
}

/// A receiver that answers 410 Gone: the delivery fails, the endpoint is disabled, once;
/// the delivery is re-sent from the log.
async fn gone_disables(app: &TestApp) {
    let gone = Receiver::start(&["whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"], "410", 0).await;
    let made = app
        .register_webhook(&gone.url("/gone"), &["document.submitted"])
        .await;
    let gone_id = made["id"].as_str().unwrap().to_string();
    app.pending_review().await;
    let d = app
        .delivery_when(&gone_id, "document.submitted", |d| d["state"] == "failed")
        .await;
    assert_eq!(
        (d["attempts"].clone(), d["last_status"].clone()),
        (1.into(), 410.into())
    );
    let hook: Value = app
        .get(
            &format!("/api/v1/spaces/default/webhooks/{gone_id}"),
            &app.admin(),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(hook["enabled"], false);
    assert!(
        hook["disabled_reason"].as_str().unwrap().contains("410"),
        "{hook}"
    );
    let event = wait_for(
        "webhook.endpoint_disabled",
        Duration::from_secs(20),
        || async {
            app.take_events()
                .await
                .into_iter()
                .map(|(v, _)| v)
                .find(|v| v["event_type"] == "webhook.endpoint_disabled")
        },
    )
    .await;
    assert_eq!(event["data"]["webhook_id"], gone_id.as_str());
    assert_eq!(event["data"]["space"], "default");
    operator_sees_and_resends(app, &gone_id, d["id"].as_i64().unwrap()).await;
    // Re-sent from the log: pending again, from its first attempt.
    let path = format!(
        "/api/v1/spaces/default/webhooks/{gone_id}/deliveries/{}/resend",
        d["id"]
    );
    let r = app.post(&path, &app.admin(), serde_json::json!({})).await;
    assert_eq!(r.status(), 202);
    let again: Value = r.json().await.unwrap();
    assert_eq!(
        (again["state"].clone(), again["attempts"].clone()),
        ("pending".into(), 0.into())
    );
}

/// The operator's page shows the disabled endpoint and its failed delivery, and its
/// button sends it again.
async fn operator_sees_and_resends(app: &TestApp, webhook: &str, delivery: i64) {
    let page = app.get("/console/f/operator", &app.admin()).await;
    assert_eq!(page.status(), 200);
    let page = page.text().await.unwrap();
    assert!(
        page.contains(&format!(
            r#"data-webhook="{webhook}" data-state="disabled""#
        )),
        "{page}"
    );
    assert!(page.contains(&format!(
        r#"data-delivery="{delivery}" data-state="failed""#
    )));
    assert!(page.contains("the receiver answered 410"), "its last error");
    let button =
        format!("/console/f/spaces/default/webhooks/{webhook}/deliveries/{delivery}/resend");
    assert!(page.contains(&button), "a button to send it again");
    let r = app
        .client
        .post(app.url(&button))
        .bearer_auth(app.admin())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let section = r.text().await.unwrap();
    assert!(
        section.contains("is sent again from its first attempt"),
        "{section}"
    );
    assert!(section.contains(&format!(
        r#"data-delivery="{delivery}" data-state="pending""#
    )));
    let r = app
        .client
        .post(app.url(&button))
        .bearer_auth(app.author())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403, "the platform admin's page");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_killed_mid_delivery_gets_the_event_again() {
    let app = delivering(3000, false).await;
    let hanging = Receiver::start(&["whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"], "hang", 0).await;
    let made = app
        .register_webhook(&hanging.url("/kh"), &["document.submitted"])
        .await;
    let (id, secret) = (
        made["id"].as_str().unwrap().to_string(),
        made["secret"].as_str().unwrap().to_string(),
    );
    app.pending_review().await;
    let first = hanging.wait_for(1).await[0].record.clone();
    let port = hanging.port;
    hanging.kill().await;
    let back = Receiver::start(&[&secret], "200", port).await;
    let again = back.wait_for(1).await[0].record.clone();
    assert_eq!(
        again["webhook_id"], first["webhook_id"],
        "the same event, again"
    );
    assert_eq!(verified(&again), [true]);
    let d = app
        .delivery_when(&id, "document.submitted", |d| d["state"] == "delivered")
        .await;
    assert!(d["attempts"].as_i64().unwrap() >= 2, "{d}");
    app.stop().await;
}

/// A name that resolves to 127.0.0.1 on this machine (its own host name).
async fn loopback_name() -> String {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_string();
    let addrs: Vec<_> = tokio::net::lookup_host((name.as_str(), 0))
        .await
        .unwrap()
        .collect();
    assert!(
        !addrs.is_empty() && addrs.iter().all(|a| a.ip().is_loopback()),
        "this test needs the machine's host name ({name}) to resolve to loopback, as /etc/hosts says on these machines: {addrs:?}"
    );
    name
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_resolving_to_loopback_is_refused_when_connecting() {
    let app = delivering(5000, true).await;
    let receiver = Receiver::start(&["whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"], "200", 0).await;
    let name = loopback_name().await;
    // A name is not judged at registration (it may resolve elsewhere then): when connecting.
    let made = app
        .register_webhook(
            &format!("http://{name}:{}/kh", receiver.port),
            &["document.submitted"],
        )
        .await;
    let id = made["id"].as_str().unwrap().to_string();
    app.pending_review().await;
    let d = app
        .delivery_when(&id, "document.submitted", |d| {
            d["attempts"].as_i64() >= Some(2)
        })
        .await;
    let error = d["last_error"].as_str().unwrap();
    assert!(
        error.contains("127.0.0.1") && error.contains("loopback"),
        "{error}"
    );
    assert_eq!(d["state"], "pending", "retried like any failure");
    assert!(
        receiver.seen().is_empty(),
        "nothing reached the receiver: {:?}",
        receiver.seen()
    );
    app.stop().await;
}
