//! Editing together in the console, in a real headless Chromium: the edit form holds the
//! document's edit lease once its author starts typing, others see who is editing, a space
//! admin takes over, and the first holder's save is then refused in a sentence.

use reqwest::StatusCode;
use serde_json::{json, Value};

use super::lifecycle::texts;
use crate::support::app::{spawn_app, TestApp};
use crate::support::browser::Window;
use crate::support::console::{events_of, fits_and_is_labelled, signed_in, text};
use crate::support::inspect::expect_error;
use kh_review::web::auth::Role;

/// The page holds the lease: its token goes with the edit form (a hidden field).
const HOLDS: &str =
    "return !!document.querySelector(\"#lease[data-lease='mine'] input[name='lease_token']\");";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_edit_form_holds_the_lease_and_an_admin_takes_over() {
    let app = spawn_app().await;
    let doc = app
        .create_document("Runbook", "Restart the indexer.")
        .await
        .id
        .to_string();
    let _ = app.submitted(&doc).await;
    let r = app
        .post(
            &format!("/api/v1/documents/{doc}/withdraw"),
            &app.author(),
            json!({}),
        )
        .await;
    assert_eq!(r.status(), StatusCode::OK);

    // The author opens the page: nobody holds the lease until she starts typing.
    let alice = signed_in(&app, &app.author(), Window::DESKTOP).await;
    alice.goto(&format!("/console/documents/{doc}")).await;
    alice.wait_for("#lease[data-lease='free']").await;
    alice.click("#edit-doc-body").await;
    alice.wait_until("the lease held", HOLDS).await;
    let note = text(&alice, "#lease-note").await;
    assert!(
        note.as_str()
            .unwrap_or_default()
            .starts_with("You are editing"),
        "{note}"
    );
    let lease: Value = app
        .get(&format!("/api/v1/documents/{doc}/lease"), &app.reviewer())
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(lease["holder"], "alice");
    a_save_by_another_is_refused(&app, &doc).await;
    an_admin_takes_over(&app, &doc).await;

    // Alice's save, with the lease she no longer holds: refused, the text unchanged.
    alice.fill("#edit-doc-body", "Restart both indexers.").await;
    alice.click("#save").await;
    alice
        .wait_for("#outcome .alert[data-code='LEASE_LOST']")
        .await;
    let said = texts(&alice, "#outcome .alert p").await;
    assert!(said.to_string().contains("expired or was broken"), "{said}");
    alice.close().await;
    let body: String = sqlx::query_scalar("SELECT body FROM documents WHERE id = $1::uuid")
        .bind(&doc)
        .fetch_one(&app.pg)
        .await
        .unwrap();
    assert_eq!(body, "Restart the indexer.");
    let events = events_of(&app, &doc, 3).await;
    assert_eq!(
        events,
        [
            "document.submitted",
            "document.withdrawn",
            "document.lease_broken"
        ]
    );
    app.finish().await;
}

/// While the author holds the lease, another author's save through the API is refused.
async fn a_save_by_another_is_refused(app: &TestApp, doc: &str) {
    let dave = app.token("dave", &[Role::Author]);
    let url = app.url(&format!("/api/v1/documents/{doc}"));
    let r = app
        .client
        .put(&url)
        .bearer_auth(&dave)
        .json(&json!({"body": "dave's"}))
        .send();
    expect_error(r.await.unwrap(), StatusCode::CONFLICT, "DOCUMENT_LEASED").await;
}

/// An admin sees who is editing (the holder named), and takes over after confirming.
async fn an_admin_takes_over(app: &TestApp, doc: &str) {
    let admin = signed_in(app, &app.admin(), Window::DESKTOP).await;
    admin.goto(&format!("/console/documents/{doc}")).await;
    admin
        .wait_for("#lease[data-lease='others'] #take-over")
        .await;
    assert_eq!(text(&admin, "#lease-holder").await, "alice");
    fits_and_is_labelled(&admin, "leased by another").await;
    admin.screenshot("console-lease-others").await;
    admin.click("#take-over").await;
    admin
        .client()
        .accept_alert()
        .await
        .expect("take over asks first");
    admin.wait_until("the lease taken over", HOLDS).await;
    admin.close().await;
}
