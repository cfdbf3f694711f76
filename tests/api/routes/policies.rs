//! Review policies through the API: versions and their validation, N-of-M votes in stages,
//! groups, and a policy changed after a submit. Claims, withdraw and the queue's filters are
//! in `claims.rs`.

use kh_review::web::auth::Role;
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::app::{spawn_app, TestApp, REVIEWER, REVIEWER2};
use crate::support::inspect::expect_error;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policies_are_versioned_readable_by_any_role_and_validated() {
    let app = spawn_app().await;
    let all: Value = app
        .get("/api/v1/policies", &app.author())
        .await
        .json()
        .await
        .unwrap();
    let default = &all["items"][0];
    assert_eq!(
        (default["name"].as_str(), default["version"].as_i64()),
        (Some("default"), Some(1))
    );
    assert_eq!(default["stages"][0]["required_approvals"], 1);
    let one = app.n_of_m("legal", 2).await;
    assert_eq!(one["version"], 1);
    let two = app.n_of_m("legal", 3).await;
    assert_eq!(
        (two["version"].as_i64(), two["claim_ttl_secs"].as_i64()),
        (Some(2), Some(1800))
    );
    let got: Value = app
        .get("/api/v1/policies/legal", &app.reviewer())
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        (
            got["version"].as_i64(),
            got["stages"][0]["required_approvals"].as_i64()
        ),
        (Some(2), Some(3))
    );
    assert!(got["reverify_after_secs"].is_null() && got["reverify_grace_secs"].is_null());
    let stages = json!([{"name": "review", "required_approvals": 1}]);
    let fresh = app
        .policy(
            "fresh",
            json!({"stages": stages, "reverify_after_secs": 86400}),
        )
        .await;
    assert_eq!(
        (
            fresh["reverify_after_secs"].as_i64(),
            fresh["reverify_grace_secs"].as_i64()
        ),
        (Some(86400), Some(604_800)),
        "a week of grace when left out"
    );
    let missing = app.get("/api/v1/policies/nope", &app.author()).await;
    expect_error(missing, StatusCode::NOT_FOUND, "NOT_FOUND").await;
    bad_policies_are_refused_naming_their_field(&app).await;
    app.finish().await;
}

/// Each bad policy is a 422 naming its field, and writes no version; the built-in policy
/// cannot be written, nor any policy by a reviewer.
async fn bad_policies_are_refused_naming_their_field(app: &TestApp) {
    let stage = |n: i64| json!({"name": "s", "required_approvals": n});
    for (body, field) in [
        (json!({"stages": []}), "stages"),
        (json!({"stages": [stage(0)]}), "required_approvals"),
        (json!({"stages": [stage(6)]}), "required_approvals"),
        (
            json!({"stages": [{"name": "  ", "required_approvals": 1}]}),
            "stages.name",
        ),
        (json!({"stages": [stage(1), stage(2)]}), "stages.name"),
        (
            json!({"stages": [stage(1)], "due_after_secs": 0}),
            "due_after_secs",
        ),
        (
            json!({"stages": [stage(1)], "claim_ttl_secs": 59}),
            "claim_ttl_secs",
        ),
        (json!({"stages": [stage(1)], "owner": "x"}), "owner"),
        (
            json!({"stages": [stage(1)], "reverify_after_secs": 59}),
            "reverify_after_secs",
        ),
        (
            json!({"stages": [stage(1)], "reverify_after_secs": 157_680_001_i64}),
            "reverify_after_secs",
        ),
        (
            json!({"stages": [stage(1)], "reverify_after_secs": 3600, "reverify_grace_secs": 59}),
            "reverify_grace_secs",
        ),
        (
            json!({"stages": [stage(1)], "reverify_grace_secs": 600}),
            "reverify_grace_secs",
        ),
    ] {
        let r = app
            .put("/api/v1/admin/policies/bad", &app.admin(), body.clone())
            .await;
        let e = expect_error(r, StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED").await;
        let message = e["message"].as_str().unwrap();
        assert!(message.contains(field), "{body}: {message}");
    }
    let r = app
        .put(
            "/api/v1/admin/policies/default",
            &app.admin(),
            json!({"stages": [stage(2)]}),
        )
        .await;
    expect_error(r, StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED").await;
    let r = app
        .put(
            "/api/v1/admin/policies/legal",
            &app.reviewer(),
            json!({"stages": [stage(2)]}),
        )
        .await;
    expect_error(r, StatusCode::FORBIDDEN, "FORBIDDEN").await;
    assert_eq!(
        app.count("SELECT count(*) FROM policy_versions WHERE name = 'bad'")
            .await,
        0
    );
    assert_eq!(
        app.count("SELECT count(*) FROM policy_versions WHERE name = 'default'")
            .await,
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_document_names_its_policy_and_an_unknown_one_is_refused() {
    let app = spawn_app().await;
    let before = app.count("SELECT count(*) FROM documents").await;
    let r = app
        .post(
            "/api/v1/documents",
            &app.author(),
            json!({"title": "t", "body": "b", "policy": "nope"}),
        )
        .await;
    let e = expect_error(r, StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED").await;
    assert!(e["message"].as_str().unwrap().contains("nope"), "{e}");
    assert_eq!(
        app.count("SELECT count(*) FROM documents").await,
        before,
        "nothing written"
    );
    app.n_of_m("legal", 2).await;
    let doc = app.create_document("Plain", "Body").await;
    let got: Value = app
        .get(&format!("/api/v1/documents/{}", doc.id), &app.author())
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(got["policy"], "default");
    let path = format!("/api/v1/documents/{}", doc.id);
    let r = app
        .put(&path, &app.author(), json!({"policy": "legal"}))
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    let edited: Value = r.json().await.unwrap();
    assert_eq!(edited["policy"], "legal");
    let r = app
        .put(&path, &app.author(), json!({"policy": "gone"}))
        .await;
    expect_error(r, StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED").await;
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_approvals_record_one_then_approve_once() {
    let app = spawn_app().await;
    app.n_of_m("two", 2).await;
    let (doc_id, review_id) = app.pending_under("two").await;
    let r = app.approve(&review_id, &app.reviewer()).await;
    assert_eq!(r.status(), StatusCode::OK);
    let first: Value = r.json().await.unwrap();
    assert_eq!(first["review"]["status"], "PENDING");
    assert_eq!(first["review"]["decided_by"], Value::Null);
    assert_eq!(
        first["review"]["stages"][0]["approvals"][0]["reviewer_id"],
        REVIEWER
    );
    assert_eq!(first["review"]["seats"], 1);
    assert_eq!(
        (
            first["document"]["status"].as_str(),
            first["document"]["version"].as_i64()
        ),
        (Some("PENDING_REVIEW"), Some(2))
    );
    let again = app.approve(&review_id, &app.reviewer()).await;
    expect_error(again, StatusCode::CONFLICT, "ALREADY_VOTED").await;
    let again = app.reject(&review_id, &app.reviewer()).await;
    expect_error(again, StatusCode::CONFLICT, "ALREADY_VOTED").await;
    let carol = app.token(REVIEWER2, &[Role::Reviewer]);
    let r = app.approve(&review_id, &carol).await;
    assert_eq!(r.status(), StatusCode::OK);
    let done: Value = r.json().await.unwrap();
    assert_eq!(
        (
            done["review"]["status"].as_str(),
            done["review"]["decided_by"].as_str()
        ),
        (Some("APPROVED"), Some(REVIEWER2))
    );
    assert_eq!(
        (
            done["document"]["status"].as_str(),
            done["document"]["version"].as_i64()
        ),
        (Some("APPROVED"), Some(3))
    );
    assert_eq!(
        app.events_of(&review_id, "review.approval_recorded").await,
        1
    );
    assert_eq!(app.events_of(&review_id, "document.approved").await, 1);
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) FROM review_votes WHERE review_id = '{review_id}'"
        ))
        .await,
        2
    );
    let events = app.wait_events(3, std::time::Duration::from_secs(10)).await;
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e["event_type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "document.submitted",
            "review.approval_recorded",
            "document.approved"
        ][..],
        "{doc_id}"
    );
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stages_advance_and_a_group_stage_refuses_others() {
    let app = spawn_app().await;
    app.then_legal("staged", 1).await;
    let (_, review_id) = app.pending_under("staged").await;
    let legal = app.reviewer_in("dave", &["legal"]);
    let r = app.approve(&review_id, &app.reviewer()).await;
    assert_eq!(r.status(), StatusCode::OK);
    let v: Value = r.json().await.unwrap();
    assert_eq!(
        (
            v["review"]["stage"].as_i64(),
            v["review"]["status"].as_str()
        ),
        (Some(1), Some("PENDING"))
    );
    for outsider in [
        app.reviewer_in(REVIEWER2, &["ops"]),
        app.token_in("root", &[Role::Admin], &[]),
    ] {
        let r = app.approve(&review_id, &outsider).await;
        let e = expect_error(r, StatusCode::FORBIDDEN, "NOT_ELIGIBLE").await;
        assert!(e["message"].as_str().unwrap().contains("legal"), "{e}");
    }
    let r = app
        .approve(&review_id, &app.reviewer_in(REVIEWER, &["legal"]))
        .await;
    expect_error(r, StatusCode::CONFLICT, "ALREADY_VOTED").await;
    let r = app.approve(&review_id, &legal).await;
    assert_eq!(r.status(), StatusCode::OK);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["review"]["status"], "APPROVED");
    assert_eq!(
        v["review"]["stages"][1]["approvals"][0]["reviewer_id"],
        "dave"
    );
    assert_eq!(app.events_of(&review_id, "review.stage_completed").await, 1);
    assert_eq!(app.events_of(&review_id, "document.approved").await, 1);
    assert_eq!(
        app.events_of(&review_id, "review.approval_recorded").await,
        0,
        "one vote, one event"
    );
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_changed_after_a_submit_does_not_change_that_review() {
    let app = spawn_app().await;
    app.n_of_m("p", 1).await;
    let (_, kept) = app.pending_under("p").await;
    app.n_of_m("p", 2).await;
    let (_, newer) = app.pending_under("p").await;
    let r = app.approve(&kept, &app.reviewer()).await;
    let v: Value = r.json().await.unwrap();
    assert_eq!(
        (
            v["review"]["status"].as_str(),
            v["review"]["policy_version"].as_i64()
        ),
        (Some("APPROVED"), Some(1))
    );
    let r = app.approve(&newer, &app.reviewer()).await;
    let v: Value = r.json().await.unwrap();
    assert_eq!(
        (
            v["review"]["status"].as_str(),
            v["review"]["policy_version"].as_i64()
        ),
        (Some("PENDING"), Some(2))
    );
    app.finish().await;
}
