//! The console in a real headless Chromium (network limited to the service): an author
//! writes and submits, a reviewer approves from the queue; two reviewers click approve at
//! once; a reject without a reason; a sign-in link someone else made. Every page visited is
//! saved under `target/ui/`.

use std::time::Duration;

use kh_review::web::auth::Role;
use serde_json::{json, Value};

use crate::support::app::{spawn_app, TestApp, REVIEWER2};
use crate::support::browser::{Browser, Window};
use crate::support::console::{events_of, fits_and_is_labelled, lease_settled, signed_in, text};
use crate::support::inspect::redis_cmd;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_author_submits_and_a_reviewer_approves_from_the_queue() {
    let app = spawn_app().await;
    for window in [Window::DESKTOP, Window::PHONE] {
        let doc = author_writes_and_submits(&app, window).await;
        reviewer_approves_from_the_queue(&app, window, &doc).await;
        let events = events_of(&app, &doc, 2).await;
        assert_eq!(
            events,
            ["document.submitted", "document.approved"],
            "one event per transition"
        );
        let comment: String = sqlx::query_scalar(
            "SELECT comment FROM reviews WHERE document_id = $1::uuid AND status = 'APPROVED'",
        )
        .bind(&doc)
        .fetch_one(&app.pg)
        .await
        .unwrap();
        assert_eq!(comment, "Clear and complete.");
    }
    app.finish().await;
}

/// An author creates a draft on "my documents" and submits it; its id.
async fn author_writes_and_submits(app: &TestApp, window: Window) -> String {
    let w = window.width;
    let author = signed_in(app, &app.author(), window).await;
    author.screenshot(&format!("console-home-{w}")).await;
    author.goto("/console/mine").await;
    author.wait_for("#create-form").await;
    fits_and_is_labelled(&author, "my documents").await;
    author
        .fill("#new-doc-title", &format!("Onboarding guide {w}"))
        .await;
    author
        .fill("#new-doc-body", "Day one: accounts.\nDay two: the wiki.")
        .await;
    author.screenshot(&format!("console-mine-{w}")).await;
    author.click("#create").await;
    author.wait_for("#submit").await; // the new draft's page
    let doc = author
        .eval("return location.pathname.split('/').pop();")
        .await;
    let doc = doc.as_str().unwrap().to_string();
    assert_eq!(text(&author, "#doc-status").await, "DRAFT");
    lease_settled(&author).await;
    author.click("#submit").await;
    author.wait_for("#flash").await;
    assert_eq!(text(&author, "#doc-status").await, "PENDING_REVIEW");
    assert!(
        author
            .eval("return !document.querySelector('#edit-form');")
            .await
            == json!(true)
    );
    author.screenshot(&format!("console-submitted-{w}")).await;
    author.close().await;

    doc
}

/// A reviewer opens the document from the queue and approves it by keyboard; it leaves
/// the queue.
async fn reviewer_approves_from_the_queue(app: &TestApp, window: Window, doc: &str) {
    let w = window.width;
    let reviewer = signed_in(app, &app.reviewer(), window).await;
    reviewer.goto("/console/queue").await;
    let row = format!("tr[data-document='{doc}']");
    reviewer.wait_for(&row).await;
    fits_and_is_labelled(&reviewer, "queue").await;
    let waited = text(&reviewer, &format!("{row} .waited")).await;
    assert!(
        waited.as_str().unwrap().ends_with(" s"),
        "waiting time shown: {waited}"
    );
    reviewer.screenshot(&format!("console-queue-{w}")).await;
    reviewer.click(&format!("{row} a")).await;
    reviewer.wait_for("#approve").await;
    fits_and_is_labelled(&reviewer, "document").await;
    assert!(text(&reviewer, "#body")
        .await
        .as_str()
        .unwrap()
        .contains("Day two"));
    assert!(text(&reviewer, "#preview")
        .await
        .as_str()
        .unwrap()
        .starts_with("Day one"));
    reviewer.screenshot(&format!("console-document-{w}")).await;
    // By keyboard: type the comment, Tab to Approve, Enter.
    let comment = reviewer.wait_for("#comment").await;
    comment
        .send_keys("Clear and complete.\u{E004}")
        .await
        .unwrap();
    let focused = reviewer.eval("return document.activeElement.id;").await;
    assert_eq!(focused, "approve", "Tab leads from the comment to Approve");
    reviewer
        .client()
        .active_element()
        .await
        .unwrap()
        .send_keys("\u{E007}")
        .await
        .unwrap();
    reviewer.wait_for("#flash").await;
    assert_eq!(
        text(&reviewer, "#flash").await,
        "Approved: the document is now APPROVED."
    );
    assert_eq!(text(&reviewer, "#doc-status").await, "APPROVED");
    reviewer.screenshot(&format!("console-approved-{w}")).await;
    reviewer.goto("/console/queue").await;
    reviewer
        .wait_until(
            "the queue to load",
            "return document.querySelector('#queue, #queue-empty');",
        )
        .await;
    let still = reviewer
        .eval_with(
            "return !!document.querySelector(arguments[0]);",
            vec![json!(row)],
        )
        .await;
    assert_eq!(still, false, "the approved document left the queue");
    reviewer.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_reviewers_click_approve_at_once_one_wins_the_other_is_told() {
    let app = spawn_app().await;
    let (doc, review) = app.pending_review().await;
    let carol = app.token(REVIEWER2, &[Role::Reviewer]);
    let bob = signed_in(&app, &app.reviewer(), Window::DESKTOP).await;
    let other = signed_in(&app, &carol, Window::DESKTOP).await;
    for b in [&bob, &other] {
        b.goto(&format!("/console/documents/{doc}")).await;
        b.wait_for("#approve").await;
    }
    let (x, y) = (
        bob.wait_for("#approve").await,
        other.wait_for("#approve").await,
    );
    let (a, b) = tokio::join!(x.click(), y.click());
    a.unwrap();
    b.unwrap();
    let outcome = "return document.querySelector('#flash') ? 'won'
        : (document.querySelector('#outcome .alert') ? document.querySelector('#outcome .alert p').innerText : null);";
    let first = bob.wait_until("an answer", outcome).await;
    let second = other.wait_until("an answer", outcome).await;
    let (winner, loser, message) = match (first.as_str().unwrap(), second.as_str().unwrap()) {
        ("won", m) => ("bob", &other, m.to_string()),
        (m, "won") => ("carol", &bob, m.to_string()),
        both => panic!("exactly one reviewer wins: {both:?}"),
    };
    let busy =
        regex::Regex::new(r"^Another reviewer is deciding this right now, try again in \d+ s\.$")
            .unwrap();
    let decided = format!("Already decided by {winner} (approved).");
    assert!(
        busy.is_match(&message) || message == decided,
        "the loser is told why: {message:?}"
    );
    loser.screenshot("console-conflict").await;
    assert_eq!(
        app.count(&format!("SELECT count(*) FROM reviews WHERE id = '{review}' AND status = 'APPROVED' AND decided_by = '{winner}'")).await,
        1
    );
    let events = events_of(&app, &doc, 2).await;
    assert_eq!(
        events,
        ["document.submitted", "document.approved"],
        "one transition, one event"
    );
    app.outbox_drained(Duration::from_secs(10)).await;
    assert!(app.take_events().await.is_empty(), "and no second event");
    bob.close().await;
    other.close().await;
    app.finish().await;
}

/// Another reviewer holds the review's lock (the test takes it in Redis): the console says
/// so, with the wait from `Retry-After`, and nothing changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_lock_reads_try_again_in_n_seconds() {
    let app = spawn_app().await;
    let (doc, review) = app.pending_review().await;
    let key = app.lock_key_review(&review);
    redis_cmd(&app.redis, &["SET", &key, "someone-else", "PX", "8000"]).await;
    let b = signed_in(&app, &app.reviewer(), Window::DESKTOP).await;
    b.goto(&format!("/console/documents/{doc}")).await;
    b.click("#approve").await;
    b.wait_for("#outcome .alert").await;
    let said = text(&b, "#outcome .alert p").await;
    let busy = regex::Regex::new(
        r"^Another reviewer is deciding this right now, try again in ([1-8]) s\.$",
    )
    .unwrap();
    assert!(busy.is_match(said.as_str().unwrap()), "{said}");
    assert_eq!(
        text(&b, "#doc-status").await,
        "PENDING_REVIEW",
        "the form stays"
    );
    b.screenshot("console-busy").await;
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) FROM reviews WHERE id = '{review}' AND status = 'PENDING'"
        ))
        .await,
        1
    );
    redis_cmd(&app.redis, &["DEL", &key]).await;
    b.close().await;
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reject_without_a_reason_is_refused_by_the_page_and_by_the_server() {
    let app = spawn_app().await;
    let (doc, review) = app.pending_review().await;
    let b = signed_in(&app, &app.reviewer(), Window::DESKTOP).await;
    b.goto(&format!("/console/documents/{doc}")).await;
    b.click("#reject").await;
    let message = b
        .eval("return document.querySelector('#reason').validationMessage;")
        .await;
    assert!(
        !message.as_str().unwrap().is_empty(),
        "the page refuses the empty reason"
    );
    let series = "http_requests_total{method=\"POST\",\
        route=\"/console/f/documents/{id}/reviews/{review}/reject\",status=\"422\"}";
    let any_sent = b.eval("return performance.getEntriesByType('resource').some(e => e.name.includes('/reject'));").await;
    assert_eq!(any_sent, false, "no request left the page");
    b.screenshot("console-reject-refused-in-page").await;
    // Sent anyway (the page's check removed): the server refuses it, and nothing changes.
    b.eval("document.querySelector('#reason').removeAttribute('required');")
        .await;
    b.click("#reject").await;
    b.wait_for("#outcome .alert").await;
    assert_eq!(
        text(&b, "#outcome .alert p").await,
        "reason: must not be empty"
    );
    assert_eq!(
        app.metric(series).await,
        Some(1.0),
        "the server saw one reject, and refused it"
    );
    b.screenshot("console-reject-refused-by-server").await;
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) FROM reviews WHERE id = '{review}' AND status = 'PENDING'"
        ))
        .await,
        1
    );
    // With a reason, the same form rejects.
    b.fill("#reason", "Needs a summary.").await;
    b.click("#reject").await;
    b.wait_for("#flash").await;
    assert_eq!(text(&b, "#doc-status").await, "REJECTED");
    b.close().await;
    author_edits_and_resubmits(&app, &doc).await;
    app.finish().await;
}

/// The author of a rejected document edits it on its page and resubmits it: a second
/// pending review, the first still in the history with its reason.
async fn author_edits_and_resubmits(app: &TestApp, doc: &str) {
    let b = signed_in(app, &app.author(), Window::PHONE).await;
    b.goto(&format!("/console/documents/{doc}")).await;
    b.wait_for("#edit-form").await;
    assert_eq!(text(&b, "#submit").await, "Resubmit for review");
    fits_and_is_labelled(&b, "rejected document").await;
    b.screenshot("console-rejected-390").await;
    b.fill("#edit-doc-title", "Quarterly report, with a summary")
        .await;
    lease_settled(&b).await;
    b.click("#save").await;
    b.wait_until(
        "the edit to be saved",
        "return document.querySelector('#flash')?.innerText === 'Saved.';",
    )
    .await;
    assert_eq!(
        text(&b, "#doc-title").await,
        "Quarterly report, with a summary"
    );
    lease_settled(&b).await;
    b.click("#submit").await;
    b.wait_until(
        "the resubmission",
        "return document.querySelector('#doc-status')?.innerText === 'PENDING_REVIEW';",
    )
    .await;
    let history = b
        .eval("return [...document.querySelectorAll('#history tbody tr')].map(r => r.innerText);")
        .await;
    let rows: Vec<&str> = history
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert!(
        rows[0].starts_with("REJECTED") && rows[0].contains("Needs a summary."),
        "{rows:?}"
    );
    assert!(rows[1].starts_with("PENDING"), "{rows:?}");
    b.screenshot("console-resubmitted-390").await;
    b.close().await;
    let r = app
        .get(&format!("/api/v1/documents/{doc}"), &app.author())
        .await;
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["status"], "PENDING_REVIEW");
    assert_eq!(v["title"], "Quarterly report, with a summary");
}

/// A `/console#token=` link made by someone else (mallory): it signs nobody in before the
/// user has seen whose token it is and confirmed, and never replaces a token the tab holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sign_in_link_shows_whose_it_is_and_never_replaces_a_held_token() {
    let app = spawn_app().await;
    let mallory = app.token("mallory", &[Role::Author]);
    let held = "return sessionStorage.getItem('kh-review-token');";
    let b = Browser::open_with(&app.address, Window::DESKTOP).await;
    b.goto(&format!("/console#token={mallory}")).await;
    b.wait_for("#link-confirm").await;
    let offer = text(&b, "#link-sign-in").await;
    let offer = offer.as_str().unwrap().to_string();
    assert!(
        offer.contains("mallory") && offer.contains("author"),
        "{offer}"
    );
    assert_eq!(
        b.eval(held).await,
        Value::Null,
        "not signed in before the confirm"
    );
    let url = b.eval("return location.href;").await;
    assert!(!url.as_str().unwrap().contains("token="), "{url}");
    fits_and_is_labelled(&b, "sign-in link").await;
    b.screenshot("console-link-offer").await;
    b.click("#link-cancel").await;
    assert_eq!(b.eval(held).await, Value::Null, "cancelled");
    assert_eq!(text(&b, "#link-sign-in").await, Value::Null);
    b.close().await;
    // Alice is signed in (through her own link, confirmed); mallory's link changes nothing.
    let alice = app.author();
    let b = signed_in(&app, &alice, Window::DESKTOP).await;
    b.goto(&format!("/console#token={mallory}")).await;
    b.wait_for("#link-refused").await;
    assert_eq!(text(&b, "#link-sign-in").await, Value::Null, "no offer");
    assert_eq!(b.eval(held).await, json!(alice), "still alice's token");
    b.wait_for("#me").await;
    assert_eq!(text(&b, "#me").await, "alice");
    b.close().await;
    app.finish().await;
}
