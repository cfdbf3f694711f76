//! `/api/v1/spaces/{key}/webhooks`: a space admin registers an endpoint (its secret shown
//! once), lists, disables, rotates and removes it; a URL inside the service's network, a
//! scheme other than http(s), an unknown event type are 422 and register nothing; a member
//! without space_admin is 403, a caller with no role 404; the 21st endpoint is 409.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::app::{spawn_app, TestApp};
use crate::support::inspect::expect_error;

const HOOKS: &str = "/api/v1/spaces/default/webhooks";

impl TestApp {
    /// Registers `url` for `types` in the default space as the platform admin: the answer.
    pub async fn register_webhook(&self, url: &str, types: &[&str]) -> Value {
        let r = self
            .post(
                HOOKS,
                &self.admin(),
                json!({"url": url, "event_types": types}),
            )
            .await;
        assert_eq!(
            r.status(),
            StatusCode::CREATED,
            "{}",
            r.text().await.unwrap()
        );
        r.json().await.unwrap()
    }

    async fn webhook_rows(&self) -> i64 {
        self.count("SELECT count(*) FROM webhooks").await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_space_admin_registers_lists_rotates_disables_and_removes_an_endpoint() {
    let app = spawn_app().await;
    let made = app
        .register_webhook(
            "https://hooks.example.com/kh",
            &["document.approved", "document.expired", "document.approved"],
        )
        .await;
    let secret = made["secret"].as_str().unwrap().to_string();
    assert!(secret.starts_with("whsec_"), "{made}");
    assert_eq!(
        made["event_types"],
        json!(["document.approved", "document.expired"]),
        "sorted, once each"
    );
    assert_eq!(made["enabled"], true);
    let id = made["id"].as_str().unwrap().to_string();
    let one = format!("{HOOKS}/{id}");

    let list: Value = app.get(HOOKS, &app.admin()).await.json().await.unwrap();
    assert_eq!(list["items"].as_array().unwrap().len(), 1);
    assert!(
        list["items"][0].get("secret").is_none(),
        "never listed: {list}"
    );
    let got: Value = app.get(&one, &app.admin()).await.json().await.unwrap();
    assert!(got.get("secret").is_none());
    assert_eq!(got["url"], "https://hooks.example.com/kh");

    rotates(&app, &one, &secret).await;

    let off: Value = app
        .patch(&one, &app.admin(), json!({"enabled": false}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(off["enabled"], false);
    assert_eq!(off["disabled_reason"], "disabled by root");
    let on: Value = app
        .patch(&one, &app.admin(), json!({"enabled": true}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        (on["enabled"].clone(), on["disabled_reason"].clone()),
        (json!(true), Value::Null)
    );

    let log: Value = app
        .get(&format!("{one}/deliveries"), &app.admin())
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(log["items"], json!([]), "nothing happened in the space yet");

    let r = app.delete(&one, &app.admin()).await;
    assert_eq!(r.status(), StatusCode::OK);
    expect_error(
        app.get(&one, &app.admin()).await,
        StatusCode::NOT_FOUND,
        "NOT_FOUND",
    )
    .await;
    assert_eq!(app.webhook_rows().await, 0);
    chained(&app, &id).await;
    app.stop().await;
}

/// The space's chain holds each change of the endpoint `id`, by whom, with its URL; and
/// verifies.
async fn chained(app: &TestApp, id: &str) {
    let actions: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT action, actor_id, name FROM space_audit_log \
         WHERE space_id = 'default' AND subject = $1 ORDER BY seq",
    )
    .bind(format!("webhook:{id}"))
    .fetch_all(&app.pg)
    .await
    .unwrap();
    let names: Vec<&str> = actions.iter().map(|(a, _, _)| a.as_str()).collect();
    let want = [
        "webhook.created",
        "webhook.rotated",
        "webhook.disabled",
        "webhook.enabled",
        "webhook.removed",
    ];
    assert_eq!(names, want);
    assert!(actions
        .iter()
        .all(|(_, by, url)| by == "root" && url == "https://hooks.example.com/kh"));
    let answer = crate::routes::audit::verify(app, None).await;
    assert!(
        answer.get("broken_at").is_none(),
        "the chain holds: {answer}"
    );
}

/// Rotates the secret of the endpoint at `one`, whose secret was `secret`.
async fn rotates(app: &TestApp, one: &str, secret: &str) {
    let rotated: Value = app
        .post(&format!("{one}/rotate"), &app.admin(), json!({}))
        .await
        .json()
        .await
        .unwrap();
    let new_secret = rotated["secret"].as_str().unwrap();
    assert!(
        new_secret.starts_with("whsec_") && new_secret != secret,
        "{rotated}"
    );
    assert!(
        rotated["previous_secret_until"].is_string(),
        "the old secret signs a while: {rotated}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_endpoints_are_refused_with_the_field_and_register_nothing() {
    let app = spawn_app().await;
    let admin = app.admin();
    let bad = [
        (
            json!({"url": "https://127.0.0.1/x", "event_types": ["document.approved"]}),
            "loopback",
        ),
        (
            json!({"url": "https://[::ffff:10.0.0.1]/x", "event_types": ["document.approved"]}),
            "private",
        ),
        (
            json!({"url": "https://169.254.169.254/latest", "event_types": ["document.approved"]}),
            "link-local",
        ),
        (
            json!({"url": "https://localhost/x", "event_types": ["document.approved"]}),
            "url",
        ),
        (
            json!({"url": "ftp://hooks.example.com/x", "event_types": ["document.approved"]}),
            "url",
        ),
        (
            json!({"url": "https://u:p@hooks.example.com/x", "event_types": ["document.approved"]}),
            "url",
        ),
        (
            json!({"url": "https://hooks.example.com/x", "event_types": ["document.nope"]}),
            "event_types",
        ),
        (
            json!({"url": "https://hooks.example.com/x", "event_types": []}),
            "event_types",
        ),
        (
            json!({"url": "https://hooks.example.com/x", "event_types": ["audit.checkpoint"]}),
            "event_types",
        ),
    ];
    for (body, says) in bad {
        let r = app.post(HOOKS, &admin, body.clone()).await;
        let e = expect_error(r, StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED").await;
        let message = e["message"].as_str().unwrap();
        assert!(message.contains(says), "{body}: {message}");
    }
    assert_eq!(app.webhook_rows().await, 0, "nothing registered");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_space_admins_see_and_change_its_endpoints() {
    let app = spawn_app().await;
    app.space("eng").await;
    app.grant("eng", "user:erin", &["space_admin"]).await;
    app.grant("eng", "user:walt", &["author", "reviewer"]).await;
    let path = "/api/v1/spaces/eng/webhooks";
    let body =
        json!({"url": "https://hooks.example.com/eng", "event_types": ["document.submitted"]});
    let r = app.post(path, &app.member("walt"), body.clone()).await;
    expect_error(r, StatusCode::FORBIDDEN, "FORBIDDEN").await;
    // A member of another space only: the space does not exist for it.
    app.grant("default", "user:olga", &["author"]).await;
    let r = app.post(path, &app.member("olga"), body.clone()).await;
    expect_error(r, StatusCode::NOT_FOUND, "NOT_FOUND").await;
    let r = app.post(path, &app.member("erin"), body.clone()).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let id = r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    expect_error(
        app.get(path, &app.member("walt")).await,
        StatusCode::FORBIDDEN,
        "FORBIDDEN",
    )
    .await;
    // An admin of another space names it under its own: not found there.
    let r = app.get(&format!("{HOOKS}/{id}"), &app.member("erin")).await;
    expect_error(r, StatusCode::NOT_FOUND, "NOT_FOUND").await;
    // The 21st endpoint of a space.
    for n in 1..20 {
        let b = json!({"url": format!("https://hooks.example.com/{n}"), "event_types": ["document.submitted"]});
        assert_eq!(
            app.post(path, &app.member("erin"), b).await.status(),
            StatusCode::CREATED
        );
    }
    let r = app.post(path, &app.member("erin"), body).await;
    expect_error(r, StatusCode::CONFLICT, "INVALID_STATE").await;
    assert_eq!(app.webhook_rows().await, 20);
    app.stop().await;
}
