//! A re-verification in the console, in a real headless Chromium: marked in the reviewer's
//! queue with its deadline, explained on the document's page, and approved there with a
//! sentence that says the document stays published.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;

use crate::support::app::{spawn_app_with, AppOptions};
use crate::support::browser::{Browser, Window};
use crate::support::console::{fits_and_is_labelled, signed_in, text};
use crate::support::inspect::wait_for;

/// Waits until the flash of an action starts with `said`.
async fn flash_starting(b: &Browser, said: &str) {
    let script = format!(
        "return (document.querySelector('#flash')?.innerText ?? '').startsWith({});",
        json!(said)
    );
    b.wait_until(&format!("a flash starting {said:?}"), &script)
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reviewer_reverifies_a_published_document_from_the_queue() {
    let app = spawn_app_with(AppOptions {
        configure: Some(Box::new(|s| {
            s.review.reverify_sweep = Duration::from_millis(100);
        })),
        ..Default::default()
    })
    .await;
    let stages = json!([{"name": "review", "required_approvals": 1}]);
    let body = json!({"stages": stages, "reverify_after_secs": 86400});
    app.policy("fresh", body).await;
    for window in [Window::DESKTOP, Window::PHONE] {
        let (doc, review) = app.pending_under("fresh").await;
        let r = app.approve(&review, &app.reviewer()).await;
        assert_eq!(r.status(), StatusCode::OK);
        // A day later, for the scheduler.
        sqlx::query("UPDATE documents SET verify_by = now() WHERE id = $1::uuid")
            .bind(&doc)
            .execute(&app.pg)
            .await
            .unwrap();
        let opened = format!(
            "SELECT count(*) FROM reviews WHERE document_id = '{doc}' AND kind = 'reverify'"
        );
        wait_for("the re-verification", Duration::from_secs(15), || async {
            (app.count(&opened).await == 1).then_some(())
        })
        .await;
        let b = signed_in(&app, &app.reviewer(), window).await;
        b.goto("/console/queue").await;
        let row = format!("tr[data-document='{doc}'][data-kind='reverify']");
        b.wait_for(&row).await;
        let due = text(&b, &format!("{row} .due")).await;
        assert!(due.as_str().unwrap().starts_with("expires "), "{due}");
        fits_and_is_labelled(&b, "queue with a re-verification").await;
        b.click(&format!("{row} a")).await;
        b.wait_for("#reverify").await;
        assert_eq!(text(&b, "#workflow-title").await, "Re-verification");
        assert_eq!(text(&b, "#doc-status").await, "APPROVED");
        b.click("#approve").await;
        flash_starting(&b, "Approved: re-verified; it stays published, due again ").await;
        assert!(
            text(&b, "#doc-verify-by")
                .await
                .as_str()
                .unwrap()
                .starts_with("re-verify by "),
            "verify_by shown"
        );
        let round = text(&b, "tr[data-round='2'] td").await;
        assert!(
            round
                .as_str()
                .unwrap()
                .ends_with("re-verification of version 3"),
            "{round}"
        );
        b.screenshot(&format!("console-reverified-{}", window.width))
            .await;
        b.close().await;
    }
    app.finish().await;
}
