//! Claims with seats, withdraw, and the queue's filters, through the API.

use kh_review::web::auth::Role;
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::app::{keyed, spawn_app, TestApp, REVIEWER, REVIEWER2};
use crate::support::inspect::expect_error;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claims_take_seats_and_a_full_stage_refuses_other_approvals() {
    let app = spawn_app().await;
    app.n_of_m("two", 2).await;
    let (_, review_id) = app.pending_under("two").await;
    let (bob, carol, dave) = (
        app.reviewer(),
        app.token(REVIEWER2, &[Role::Reviewer]),
        app.reviewer_in("dave", &[]),
    );
    let path = format!("/api/v1/reviews/{review_id}/claim");
    let r = app.post(&path, &bob, json!({"comment": "mine"})).await;
    expect_error(r, StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED").await;
    let r = app.claim(&review_id, &bob).await;
    assert_eq!(r.status(), StatusCode::OK);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["claims"][0]["reviewer_id"], REVIEWER);
    assert_eq!(
        app.claim(&review_id, &bob).await.status(),
        StatusCode::OK,
        "a renewal"
    );
    assert_eq!(app.claim(&review_id, &carol).await.status(), StatusCode::OK);
    let r = app.claim(&review_id, &dave).await;
    let retry: u64 = r.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=1800).contains(&retry), "{retry}");
    let e = expect_error(r, StatusCode::CONFLICT, "REVIEW_CLAIMED").await;
    let message = e["message"].as_str().unwrap();
    assert!(
        message.contains(REVIEWER) && message.contains(REVIEWER2),
        "{message}"
    );
    votes_against_held_seats(&app, &review_id, [bob, carol, dave]).await;
    app.finish().await;
}

/// Both seats of a 2-approval stage held by bob and carol: dave is refused until a seat
/// frees, a holder's vote uses its seat up, and the author may not claim.
async fn votes_against_held_seats(app: &TestApp, review_id: &str, [bob, carol, dave]: [String; 3]) {
    expect_error(
        app.approve(review_id, &dave).await,
        StatusCode::CONFLICT,
        "REVIEW_CLAIMED",
    )
    .await;
    assert_eq!(
        app.approve(review_id, &bob).await.status(),
        StatusCode::OK,
        "a holder votes"
    );
    expect_error(
        app.claim(review_id, &bob).await,
        StatusCode::CONFLICT,
        "ALREADY_VOTED",
    )
    .await;
    expect_error(
        app.approve(review_id, &dave).await,
        StatusCode::CONFLICT,
        "REVIEW_CLAIMED",
    )
    .await;
    let r = app
        .delete(&format!("/api/v1/reviews/{review_id}/claim"), &carol)
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    let r = app.approve(review_id, &dave).await;
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["review"]["status"], "APPROVED");
    assert_eq!(v["review"]["claims"], json!([]));
    expect_error(
        app.claim(review_id, &app.author()).await,
        StatusCode::FORBIDDEN,
        "FORBIDDEN",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claims_expire_without_a_sweeper_and_an_admin_ends_one_audited() {
    let app = spawn_app().await;
    let (_, review_id) = app.pending_review().await;
    let carol = app.token(REVIEWER2, &[Role::Reviewer]);
    assert_eq!(
        app.claim(&review_id, &app.reviewer()).await.status(),
        StatusCode::OK
    );
    expect_error(
        app.claim(&review_id, &carol).await,
        StatusCode::CONFLICT,
        "REVIEW_CLAIMED",
    )
    .await;
    // The only seat's claim runs out: it holds nothing, and nothing deleted it.
    app.count(&format!("WITH x AS (UPDATE review_claims SET expires_at = now() - interval '1 second' WHERE review_id = '{review_id}' RETURNING 1) SELECT count(*) FROM x")).await;
    let r = app.claim(&review_id, &carol).await;
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["claims"].as_array().unwrap().len(), 1, "{v}");
    assert_eq!(v["claims"][0]["reviewer_id"], REVIEWER2);
    let path = format!("/api/v1/reviews/{review_id}/claims/{REVIEWER2}");
    expect_error(
        app.delete(&path, &app.reviewer()).await,
        StatusCode::FORBIDDEN,
        "FORBIDDEN",
    )
    .await;
    let r = app.delete(&path, &app.admin()).await;
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["claims"], json!([]));
    expect_error(
        app.delete(&path, &app.admin()).await,
        StatusCode::NOT_FOUND,
        "NOT_FOUND",
    )
    .await;
    let audited = format!("SELECT count(*) FROM audit_log WHERE review_id = '{review_id}' AND action = 'claim_ended_by_admin' AND actor_id = 'root'");
    assert_eq!(app.count(&audited).await, 1);
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_claim_is_not_recorded_under_its_idempotency_key() {
    let app = spawn_app().await;
    let (_, review_id) = app.pending_review().await;
    let carol = app.token(REVIEWER2, &[Role::Reviewer]);
    assert_eq!(
        app.claim(&review_id, &app.reviewer()).await.status(),
        StatusCode::OK
    );
    let path = format!("/api/v1/reviews/{review_id}/claim");
    let r = keyed(&app, &path, &carol, "claim-1", json!({}))
        .send()
        .await
        .unwrap();
    expect_error(r, StatusCode::CONFLICT, "REVIEW_CLAIMED").await;
    app.delete(&path, &app.reviewer()).await;
    let r = keyed(&app, &path, &carol, "claim-1", json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK, "the retry ran again");
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_author_withdraws_and_a_new_submit_starts_with_no_votes() {
    let app = spawn_app().await;
    app.n_of_m("two", 2).await;
    let (doc_id, review_id) = app.pending_under("two").await;
    assert_eq!(
        app.approve(&review_id, &app.reviewer()).await.status(),
        StatusCode::OK
    );
    let r = app
        .post(
            &format!("/api/v1/documents/{doc_id}/withdraw"),
            &app.token("mallory", &[Role::Reviewer]),
            json!({}),
        )
        .await;
    expect_error(r, StatusCode::FORBIDDEN, "FORBIDDEN").await;
    let r = app.withdraw(&doc_id).await;
    assert_eq!(r.status(), StatusCode::OK);
    let v: Value = r.json().await.unwrap();
    assert_eq!(
        (
            v["document"]["status"].as_str(),
            v["document"]["version"].as_i64()
        ),
        (Some("DRAFT"), Some(3))
    );
    assert_eq!(v["review"]["status"], "WITHDRAWN");
    assert_eq!(
        v["review"]["stages"][0]["approvals"]
            .as_array()
            .unwrap()
            .len(),
        1,
        "the vote stays"
    );
    expect_error(
        app.withdraw(&doc_id).await,
        StatusCode::CONFLICT,
        "INVALID_STATE",
    )
    .await;
    let carol = app.token(REVIEWER2, &[Role::Reviewer]);
    expect_error(
        app.approve(&review_id, &carol).await,
        StatusCode::CONFLICT,
        "INVALID_STATE",
    )
    .await;
    assert_eq!(app.events_of(&review_id, "document.withdrawn").await, 1);
    let r = app
        .post(
            &format!("/api/v1/documents/{doc_id}/submit"),
            &app.author(),
            json!({}),
        )
        .await;
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["review"]["stages"][0]["approvals"], json!([]));
    assert_eq!(
        app.approve(v["review"]["id"].as_str().unwrap(), &app.reviewer())
            .await
            .status(),
        StatusCode::OK,
        "bob votes again on the new review"
    );
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_queue_filters_overdue_and_eligible_and_orders_by_due_date() {
    let app = spawn_app().await;
    app.due_after("later", 7200).await;
    app.due_after("sooner", 3600).await;
    app.policy(
        "legal",
        json!({"stages": [{"name": "l", "required_approvals": 1, "eligible_groups": ["legal"]}]}),
    )
    .await;
    let (_, none) = app.pending_review().await;
    let (_, later) = app.pending_under("later").await;
    let (_, sooner) = app.pending_under("sooner").await;
    let (_, legal) = app.pending_under("legal").await;
    let ids = |v: &Value| -> Vec<String> {
        v["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_str().unwrap().to_string())
            .collect()
    };
    let page: Value = app
        .get("/api/v1/reviews?order=due", &app.reviewer())
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        ids(&page)[..2],
        [sooner.clone(), later.clone()],
        "due first, soonest first"
    );
    assert!(ids(&page)[2..].contains(&none));
    let mine: Value = app
        .get("/api/v1/reviews?eligible=me", &app.reviewer())
        .await
        .json()
        .await
        .unwrap();
    assert!(!ids(&mine).contains(&legal), "bob is not in legal");
    let dave = app.reviewer_in("dave", &["legal"]);
    let theirs: Value = app
        .get("/api/v1/reviews?eligible=me", &dave)
        .await
        .json()
        .await
        .unwrap();
    assert!(ids(&theirs).contains(&legal));
    app.count(&format!("WITH x AS (UPDATE reviews SET due_at = now() - interval '1 minute' WHERE id = '{sooner}' RETURNING 1) SELECT count(*) FROM x")).await;
    let late: Value = app
        .get("/api/v1/reviews?overdue=true", &app.reviewer())
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(ids(&late), std::slice::from_ref(&sooner));
    assert_eq!(late["items"][0]["overdue"], true);
    let r = app
        .get(
            "/api/v1/reviews?overdue=true&status=APPROVED",
            &app.reviewer(),
        )
        .await;
    expect_error(r, StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED").await;
    for bad in ["order=soon", "eligible=you"] {
        let r = app
            .get(&format!("/api/v1/reviews?{bad}"), &app.reviewer())
            .await;
        expect_error(r, StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED").await;
    }
    assert_eq!(
        walk_by_due_date(&app).await,
        ids(&page),
        "paging by due date"
    );
    app.finish().await;
}

/// Every pending review, one page of one at a time, by due date.
async fn walk_by_due_date(app: &TestApp) -> Vec<String> {
    let (mut seen, mut cursor) = (Vec::new(), None::<String>);
    loop {
        let q = cursor
            .as_ref()
            .map_or(String::new(), |c| format!("&cursor={c}"));
        let path = format!("/api/v1/reviews?order=due&limit=1{q}");
        let p: Value = app.get(&path, &app.reviewer()).await.json().await.unwrap();
        let items = p["items"].as_array().unwrap();
        seen.extend(items.iter().map(|r| r["id"].as_str().unwrap().to_string()));
        match p["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => return seen,
        }
    }
}

/// A draft never submitted has no review to withdraw: its author, who reads it, is told the
/// state (409 `INVALID_STATE`, nothing written), anyone else still finds no document.
#[tokio::test]
async fn withdrawing_a_draft_never_submitted_is_an_invalid_state_for_its_author() {
    let app = spawn_app().await;
    let id = app
        .create_document("Draft", "Not yet.")
        .await
        .id
        .to_string();
    let audited = format!(
        "SELECT (SELECT count(*) FROM audit_log WHERE document_id = '{id}') \
                + (SELECT count(*) FROM outbox WHERE document_id = '{id}')"
    );
    let before = app.count(&audited).await;
    expect_error(
        app.withdraw(&id).await,
        StatusCode::CONFLICT,
        "INVALID_STATE",
    )
    .await;
    let other = app.token("mallory", &[Role::Author, Role::Reviewer]);
    let r = app
        .post(
            &format!("/api/v1/documents/{id}/withdraw"),
            &other,
            json!({}),
        )
        .await;
    expect_error(r, StatusCode::NOT_FOUND, "NOT_FOUND").await;
    let v: Value = app
        .get(&format!("/api/v1/documents/{id}"), &app.author())
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        (v["status"].as_str(), v["version"].as_i64()),
        (Some("DRAFT"), Some(1))
    );
    assert_eq!(app.count(&audited).await, before, "nothing audited or sent");
    app.finish().await;
}
