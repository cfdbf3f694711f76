//! A document's life after review in the console, in a real headless Chromium: an approved
//! document's edit starts a revision, shown beside the published copy (which stays live)
//! with the change marked; the author archives after confirming, and a page that fell
//! behind is refused in a sentence. (Comments, the paged history and private drafts:
//! `lifecycle_lists.rs`.)

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::app::{spawn_app, TestApp};
use crate::support::browser::{Browser, Window};
use crate::support::console::{events_of, fits_and_is_labelled, lease_settled, signed_in, text};

/// Waits until the flash of an action reads `said`.
pub async fn flash(b: &Browser, said: &str) {
    let script = format!(
        "return document.querySelector('#flash')?.innerText === {};",
        json!(said)
    );
    b.wait_until(&format!("the flash {said:?}"), &script).await;
}

/// The texts of every element matching `css`, in document order.
pub async fn texts(b: &Browser, css: &str) -> Value {
    b.eval_with(
        "return [...document.querySelectorAll(arguments[0])].map(e => e.innerText.trim());",
        vec![json!(css)],
    )
    .await
}

/// No element matches any of `css`.
pub async fn none_of(b: &Browser, css: &[&str]) {
    for c in css {
        let gone = b
            .eval_with(
                "return !document.querySelector(arguments[0]);",
                vec![json!(c)],
            )
            .await;
        assert_eq!(gone, true, "{c} is not on the page");
    }
}

async fn json_of(app: &TestApp, path: &str, token: &str) -> Value {
    let r = app.get(path, token).await;
    assert_eq!(r.status(), StatusCode::OK, "{path}");
    r.json().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_document_is_revised_beside_its_published_copy() {
    let app = spawn_app().await;
    for window in [Window::DESKTOP, Window::PHONE] {
        let w = window.width;
        let body = "Install the agent.\nRestart the indexer.\nCheck the dashboard.";
        let (doc, _) = app.approved_document(&format!("Runbook {w}"), body).await;
        let b = signed_in(&app, &app.author(), window).await;
        b.goto(&format!("/console/documents/{doc}")).await;
        b.wait_for("#edit-form").await;
        assert_eq!(
            text(&b, "#edit-title").await,
            "Edit (starts a revision; the published version stays live)"
        );
        assert_eq!(text(&b, "#doc-status").await, "APPROVED");
        none_of(&b, &["#revision", "#submit-form"]).await;
        b.fill("#edit-doc-title", &format!("Runbook {w}, second edition"))
            .await;
        let edited = "Install the agent.\nRestart the <b>indexer</b> twice.\nCheck the dashboard.";
        b.fill("#edit-doc-body", edited).await;
        lease_settled(&b).await;
        b.click("#save").await;
        flash(
            &b,
            "Saved as version 4, a revision: version 3 stays published until it is approved.",
        )
        .await;
        assert_eq!(text(&b, "#doc-status").await, "DRAFT");
        assert_eq!(
            text(&b, "#revision-title").await,
            "Published v3 | working v4"
        );
        assert_eq!(
            text(&b, "#doc-published").await,
            "version 3 stays published"
        );
        the_revision_shows_its_diff(&b, w).await;
        b.wait_for("#submit-form").await;
        fits_and_is_labelled(&b, "a revision").await;
        b.screenshot(&format!("console-revision-{w}")).await;
        b.close().await;

        // The published copy is still version 3, as approved; the working copy is 4.
        let published = json_of(
            &app,
            &format!("/api/v1/documents/{doc}/published"),
            &app.reviewer(),
        )
        .await;
        assert_eq!(published["version"], 3);
        assert_eq!(published["body"], body);
        assert_eq!(published["working_version"], 4);
        let working = json_of(&app, &format!("/api/v1/documents/{doc}"), &app.author()).await;
        assert_eq!(
            (&working["version"], &working["published_version"]),
            (&json!(4), &json!(3))
        );
        assert_eq!(working["body"], edited);
    }
    app.finish().await;
}

/// The revision's diff against the published version: the changed lines (title first) side
/// by side, the words that changed marked within them, and a summary.
async fn the_revision_shows_its_diff(b: &Browser, w: u32) {
    assert_eq!(
        texts(b, "#revision-diff tr[data-change='changed'] td.old del").await,
        json!([format!("Runbook {w}"), "Restart the indexer."])
    );
    assert_eq!(
        texts(b, "#revision-diff tr[data-change='changed'] td.new ins").await,
        json!([
            format!("Runbook {w}, second edition"),
            "Restart the <b>indexer</b> twice."
        ])
    );
    assert_eq!(
        texts(b, "#revision-diff tr[data-change='same'] td.new").await,
        json!(["Install the agent.", "Check the dashboard."])
    );
    none_of(b, &["#revision-diff b"]).await; // the body's markup shows as text
                                             // Within the changed line, the words that changed are marked.
    let marked = texts(
        b,
        "#revision-diff tr[data-change='changed'] td.new ins mark",
    )
    .await;
    assert!(marked.to_string().contains("twice"), "{marked}");
    assert_eq!(
        text(b, "#revision-summary").await,
        "1 line removed and 1 added; the title changed."
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_author_archives_after_confirming_and_the_forms_go() {
    let app = spawn_app().await;
    let (doc, review) = app.pending_review().await;
    for window in [Window::PHONE, Window::DESKTOP] {
        let b = signed_in(&app, &app.author(), window).await;
        b.goto(&format!("/console/documents/{doc}")).await;
        b.wait_for("#archive-form").await;
        fits_and_is_labelled(&b, "archivable").await;
        if window.width == Window::PHONE.width {
            // Cancelled at the confirmation: nothing is sent.
            lease_settled(&b).await;
            b.click("#archive").await;
            b.client()
                .dismiss_alert()
                .await
                .expect("archive asks first");
            assert_eq!(text(&b, "#doc-status").await, "PENDING_REVIEW");
            b.close().await;
            continue;
        }
        b.fill("#archive-reason", "Superseded by the new handbook.")
            .await;
        lease_settled(&b).await;
        b.click("#archive").await;
        b.client().accept_alert().await.expect("archive asks first");
        flash(
            &b,
            "Archived at version 3; its pending review was withdrawn.",
        )
        .await;
        assert_eq!(text(&b, "#doc-status").await, "ARCHIVED");
        b.wait_for("#archived").await;
        b.wait_for("#comments-closed").await;
        none_of(
            &b,
            &[
                "#edit-form",
                "#submit-form",
                "#withdraw-form",
                "#archive-form",
                "#comment-form",
            ],
        )
        .await;
        fits_and_is_labelled(&b, "archived").await;
        b.screenshot("console-archived-1280").await;
        // My documents lists it under Archived.
        b.goto("/console/mine").await;
        b.wait_for(&format!(
            "section[data-status='ARCHIVED'] a[href='/console/documents/{doc}']"
        ))
        .await;
        b.close().await;
    }
    assert_eq!(app.review_status_in_db(&review).await, "WITHDRAWN");
    let events = events_of(&app, &doc, 2).await;
    assert_eq!(events, ["document.submitted", "document.archived"]);
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_archive_from_a_page_that_fell_behind_is_refused_in_a_sentence() {
    let app = spawn_app().await;
    let doc = app
        .create_document("Notes", "First words.")
        .await
        .id
        .to_string();
    let admin = app.admin();
    let b = signed_in(&app, &admin, Window::DESKTOP).await;
    b.goto(&format!("/console/documents/{doc}")).await;
    b.wait_for("#archive-form").await;
    b.wait_for("#private").await; // the admin sees a draft never submitted
                                  // The author edits after the admin's page was loaded: version 2.
    let edit = json!({"body": "Second words."});
    let r = app
        .put(&format!("/api/v1/documents/{doc}"), &app.author(), edit)
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    lease_settled(&b).await;
    b.click("#archive").await;
    b.client().accept_alert().await.expect("archive asks first");
    b.wait_for("#archive-error .alert").await;
    assert_eq!(
        text(&b, "#archive-error .alert p").await,
        "The document changed since this page was loaded (version 1): it is at version 2 now (DRAFT). \
         Nothing was archived; look at it again before archiving."
    );
    assert_eq!(text(&b, "#doc-status").await, "DRAFT", "the page stays");
    fits_and_is_labelled(&b, "archive refused").await;
    b.screenshot("console-archive-refused").await;
    b.close().await;
    let now = json_of(&app, &format!("/api/v1/documents/{doc}"), &app.author()).await;
    assert_eq!(now["status"], "DRAFT");
    app.finish().await;
}
