//! The review workflow in the console, in a real headless Chromium at 1280 and 390 px: a
//! reviewer claims a seat and gives it back; refused votes read as sentences (a seat held
//! by another, a second approval, a stage of another group); the author withdraws; an admin
//! writes a policy and sees the API's 422 beside the form.

use kh_review::web::auth::Role;
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::app::{spawn_app, REVIEWER2};
use crate::support::browser::{Browser, Window};
use crate::support::console::{events_of, fits_and_is_labelled, lease_settled, signed_in, text};

/// What the alert of a refused action says, once it shows.
async fn refusal(b: &Browser) -> String {
    b.wait_for("#outcome .alert").await;
    let said = text(b, "#outcome .alert p").await;
    said.as_str().unwrap().to_string()
}

/// Waits until the flash of an action reads `said` (an earlier action's flash may still
/// show); fails with the page's screenshot after the deadline.
async fn flash(b: &Browser, said: &str) {
    let script = format!(
        "return document.querySelector('#flash')?.innerText === {};",
        json!(said)
    );
    b.wait_until(&format!("the flash {said:?}"), &script).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reviewer_claims_a_seat_and_gives_it_back() {
    let app = spawn_app().await;
    let (doc, review) = app.pending_review().await;
    for window in [Window::DESKTOP, Window::PHONE] {
        let w = window.width;
        let b = signed_in(&app, &app.reviewer(), window).await;
        b.goto("/console/queue").await;
        let row = format!("tr[data-document='{doc}']");
        b.wait_for(&row).await;
        assert_eq!(text(&b, &format!("{row} .policy")).await, "default v1");
        assert_eq!(text(&b, &format!("{row} .seats")).await, "0 of 1 held");
        fits_and_is_labelled(&b, "queue with workflow").await;
        b.click(&format!("{row} a")).await;
        b.wait_for("#claim").await;
        assert_eq!(text(&b, "#review-policy").await, "default v1");
        assert_eq!(text(&b, "#review-stage").await, "review (1 of 1)");
        assert_eq!(text(&b, "#seats").await, "0 of 1 seat held");
        b.click("#claim").await;
        b.wait_for("#holders").await;
        let until: String = sqlx::query_scalar(
            "SELECT to_char(expires_at AT TIME ZONE 'UTC', 'HH24:MI') FROM review_claims \
             WHERE review_id = $1::uuid AND reviewer_id = 'bob'",
        )
        .bind(&review)
        .fetch_one(&app.pg)
        .await
        .unwrap();
        flash(&b, &format!("You hold a seat until {until} UTC.")).await;
        assert_eq!(text(&b, "#seats").await, "1 of 1 seat held");
        let holder = text(&b, "#holders li[data-holder='bob']").await;
        assert!(
            holder.as_str().unwrap().starts_with("bob until 20"),
            "{holder}"
        );
        assert_eq!(
            b.eval("return !document.querySelector('#claim');").await,
            true
        );
        fits_and_is_labelled(&b, "claimed review").await;
        b.screenshot(&format!("console-claimed-{w}")).await;
        b.click("#give-back").await;
        flash(&b, "You gave your seat back.").await;
        assert_eq!(text(&b, "#seats").await, "0 of 1 seat held");
        b.wait_for("#claim").await;
        let left = "SELECT count(*) FROM review_claims WHERE reviewer_id = 'bob'";
        assert_eq!(app.count(left).await, 0);
        b.close().await;
    }
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_seat_held_by_another_is_named_with_its_expiry() {
    let app = spawn_app().await;
    // Carol holds the only seat of a default review; bob's approval is refused.
    let (doc, review) = app.pending_review().await;
    let carol = app.token(REVIEWER2, &[Role::Reviewer]);
    let r = app
        .post(
            &format!("/api/v1/reviews/{review}/claim"),
            &carol,
            json!({}),
        )
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    let until: String = sqlx::query_scalar(
        "SELECT to_char(expires_at AT TIME ZONE 'UTC', 'HH24:MI') FROM review_claims \
         WHERE review_id = $1::uuid",
    )
    .bind(&review)
    .fetch_one(&app.pg)
    .await
    .unwrap();
    let b = signed_in(&app, &app.reviewer(), Window::DESKTOP).await;
    b.goto(&format!("/console/documents/{doc}")).await;
    b.wait_for("#seats").await;
    assert_eq!(text(&b, "#seats").await, "1 of 1 seat held");
    b.click("#approve").await;
    let said = refusal(&b).await;
    assert_eq!(
        said,
        format!("carol holds the only seat until {until} UTC.")
    );
    b.screenshot("console-refused-claimed").await;
    b.close().await;
    assert_eq!(app.review_status_in_db(&review).await, "PENDING");
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_approval_and_a_stage_of_another_group_read_as_sentences() {
    let app = spawn_app().await;
    let carol = app.token(REVIEWER2, &[Role::Reviewer]);
    // Two stages: two approvals of anyone, then one of the legal group.
    app.then_legal("two-step", 2).await;
    let (doc, review) = app.pending_under("two-step").await;
    let page = format!("/console/documents/{doc}");
    let (first, second) = (
        signed_in(&app, &app.reviewer(), Window::PHONE).await,
        signed_in(&app, &app.reviewer(), Window::DESKTOP).await,
    );
    for b in [&first, &second] {
        b.goto(&page).await;
        b.wait_for("#approve").await;
    }
    assert_eq!(text(&first, "#review-stage").await, "review (1 of 2)");
    first.click("#approve").await;
    flash(&first, "Approved: 1 of 2 approvals in stage review.").await;
    assert_eq!(text(&first, "#my-vote").await, "You approved this review.");
    let approvals = text(&first, "li[data-stage='review'] .approvals").await;
    assert!(
        approvals.as_str().unwrap().contains("approved by bob at"),
        "{approvals}"
    );
    fits_and_is_labelled(&first, "review with a vote").await;
    first.screenshot("console-approved-once-390").await;
    second.click("#approve").await;
    assert_eq!(refusal(&second).await, "You already approved this review.");
    second.screenshot("console-refused-already-voted").await;
    first.close().await;
    second.close().await;

    // Carol completes the first stage; dan, in no group, is refused in the legal stage.
    assert_eq!(app.approve(&review, &carol).await.status(), StatusCode::OK);
    let dan = app.reviewer_in("dan", &["finance"]);
    let b = signed_in(&app, &dan, Window::PHONE).await;
    b.goto(&page).await;
    b.wait_for("#approve").await;
    assert_eq!(text(&b, "#review-stage").await, "legal (2 of 2)");
    assert_eq!(
        b.eval("return !document.querySelector('#claim');").await,
        true
    );
    b.click("#approve").await;
    assert_eq!(
        refusal(&b).await,
        "Only the legal group votes in this stage."
    );
    fits_and_is_labelled(&b, "refused, not eligible").await;
    b.screenshot("console-refused-not-eligible-390").await;
    b.close().await;
    // Someone of the legal group may: the last approval.
    let erin = app.reviewer_in("erin", &["legal"]);
    assert_eq!(app.approve(&review, &erin).await.status(), StatusCode::OK);
    assert_eq!(app.review_status_in_db(&review).await, "APPROVED");
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_author_creates_with_a_policy_submits_and_withdraws() {
    let app = spawn_app().await;
    let stages =
        json!({"stages": [{"name": "legal", "required_approvals": 2}], "due_after_secs": 3600});
    app.policy("legal", stages).await;
    for window in [Window::PHONE, Window::DESKTOP] {
        let w = window.width;
        let b = signed_in(&app, &app.author(), window).await;
        b.goto("/console/mine").await;
        b.wait_for("#create-form").await;
        b.fill("#new-doc-title", &format!("Supplier contract {w}"))
            .await;
        b.fill("#new-doc-body", "Terms and prices.").await;
        b.eval("document.querySelector('#new-doc-policy').value = 'legal';")
            .await;
        fits_and_is_labelled(&b, "my documents with a policy").await;
        b.click("#create").await;
        b.wait_for("#submit").await;
        assert_eq!(text(&b, "#doc-policy").await, "legal");
        let doc = b.eval("return location.pathname.split('/').pop();").await;
        let doc = doc.as_str().unwrap().to_string();
        lease_settled(&b).await;
        b.click("#submit").await;
        b.wait_for("#withdraw").await;
        assert_eq!(text(&b, "#review-policy").await, "legal v1");
        assert_eq!(text(&b, "#seats").await, "0 of 2 seats held");
        let due = text(&b, "#review-due").await;
        assert!(due.as_str().unwrap().starts_with("due 20"), "{due}");
        fits_and_is_labelled(&b, "pending, the author's").await;
        b.screenshot(&format!("console-withdrawable-{w}")).await;
        b.click("#withdraw").await;
        flash(&b, "Withdrawn: the document is DRAFT again.").await;
        assert_eq!(text(&b, "#doc-status").await, "DRAFT");
        b.wait_for("#edit-form").await;
        let events = events_of(&app, &doc, 2).await;
        assert_eq!(events, ["document.submitted", "document.withdrawn"]);
        let withdrawn = format!(
            "SELECT count(*) FROM reviews WHERE document_id = '{doc}' AND status = 'WITHDRAWN'"
        );
        assert_eq!(app.count(&withdrawn).await, 1);
        b.close().await;
    }
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_writes_a_policy_and_sees_the_api_refusal_beside_the_form() {
    let app = spawn_app().await;
    let admin = app.admin();
    for window in [Window::DESKTOP, Window::PHONE] {
        let w = window.width;
        let name = format!("legal-{w}");
        let b = signed_in(&app, &admin, window).await;
        b.goto("/console/policies").await;
        b.wait_for("tr[data-policy='default']").await;
        b.fill("#policy-name", &name).await;
        b.fill("#stage1-name", "review").await;
        b.fill("#stage1-approvals", "2").await;
        b.fill("#stage2-name", "legal").await;
        b.fill("#stage2-approvals", "1").await;
        b.fill("#stage2-groups", "legal, finance").await;
        b.fill("#policy-due", "86400").await;
        fits_and_is_labelled(&b, "policies").await;
        b.screenshot(&format!("console-policy-form-{w}")).await;
        b.click("#save-policy").await;
        flash(&b, &format!("Saved policy {name}: version 1.")).await;
        b.wait_for(&format!("tr[data-policy='{name}'][data-version='1']"))
            .await;
        let r = app.get(&format!("/api/v1/policies/{name}"), &admin).await;
        let v: Value = r.json().await.unwrap();
        assert_eq!(
            v["stages"][1]["eligible_groups"],
            json!(["legal", "finance"])
        );
        assert_eq!(v["stages"][0]["required_approvals"], 2);
        assert_eq!(v["due_after_secs"], 86400);
        // The next version with a stage of 0 approvals: the page's check removed, the
        // API's refusal shows beside the form, which keeps what was typed.
        b.click(&format!("button[aria-label='Edit policy {name}']"))
            .await;
        b.wait_until(
            "the form to hold the policy",
            "return document.querySelector('#stage2-groups')?.value === 'legal, finance';",
        )
        .await;
        b.eval("document.querySelector('#stage2-approvals').removeAttribute('min');")
            .await;
        b.fill("#stage2-approvals", "0").await;
        b.click("#save-policy").await;
        b.wait_for("#policy-error .alert").await;
        let said = text(&b, "#policy-error .alert p").await;
        let bad = json!({"stages": [{"name": "review", "required_approvals": 2},
            {"name": "legal", "required_approvals": 0}]});
        let api: Value = app
            .put(&format!("/api/v1/admin/policies/{name}"), &admin, bad)
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(said, api["message"], "the API's message");
        assert!(
            said.as_str().unwrap().contains("required_approvals"),
            "{said}"
        );
        assert_eq!(
            b.eval("return document.querySelector('#stage2-approvals').value;")
                .await,
            "0"
        );
        fits_and_is_labelled(&b, "policy refused").await;
        b.screenshot(&format!("console-policy-refused-{w}")).await;
        let versions = format!("SELECT count(*) FROM policy_versions WHERE name = '{name}'");
        assert_eq!(app.count(&versions).await, 1, "nothing written");
        b.close().await;
    }
    app.finish().await;
}
