//! The lists of the document page in a real headless Chromium: comments, oldest first, each
//! with its author, time and review round, a page at a time; the review history a page at
//! a time; and a draft never submitted, not found for anyone but its author and the admins.

use kh_review::web::auth::Role;
use reqwest::StatusCode;
use serde_json::{json, Value};

use super::lifecycle::{flash, none_of, texts};
use crate::support::app::{spawn_app, TestApp};
use crate::support::browser::Window;
use crate::support::console::{fits_and_is_labelled, signed_in, text};

async fn comment(app: &TestApp, doc: &str, token: &str, body: &str) {
    let path = format!("/api/v1/documents/{doc}/comments");
    let r = app.post(&path, token, json!({ "body": body })).await;
    assert_eq!(
        r.status(),
        StatusCode::CREATED,
        "{}",
        r.text().await.unwrap()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn comments_are_added_and_listed_oldest_first() {
    let app = spawn_app().await;
    let (doc, _) = app.pending_review().await;
    let page = format!("/console/documents/{doc}");
    // A reviewer comments on the review round; then the author, on the document.
    let bob = signed_in(&app, &app.reviewer(), Window::PHONE).await;
    bob.goto(&page).await;
    bob.wait_for("#comment-form").await;
    bob.wait_for("#no-comments").await;
    assert_eq!(
        text(&bob, "label[for='comment-about']").await,
        "About the current review round (round 1, pending)"
    );
    bob.fill("#comment-body", "Section 2 needs a source.").await;
    bob.click("#comment-about").await;
    fits_and_is_labelled(&bob, "comment form").await;
    bob.click("#add-comment").await;
    flash(&bob, "Comment 1 added.").await;
    bob.close().await;
    let alice = signed_in(&app, &app.author(), Window::DESKTOP).await;
    alice.goto(&page).await;
    alice.wait_for("#comment-1").await;
    alice
        .fill("#comment-body", "Added one.\nSee the appendix.")
        .await;
    alice.click("#add-comment").await;
    flash(&alice, "Comment 2 added.").await;
    assert_eq!(
        texts(&alice, "#comments .comment-body").await,
        json!(["Section 2 needs a source.", "Added one.\nSee the appendix."])
    );
    assert_eq!(
        texts(&alice, "#comments .comment-author").await,
        json!(["bob", "alice"])
    );
    assert_eq!(
        texts(&alice, "#comments .comment-round").await,
        json!(["about review round 1"]),
        "only the first is about a round"
    );
    let at = text(&alice, "#comment-2 .comment-time").await;
    assert!(at.as_str().unwrap().ends_with(" UTC"), "{at}");
    none_of(&alice, &["#comments li.more"]).await;
    fits_and_is_labelled(&alice, "comments").await;
    alice.screenshot("console-comments-1280").await;

    // 21 more: the page shows the oldest 20, then the rest after "More comments".
    for n in 3..=23 {
        comment(&app, &doc, &app.reviewer(), &format!("Note {n}")).await;
    }
    alice.goto(&page).await;
    alice.wait_for("#comments li.more button").await;
    assert_eq!(
        texts(&alice, "#comments li.comment")
            .await
            .as_array()
            .unwrap()
            .len(),
        20
    );
    alice.click("#comments li.more button").await;
    alice.wait_for("#comment-23").await;
    let seqs = alice
        .eval("return [...document.querySelectorAll('#comments li.comment')].map(e => +e.dataset.seq);")
        .await;
    assert_eq!(seqs, json!((1..=23).collect::<Vec<_>>()));
    none_of(&alice, &["#comments li.more"]).await;
    alice.close().await;
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_history_shows_a_page_and_the_rest_after_more() {
    let app = spawn_app().await;
    let doc = app.create_document("Policy", "Text.").await.id.to_string();
    // 21 rounds: 20 withdrawn, the last pending.
    for _ in 0..20 {
        app.submitted(&doc).await;
        assert_eq!(app.withdraw(&doc).await.status(), StatusCode::OK);
    }
    let last = app.submitted(&doc).await;
    let b = signed_in(&app, &app.reviewer(), Window::DESKTOP).await;
    b.goto(&format!("/console/documents/{doc}")).await;
    b.wait_for("#history tr.more button").await;
    // The pending round is past the first page and still shown with its workflow.
    let workflow = b.wait_for("#workflow").await;
    assert_eq!(
        workflow.attr("data-review").await.unwrap().as_deref(),
        Some(last.as_str())
    );
    assert_eq!(rounds(&b).await.len(), 20);
    b.click("#history tr.more button").await;
    b.wait_for(&format!("#history tr[data-review='{last}']"))
        .await;
    let all = rounds(&b).await;
    assert_eq!(all, (1..=21).collect::<Vec<i64>>());
    none_of(&b, &["#history tr.more"]).await;
    fits_and_is_labelled(&b, "history").await;
    b.close().await;
    app.finish().await;
}

async fn rounds(b: &crate::support::browser::Browser) -> Vec<i64> {
    let v = b
        .eval("return [...document.querySelectorAll('#history tbody tr[data-round]')].map(e => +e.dataset.round);")
        .await;
    serde_json::from_value(v).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_private_draft_is_not_found_for_another_author() {
    let app = spawn_app().await;
    let doc = app
        .create_document("My secret plan", "Step one.")
        .await
        .id
        .to_string();
    let dave = app.token("dave", &[Role::Author]);
    for window in [Window::DESKTOP, Window::PHONE] {
        let b = signed_in(&app, &dave, window).await;
        b.goto(&format!("/console/documents/{doc}")).await;
        b.wait_for("#content .alert").await;
        let code = b
            .eval("return document.querySelector('#content .alert').dataset.code;")
            .await;
        assert_eq!(code, "NOT_FOUND");
        none_of(&b, &["#document", "#comment-form"]).await;
        let page = b.eval("return document.body.innerText;").await;
        assert!(!page.as_str().unwrap().contains("My secret plan"), "{page}");
        fits_and_is_labelled(&b, "private draft, another author").await;
        b.screenshot(&format!("console-private-draft-{}", window.width))
            .await;
        b.close().await;
    }
    // Every fragment of it is a 404 to dave and to a reviewer; its author sees it.
    let reviewer = app.reviewer();
    for path in ["", "/comments", "/history"] {
        for token in [&dave, &reviewer] {
            let r = app
                .get(&format!("/console/f/documents/{doc}{path}"), token)
                .await;
            assert_eq!(r.status(), StatusCode::NOT_FOUND, "{path}");
            let body = r.text().await.unwrap();
            assert!(!body.contains("My secret plan"), "{path}: {body}");
        }
    }
    let form = "body=Hello";
    let r = app
        .client
        .post(app.url(&format!("/console/f/documents/{doc}/comments/add")))
        .bearer_auth(&dave)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    let b = signed_in(&app, &app.author(), Window::DESKTOP).await;
    b.goto(&format!("/console/documents/{doc}")).await;
    b.wait_for("#private").await;
    assert_eq!(text(&b, "#doc-title").await, "My secret plan");
    b.close().await;
    let v: Value = app
        .get(&format!("/api/v1/documents/{doc}"), &dave)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(v["code"], "NOT_FOUND");
    app.finish().await;
}
