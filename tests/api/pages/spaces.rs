//! The console's spaces in a real headless Chromium: the switcher changes the queue and the
//! documents shown; a space admin adds a member, who then finds the space in its switcher,
//! and is told in a sentence why the last space admin stays; a URL of a space the caller
//! holds no role in shows the not-found page; the title search finds a document by a piece
//! of its title, and a document is created in the space of the page.

use kh_review::web::auth::Role;
use serde_json::json;

use super::lifecycle::{flash, none_of, texts};
use crate::support::app::{spawn_app, TestApp};
use crate::support::browser::{Browser, Window};
use crate::support::console::{fits_and_is_labelled, lease_settled, signed_in, text};

/// Picks `space` in the switcher and switches: the page of that space loads.
async fn switch_to(b: &Browser, space: &str) {
    b.wait_for("#space-select").await;
    b.eval_with(
        "document.querySelector('#space-select').value = arguments[0];",
        vec![json!(space)],
    )
    .await;
    b.click("#switch-space").await;
    b.wait_for(&format!("#content [data-space='{space}']"))
        .await;
    let url = b.eval("return location.search;").await;
    assert_eq!(url, format!("?space={space}"));
}

/// The switcher's chosen space as it reads, once it has loaded (it loads after the page).
async fn chosen(b: &Browser) -> serde_json::Value {
    b.wait_until(
        "the switcher's choice",
        "const o = document.querySelector('#space-select option:checked'); \
         return o && o.innerText.trim();",
    )
    .await
}

/// The spaces the switcher offers, once it has loaded.
async fn offered(b: &Browser) -> serde_json::Value {
    b.wait_until(
        "the switcher",
        "const s = document.querySelector('#space-select'); \
         return s && [...s.options].map(o => o.value);",
    )
    .await
}

/// The document ids the page lists (the queue's rows, or a space's documents).
async fn listed(b: &Browser) -> serde_json::Value {
    b.eval("return [...document.querySelectorAll('#content [data-document]')].map(e => e.dataset.document);")
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn switching_space_changes_the_queue_and_the_documents_shown() {
    let app = spawn_app().await;
    for key in ["hr", "eng"] {
        app.space(key).await;
        app.grant(key, "user:rose", &["reviewer"]).await;
    }
    app.grant("hr", "user:cat", &["author"]).await;
    app.grant("eng", "user:eve", &["author"]).await;
    let (hr, _) = app
        .pending_in("hr", &app.member("cat"), "Parental leave")
        .await;
    let (eng, _) = app
        .pending_in("eng", &app.member("eve"), "Deploy runbook")
        .await;
    for window in [Window::DESKTOP, Window::PHONE] {
        let b = signed_in(&app, &app.member("rose"), window).await;
        // No role in default: the queue is her first reviewer space's.
        b.goto("/console/queue").await;
        b.wait_for("#queue[data-space='eng']").await;
        assert_eq!(listed(&b).await, json!([eng]));
        assert_eq!(offered(&b).await, json!(["eng", "hr"]));
        fits_and_is_labelled(&b, "queue with its switcher").await;
        b.screenshot(&format!("console-queue-switcher-{}", window.width))
            .await;
        switch_to(&b, "hr").await;
        assert_eq!(listed(&b).await, json!([hr]));
        assert_eq!(chosen(&b).await, "hr (hr) · reviewer");
        b.goto("/console/documents?space=eng").await;
        b.wait_for("#space-documents[data-space='eng']").await;
        assert_eq!(listed(&b).await, json!([eng]));
        assert_eq!(offered(&b).await, json!(["eng", "hr"]));
        switch_to(&b, "hr").await;
        assert_eq!(listed(&b).await, json!([hr]));
        none_of(&b, &["#create-form"]).await;
        fits_and_is_labelled(&b, "a space's documents").await;
        b.screenshot(&format!("console-space-documents-{}", window.width))
            .await;
        b.close().await;
    }
    app.finish().await;
}

/// sam, the one space admin of hr, adds dan as author and reviewer on the members page.
async fn sam_adds_dan(app: &TestApp) -> Browser {
    let sam = signed_in(app, &app.member("sam"), Window::DESKTOP).await;
    sam.click("#my-spaces [data-space='hr'] a[aria-label='Members of hr']")
        .await;
    sam.wait_for("#member-form").await;
    fits_and_is_labelled(&sam, "members").await;
    sam.fill("#member-name", "dan").await;
    sam.click("#role-author").await;
    sam.click("#role-reviewer").await;
    sam.click("#save-member").await;
    flash(&sam, "user:dan is a member of hr now: author, reviewer.").await;
    assert_eq!(
        text(&sam, "#members tr[data-subject='user:dan'] .roles").await,
        "author, reviewer"
    );
    sam.screenshot("console-members-1280").await;
    sam
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_space_admin_adds_a_member_who_then_sees_the_space_in_its_switcher() {
    let app = spawn_app().await;
    app.space("hr").await;
    app.grant("hr", "user:sam", &["space_admin"]).await;
    let (doc, _) = app.pending_review().await; // in default
    let dan = signed_in(&app, &app.token("dan", &[Role::Reviewer]), Window::PHONE).await;
    dan.goto("/console/documents").await;
    dan.wait_for("#space-documents[data-space='default']").await;
    assert_eq!(offered(&dan).await, json!(["default"]));

    let sam = sam_adds_dan(&app).await;
    // dan's next page offers hr, with his roles there.
    dan.goto("/console/documents").await;
    dan.wait_for("#space-documents[data-space='default']").await;
    assert_eq!(offered(&dan).await, json!(["default", "hr"]));
    switch_to(&dan, "hr").await;
    dan.wait_for("#no-documents").await;
    assert_eq!(chosen(&dan).await, "hr (hr) · author, reviewer");
    dan.wait_for("#create-form").await; // an author of hr now
    assert_eq!(text(&dan, "#space-members").await, "Members of hr");
    fits_and_is_labelled(&dan, "hr's documents, for a new author").await;
    dan.goto("/console/queue?space=default").await;
    dan.wait_for(&format!("#queue tr[data-document='{doc}']"))
        .await;
    // The last space admin stays: sam's own demotion is refused, in a sentence.
    sam.click("#members tr[data-subject='user:sam'] .edit-member")
        .await;
    sam.wait_until(
        "the form holds sam",
        "return document.querySelector('#member-name').value === 'sam' \
         && document.querySelector('#role-space_admin').checked;",
    )
    .await;
    sam.click("#role-space_admin").await;
    sam.click("#role-author").await;
    sam.click("#save-member").await;
    sam.wait_for("#member-error .alert").await;
    let said = text(&sam, "#member-error .alert p").await;
    assert!(
        said.as_str()
            .unwrap()
            .starts_with("This is the space's last space admin"),
        "{said}"
    );
    assert_eq!(
        sam.eval("return document.querySelector('#member-name').value;")
            .await,
        "sam",
        "the form keeps what was typed"
    );
    // Removed, after a confirmation: dan's next page no longer offers hr.
    sam.click("#members tr[data-subject='user:dan'] .remove-member")
        .await;
    sam.client()
        .accept_alert()
        .await
        .expect("remove asks first");
    flash(&sam, "user:dan is no longer a member of hr.").await;
    dan.goto("/console/documents").await;
    dan.wait_for("#space-documents[data-space='default']").await;
    assert_eq!(offered(&dan).await, json!(["default"]));
    sam.close().await;
    dan.close().await;
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_url_of_a_space_the_caller_holds_no_role_in_shows_not_found() {
    let app = spawn_app().await;
    for key in ["a", "b"] {
        app.space(key).await;
    }
    app.grant("a", "user:ann", &["author", "space_admin"]).await;
    app.grant("b", "user:olga", &["author", "reviewer", "space_admin"])
        .await;
    app.pending_in("a", &app.member("ann"), "Secret A plan")
        .await;
    let olga = signed_in(&app, &app.member("olga"), Window::DESKTOP).await;
    for url in [
        "/console/documents?space=a",
        "/console/queue?space=a",
        "/console/spaces/a/members",
        "/console/documents?space=nope",
    ] {
        olga.goto(url).await;
        olga.wait_for("#content .alert").await;
        let code = olga
            .eval("return document.querySelector('#content .alert').dataset.code;")
            .await;
        assert_eq!(code, "NOT_FOUND", "{url}");
        let page = olga.eval("return document.body.innerText;").await;
        let page = page.as_str().unwrap();
        assert!(
            !page.contains("Secret A") && !page.contains("user:ann"),
            "{url}: {page}"
        );
        none_of(&olga, &["#member-form", "#create-form", "#space-members"]).await;
    }
    // The switcher names only olga's spaces, none of them selected.
    olga.goto("/console/documents?space=a").await;
    assert_eq!(offered(&olga).await, json!(["", "b"]));
    olga.screenshot("console-space-not-found-1280").await;
    olga.close().await;
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_title_search_finds_a_document_by_a_piece_of_its_title() {
    let app = spawn_app().await;
    app.space("hr").await;
    app.grant("hr", "user:cat", &["author"]).await;
    app.grant("hr", "user:ann", &["reviewer"]).await;
    app.pending_in("hr", &app.member("cat"), "Travel expenses")
        .await;
    // cat writes from hr's documents page: the draft is hr's.
    let cat = signed_in(&app, &app.member("cat"), Window::DESKTOP).await;
    cat.goto("/console/documents?space=hr").await;
    cat.wait_for("#create-form").await;
    assert_eq!(text(&cat, "#new-doc-in").await, "In the space hr.");
    cat.fill("#new-doc-title", "Parental Leave policy").await;
    cat.fill("#new-doc-body", "Sixteen weeks.").await;
    cat.click("#create").await;
    cat.wait_for("#submit").await;
    assert_eq!(text(&cat, "#doc-space").await, "hr");
    let doc = cat.eval("return location.pathname.split('/').pop();").await;
    lease_settled(&cat).await;
    cat.click("#submit").await;
    cat.wait_for("#flash").await;
    cat.close().await;

    let ann = signed_in(&app, &app.member("ann"), Window::PHONE).await;
    ann.goto("/console/documents?space=hr").await;
    ann.wait_for("#search-q").await;
    assert_eq!(
        texts(&ann, "#documents li > a").await,
        json!(["Parental Leave policy", "Travel expenses"])
    );
    ann.fill("#search-q", "tal LEA").await;
    ann.click("#search").await;
    ann.wait_for("#search-clear").await;
    assert_eq!(listed(&ann).await, json!([doc]));
    let search = ann.eval("return location.search;").await;
    assert_eq!(search, "?space=hr&q=tal+LEA");
    fits_and_is_labelled(&ann, "a title search").await;
    ann.screenshot("console-title-search-390").await;
    ann.click("#documents li > a").await;
    ann.wait_for("#approve").await;
    assert_eq!(text(&ann, "#doc-title").await, "Parental Leave policy");
    ann.goto("/console/documents?space=hr&q=nothing+like+it")
        .await;
    ann.wait_for("#no-documents").await;
    ann.close().await;
    app.finish().await;
}
