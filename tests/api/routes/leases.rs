//! Edit leases: the database lock provider under the lock-provider contract, and what people
//! get from `/documents/{id}/lease`: a check-out that keeps others' edits out, renewals,
//! a break by an admin, and a holder paused past its lease that cannot overwrite the next
//! holder's edit.

use std::time::Duration;

use reqwest::{Response, StatusCode};
use serde_json::{json, Value};
use uuid::Uuid;

use crate::support::app::{expose, spawn_app, spawn_app_with, AppOptions, TestApp, AUTHOR};
use crate::support::inspect::{expect_error, wait_for};
use kh_review::lock::postgres::PgLockProvider;
use kh_review::lock::LockProvider;
use kh_review::web::auth::Role;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_database_provider_passes_the_lock_provider_contract() {
    let app = spawn_app().await;
    // As the service connects: its role, which owns no table.
    let url = expose(&app.settings.database.url);
    let pool = sqlx::PgPool::connect(url)
        .await
        .expect("the service role connects");
    let p = PgLockProvider::new(pool.clone(), Duration::from_secs(2));
    p.ping()
        .await
        .expect("PostgreSQL unreachable: run `make services`");
    kh_review::lock::contract::run_all(&p, &format!("t:{}:", Uuid::new_v4().simple())).await;
    pool.close().await; // before the test's database is dropped
    app.finish().await;
}

impl TestApp {
    async fn lease(&self, method: reqwest::Method, id: &str, token: &str, query: &str) -> Response {
        let url = self.url(&format!("/api/v1/documents/{id}/lease{query}"));
        let req = self.client.request(method, url).bearer_auth(token);
        req.send().await.unwrap()
    }

    async fn edit_as(&self, id: &str, token: &str, lease: Option<&str>, body: &str) -> Response {
        let mut req = self
            .client
            .put(self.url(&format!("/api/v1/documents/{id}")));
        if let Some(t) = lease {
            req = req.header("Lease-Token", t);
        }
        let req = req.bearer_auth(token).json(&json!({ "body": body }));
        req.send().await.unwrap()
    }

    /// A document by the author, submitted once and withdrawn: every author of the space
    /// may edit it.
    async fn shared_draft(&self) -> String {
        let id = self.create_document("Runbook", "v1").await.id.to_string();
        let _ = self.submitted(&id).await;
        let r = self
            .post(
                &format!("/api/v1/documents/{id}/withdraw"),
                &self.author(),
                json!({}),
            )
            .await;
        assert_eq!(r.status(), StatusCode::OK);
        id
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_keeps_others_out_until_given_back_or_broken() {
    let app = spawn_app().await;
    let id = app.shared_draft().await;
    let (alice, dave) = (app.author(), app.token("dave", &[Role::Author]));
    let post = reqwest::Method::POST;
    let r = app.lease(post.clone(), &id, &alice, "").await;
    assert_eq!(r.status(), StatusCode::OK);
    let taken: Value = r.json().await.unwrap();
    let token = taken["token"]
        .as_str()
        .expect("the holder's token")
        .to_string();
    assert_eq!(taken["holder"], AUTHOR);
    // A renewal keeps the token and the fence.
    let renewed: Value = app
        .lease(post.clone(), &id, &alice, "")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        (&renewed["token"], &renewed["fence"]),
        (&taken["token"], &taken["fence"])
    );
    others_see_the_holder_and_are_kept_out(&app, &id, &dave).await;
    // The holder edits, with its token or without.
    assert_eq!(
        app.edit_as(&id, &alice, Some(&token), "v2").await.status(),
        StatusCode::OK
    );
    assert_eq!(
        app.edit_as(&id, &alice, None, "v3").await.status(),
        StatusCode::OK
    );
    // Dave cannot give it back; breaking it needs a space admin.
    let delete = reqwest::Method::DELETE;
    let r = app.lease(delete.clone(), &id, &dave, "").await;
    expect_error(r, StatusCode::CONFLICT, "DOCUMENT_LEASED").await;
    let r = app.lease(delete.clone(), &id, &dave, "?force=true").await;
    expect_error(r, StatusCode::FORBIDDEN, "FORBIDDEN").await;
    let admin = app.token("root", &[Role::Admin]);
    let r = app.lease(delete.clone(), &id, &admin, "?force=true").await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    // Broken: audited and announced; the old token is lost, and dave takes a new lease.
    let sql = format!("SELECT count(*) FROM audit_log WHERE document_id = '{id}' AND action = 'break_lease' AND actor_id = 'root'");
    assert_eq!(app.count(&sql).await, 1);
    let sql = format!("SELECT count(*) FROM outbox WHERE document_id = '{id}' AND event_type = 'document.lease_broken' AND payload->'data'->>'holder' = 'alice'");
    assert_eq!(app.count(&sql).await, 1);
    let r = app.edit_as(&id, &alice, Some(&token), "v4").await;
    expect_error(r, StatusCode::CONFLICT, "LEASE_LOST").await;
    let next: Value = app.lease(post, &id, &dave, "").await.json().await.unwrap();
    assert!(
        next["fence"].as_i64() > taken["fence"].as_i64(),
        "{next} after {taken}"
    );
    // Given back by its holder: nobody holds it.
    let r = app.lease(delete.clone(), &id, &dave, "").await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    let r = app.lease(reqwest::Method::GET, &id, &dave, "").await;
    expect_error(r, StatusCode::NOT_FOUND, "NOT_FOUND").await;
    let r = app.lease(delete, &id, &dave, "").await;
    expect_error(r, StatusCode::NOT_FOUND, "NOT_FOUND").await;
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn who_may_not_edit_takes_no_lease() {
    let app = spawn_app().await;
    let draft = app.create_document("Private", "v1").await.id.to_string();
    let dave = app.token("dave", &[Role::Author]);
    let r = app.lease(reqwest::Method::POST, &draft, &dave, "").await;
    expect_error(r, StatusCode::NOT_FOUND, "NOT_FOUND").await;
    let (pending, _) = app.pending_review().await;
    let r = app
        .lease(reqwest::Method::POST, &pending, &app.author(), "")
        .await;
    expect_error(r, StatusCode::CONFLICT, "INVALID_STATE").await;
    let r = app
        .lease(reqwest::Method::POST, &pending, &app.reviewer(), "")
        .await;
    expect_error(r, StatusCode::FORBIDDEN, "FORBIDDEN").await;
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_paused_past_its_lease_cannot_overwrite_the_next_holders_edit() {
    let app = spawn_app_with(AppOptions {
        configure: Some(Box::new(|s| s.edit.lease_ttl = Duration::from_secs(1))),
        ..AppOptions::default()
    })
    .await;
    let id = app.shared_draft().await;
    let (alice, dave) = (app.author(), app.token("dave", &[Role::Author]));
    let post = reqwest::Method::POST;
    let first: Value = app
        .lease(post.clone(), &id, &alice, "")
        .await
        .json()
        .await
        .unwrap();
    let stale = first["token"].as_str().unwrap().to_string();
    // Alice pauses: her lease runs out, and dave takes the next one and saves.
    wait_for("the lease to expire", Duration::from_secs(10), || async {
        let r = app.lease(reqwest::Method::GET, &id, &dave, "").await;
        (r.status() == StatusCode::NOT_FOUND).then_some(())
    })
    .await;
    let next: Value = app.lease(post, &id, &dave, "").await.json().await.unwrap();
    let token = next["token"].as_str().unwrap();
    assert_eq!(
        app.edit_as(&id, &dave, Some(token), "dave's")
            .await
            .status(),
        StatusCode::OK
    );
    // Alice wakes and saves with her old token: refused, and dave's text stays.
    let r = app
        .edit_as(&id, &alice, Some(&stale), "alice's, from before")
        .await;
    expect_error(r, StatusCode::CONFLICT, "LEASE_LOST").await;
    let body: String = sqlx::query_scalar("SELECT body FROM documents WHERE id = $1::uuid")
        .bind(&id)
        .fetch_one(&app.pg)
        .await
        .unwrap();
    assert_eq!(body, "dave's");
    app.finish().await;
}

/// Others see who holds a lease, never its token; they can neither take it nor edit.
async fn others_see_the_holder_and_are_kept_out(app: &TestApp, id: &str, dave: &str) {
    let seen: Value = app
        .lease(reqwest::Method::GET, id, &app.reviewer(), "")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        (seen["holder"].as_str(), seen.get("token")),
        (Some(AUTHOR), None)
    );
    let r = app.lease(reqwest::Method::POST, id, dave, "").await;
    let retry: u64 = r.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=300).contains(&retry), "{retry}");
    let e = expect_error(r, StatusCode::CONFLICT, "DOCUMENT_LEASED").await;
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .starts_with("alice is editing"),
        "{e}"
    );
    let r = app.edit_as(id, dave, None, "dave's").await;
    expect_error(r, StatusCode::CONFLICT, "DOCUMENT_LEASED").await;
    let r = app.edit_as(id, dave, Some("not-the-token"), "dave's").await;
    expect_error(r, StatusCode::CONFLICT, "LEASE_LOST").await;
}
