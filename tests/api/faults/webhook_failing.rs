//! Receivers that fail: an endpoint whose every delivery fails for
//! `webhooks.disable_after_secs` (5 days in production, 2 s here) is disabled by itself
//! (one `webhook.endpoint_disabled` on the bus, no delivery made for it while disabled,
//! enabled again by its admin with its failures forgotten); and a receiver that hangs holds
//! no more connections than the cap.

use std::time::Duration;

use serde_json::{json, Value};

use super::webhooks::delivering;
use crate::support::app::{spawn_app_with, AppOptions};
use crate::support::inspect::wait_for;
use crate::support::receiver::Receiver;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endpoint_failing_for_its_whole_allowance_is_disabled_once() {
    let app = spawn_app_with(AppOptions {
        configure: Some(Box::new(|s| {
            s.webhooks.poll = Duration::from_millis(50);
            s.webhooks.retry_schedule_secs = vec![1; 10];
            s.webhooks.disable_after = Duration::from_secs(2);
            s.webhooks.allowed_ranges = vec!["127.0.0.1/32".into()];
        })),
        ..Default::default()
    })
    .await;
    let failing = Receiver::start(&["whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"], "500", 0).await;
    let made = app
        .register_webhook(&failing.url("/kh"), &["document.submitted"])
        .await;
    let id = made["id"].as_str().unwrap().to_string();
    let one = format!("/api/v1/spaces/default/webhooks/{id}");
    app.pending_review().await;
    let hook = wait_for("the endpoint disabled", Duration::from_secs(30), || async {
        let hook: Value = app.get(&one, &app.admin()).await.json().await.unwrap();
        (hook["enabled"] == false).then_some(hook)
    })
    .await;
    let reason = hook["disabled_reason"].as_str().unwrap();
    assert_eq!(reason, "every delivery failed for 2 s");
    assert!(
        failing.seen().len() >= 3,
        "it was tried {} times",
        failing.seen().len()
    );
    let events = wait_for(
        "webhook.endpoint_disabled",
        Duration::from_secs(20),
        || async {
            let all: Vec<Value> = app
                .take_events()
                .await
                .into_iter()
                .map(|(v, _)| v)
                .collect();
            let disabled: Vec<Value> = all
                .into_iter()
                .filter(|v| v["event_type"] == "webhook.endpoint_disabled")
                .collect();
            (!disabled.is_empty()).then_some(disabled)
        },
    )
    .await;
    assert_eq!(events.len(), 1, "once: {events:?}");
    assert_eq!(events[0]["data"]["reason"], reason);

    // While disabled, its space's events are not queued for it.
    app.pending_review().await;
    let queued = "SELECT count(*) FROM webhook_deliveries";
    assert_eq!(app.count(queued).await, 1, "only the first event's");
    let r = app
        .patch(&one, &app.admin(), json!({"enabled": true}))
        .await;
    let on: Value = r.json().await.unwrap();
    assert_eq!(
        (on["enabled"].clone(), on["failing_since"].clone()),
        (json!(true), Value::Null)
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_receiver_holds_no_more_connections_than_the_cap() {
    let timeout = Duration::from_secs(3);
    let app = delivering(timeout.as_millis() as u64, false).await;
    let hanging = Receiver::start(&["whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"], "hang", 0).await;
    app.register_webhook(&hanging.url("/kh"), &["document.submitted"])
        .await;
    for _ in 0..5 {
        app.pending_review().await;
    }
    // The cap is 2: the third request waits for a slot, which only the timeout of one of
    // the first two frees.
    let got = hanging.wait_for(3).await;
    let waited = got[2].at - got[1].at;
    assert!(
        waited >= timeout - Duration::from_millis(500),
        "the third request came {waited:?} after the second, while two hung"
    );
    let in_flight = app
        .count("SELECT count(*) FROM webhook_deliveries WHERE claimed_until > now()")
        .await;
    assert!(in_flight <= 2, "{in_flight} in flight to one endpoint");
    app.stop().await;
}
