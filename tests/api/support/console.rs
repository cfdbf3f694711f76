//! What the console's page tests share: a signed-in browser, the text of an element, the
//! checks every page passes (it fits the window, its controls are labelled), and a
//! document's events on the test's queue.

use std::time::Duration;

use serde_json::{json, Value};

use super::app::TestApp;
use super::browser::{Browser, Window};
use super::inspect::wait_for;

/// A browser signed in with `token` through a `/console#token=` link, at `window`: the
/// link is confirmed with its button.
pub async fn signed_in(app: &TestApp, token: &str, window: Window) -> Browser {
    let b = Browser::open_with(&app.address, window).await;
    b.goto(&format!("/console#token={token}")).await;
    b.click("#link-confirm").await;
    b.wait_for("#me").await;
    let url = b.eval("return location.href;").await;
    assert!(
        !url.as_str().unwrap().contains("token="),
        "the token leaves the address bar at once: {url}"
    );
    b
}

/// The text of the first element matching `css`, or null.
pub async fn text(b: &Browser, css: &str) -> Value {
    b.eval_with(
        "const e = document.querySelector(arguments[0]); return e ? e.innerText.trim() : null;",
        vec![json!(css)],
    )
    .await
}

/// Fails when the page is wider than the window (something overflows sideways) or a form
/// control has no label (a hidden input, which cannot have one, aside).
pub async fn fits_and_is_labelled(b: &Browser, page: &str) {
    let v = b
        .eval(
            "return { wide: document.documentElement.scrollWidth > window.innerWidth + 1,
                      width: document.documentElement.scrollWidth, window: window.innerWidth,
                      unlabelled: [...document.querySelectorAll('input:not([type=hidden]), textarea, select')]
                          .filter(e => e.labels.length === 0).map(e => e.id || e.name),
                      unnamed: [...document.querySelectorAll('button, a')]
                          .filter(e => !(e.innerText.trim() || e.getAttribute('aria-label')))
                          .map(e => e.outerHTML) };",
        )
        .await;
    assert_eq!(v["wide"], false, "{page} overflows the window: {v}");
    assert_eq!(
        v["unlabelled"],
        json!([]),
        "{page}: controls without a label: {v}"
    );
    assert_eq!(
        v["unnamed"],
        json!([]),
        "{page}: buttons or links without a name: {v}"
    );
}

/// The events of `doc` that reached the test's queue by `deadline`, once `n` have.
pub async fn events_of(app: &TestApp, doc: &str, n: usize) -> Vec<String> {
    let got = std::cell::RefCell::new(Vec::new());
    wait_for(
        &format!("{n} events of {doc}"),
        Duration::from_secs(15),
        || async {
            let more = app.take_events().await;
            let mut got = got.borrow_mut();
            got.extend(
                more.into_iter()
                    .filter(|(e, _)| e["document_id"] == doc)
                    .map(|(e, _)| e["event_type"].as_str().unwrap().to_string()),
            );
            (got.len() >= n).then_some(())
        },
    )
    .await;
    got.into_inner()
}

/// Waits until a document page's edit lease fragment is in and no request of it is under
/// way (it loads after the page, and again when typing takes the lease; each time it may
/// change height and move what is below it): a click aimed at a button below it before it
/// lands may land on nothing. A page with no edit section has none to wait for.
pub async fn lease_settled(b: &Browser) {
    b.wait_until(
        "the edit lease fragment",
        "const l = document.querySelector('#lease');
         return !l || (l.hasAttribute('data-lease') && !l.classList.contains('htmx-request'));",
    )
    .await;
}
