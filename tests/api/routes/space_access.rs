//! Who may do what in a space: memberships by user and by group, read on every request (a
//! revoked one holds from the next request on), members whose tokens carry no roles of
//! their own, the 403 of a member without the role against the 404 of a non-member, the
//! space admin's reach (its space only) and the platform admin's (every space). The
//! `default` space with the token's own roles is what every other test of `routes::` runs.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::app::{spawn_app, TestApp};
use crate::support::inspect::expect_error;

fn doc_path(id: &str) -> String {
    format!("/api/v1/documents/{id}")
}

async fn spaces_a_and_b(app: &TestApp) {
    app.space("a").await;
    app.space("b").await;
    app.grant("a", "user:ann", &["author"]).await;
    app.grant("b", "user:bo", &["author", "reviewer"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_membership_holds_from_the_next_request() {
    let app = spawn_app().await;
    spaces_a_and_b(&app).await;
    app.grant("a", "user:rita", &["reviewer"]).await;
    let (doc, _) = app.pending_in("a", &app.member("ann"), "Runbook").await;
    let rita = app.member("rita");
    let r = app.get(&doc_path(&doc), &rita).await;
    assert_eq!(r.status(), StatusCode::OK);
    // rita is also in B, so her token still passes: only A is gone.
    app.grant("b", "user:rita", &["reviewer"]).await;
    app.revoke("a", "user:rita").await;
    let r = app.get(&doc_path(&doc), &rita).await;
    expect_error(r, StatusCode::NOT_FOUND, "NOT_FOUND").await;
    // Her last membership gone, the same token is refused everywhere.
    app.revoke("b", "user:rita").await;
    let r = app.get(&doc_path(&doc), &rita).await;
    expect_error(r, StatusCode::FORBIDDEN, "FORBIDDEN").await;
    // Granted again, the next request reads it: nothing was cached either way.
    app.grant("a", "user:rita", &["reviewer"]).await;
    let r = app.get(&doc_path(&doc), &rita).await;
    assert_eq!(r.status(), StatusCode::OK);
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_membership_gives_its_roles_in_its_space_only() {
    let app = spawn_app().await;
    spaces_a_and_b(&app).await;
    app.grant("a", "group:g", &["reviewer"]).await;
    let (a_doc, a_review) = app.pending_in("a", &app.member("ann"), "In A").await;
    let (_, b_review) = app.pending_in("b", &app.member("bo"), "In B").await;
    let gail = app.member_in("gail", &["g"]);
    // Without the group in its token, gail is nobody.
    let r = app.get(&doc_path(&a_doc), &app.member("gail")).await;
    expect_error(r, StatusCode::FORBIDDEN, "FORBIDDEN").await;
    let r = app.approve(&b_review, &gail).await;
    expect_error(r, StatusCode::NOT_FOUND, "NOT_FOUND").await;
    assert_eq!(app.review_status_in_db(&b_review).await, "PENDING");
    let r = app.approve(&a_review, &gail).await;
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap());
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["document"]["status"], "APPROVED");
    assert_eq!(v["document"]["space"], "a");
    // A group's reviewer is no author there.
    let r = app.create_in("a", &gail, "Mine").await;
    expect_error(r, StatusCode::FORBIDDEN, "FORBIDDEN").await;
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_without_token_roles_creates_in_its_space_and_nowhere_else() {
    let app = spawn_app().await;
    spaces_a_and_b(&app).await;
    app.grant("a", "user:rita", &["reviewer"]).await;
    let ann = app.member("ann");
    let id = app.document_in("a", &ann, "Mine").await;
    let r = app.get(&doc_path(&id), &ann).await;
    let v: Value = r.json().await.unwrap();
    assert_eq!(
        (v["space"].clone(), v["author_id"].clone()),
        (json!("a"), json!("ann"))
    );
    let documents = app.count("SELECT count(*) FROM documents").await;
    // No space named: `default`, where ann has no role.
    let r = app
        .post(
            "/api/v1/documents",
            &ann,
            json!({"title": "t", "body": "b"}),
        )
        .await;
    expect_error(r, StatusCode::NOT_FOUND, "NOT_FOUND").await;
    // A space where she has no role, and one that does not exist, alike: 404.
    for space in ["b", "nowhere"] {
        let r = app.create_in(space, &ann, "Elsewhere").await;
        expect_error(r, StatusCode::NOT_FOUND, "NOT_FOUND").await;
    }
    // A member of A without the author role there: 403.
    let r = app.create_in("a", &app.member("rita"), "Not hers").await;
    expect_error(r, StatusCode::FORBIDDEN, "FORBIDDEN").await;
    // An author of B, no role in A: 404.
    let r = app.create_in("a", &app.member("bo"), "Not his").await;
    expect_error(r, StatusCode::NOT_FOUND, "NOT_FOUND").await;
    assert_eq!(app.count("SELECT count(*) FROM documents").await, documents);
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reviewer_of_a_space_who_is_no_author_there_cannot_submit_or_edit() {
    let app = spawn_app().await;
    spaces_a_and_b(&app).await;
    let ann = app.member("ann");
    let draft = app.document_in("a", &ann, "Draft").await;
    let (pending, _) = app.pending_in("a", &ann, "Pending").await;
    // Ann is now a reviewer of A only, and still an author in B (so an author somewhere).
    app.grant("a", "user:ann", &["reviewer"]).await;
    app.grant("b", "user:ann", &["author"]).await;
    let audit = app.count("SELECT count(*) FROM audit_log").await;
    let r = app
        .put(&doc_path(&draft), &ann, json!({"title": "Edited"}))
        .await;
    expect_error(r, StatusCode::FORBIDDEN, "FORBIDDEN").await;
    let r = app
        .post(&format!("{}/submit", doc_path(&draft)), &ann, json!({}))
        .await;
    expect_error(r, StatusCode::FORBIDDEN, "FORBIDDEN").await;
    let r = app
        .post(&format!("{}/withdraw", doc_path(&pending)), &ann, json!({}))
        .await;
    expect_error(r, StatusCode::FORBIDDEN, "FORBIDDEN").await;
    // A reviewer of A with no author role anywhere: refused before anything is read.
    app.grant("a", "user:rex", &["reviewer"]).await;
    let r = app
        .put(
            &doc_path(&pending),
            &app.member("rex"),
            json!({"title": "x"}),
        )
        .await;
    expect_error(r, StatusCode::FORBIDDEN, "FORBIDDEN").await;
    assert_eq!(app.count("SELECT count(*) FROM audit_log").await, audit);
    let r = app.get(&doc_path(&draft), &ann).await;
    let v: Value = r.json().await.unwrap();
    assert_eq!(
        (v["status"].clone(), v["version"].clone()),
        (json!("DRAFT"), json!(1))
    );
    app.finish().await;
}

async fn end_claim(app: &TestApp, review: &str, holder: &str, token: &str) -> reqwest::Response {
    app.delete(&format!("/api/v1/reviews/{review}/claims/{holder}"), token)
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_space_admin_archives_and_ends_claims_in_its_space_only() {
    let app = spawn_app().await;
    spaces_a_and_b(&app).await;
    app.grant("a", "user:sam", &["space_admin"]).await;
    app.grant("a", "user:rita", &["reviewer"]).await;
    app.grant("b", "user:rita", &["reviewer"]).await;
    let (ann, bo, sam, rita) = (
        app.member("ann"),
        app.member("bo"),
        app.member("sam"),
        app.member("rita"),
    );
    let (a_doc, a_review) = app.pending_in("a", &ann, "A's").await;
    let (b_doc, b_review) = app.pending_in("b", &bo, "B's").await;
    for review in [&a_review, &b_review] {
        let r = app.claim(review, &rita).await;
        assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap());
    }
    let r = end_claim(&app, &b_review, "rita", &sam).await;
    expect_error(r, StatusCode::NOT_FOUND, "NOT_FOUND").await;
    let r = app
        .post(&format!("{}/archive", doc_path(&b_doc)), &sam, json!({}))
        .await;
    expect_error(r, StatusCode::NOT_FOUND, "NOT_FOUND").await;
    let claims = "SELECT count(*) FROM review_claims";
    assert_eq!(app.count(claims).await, 2, "B's claim stands");
    let r = end_claim(&app, &a_review, "rita", &sam).await;
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap());
    assert_eq!(app.count(claims).await, 1, "A's claim ended");
    // A reviewer of A is no space admin there.
    let r = end_claim(&app, &b_review, "rita", &rita).await;
    expect_error(r, StatusCode::FORBIDDEN, "FORBIDDEN").await;
    let r = app
        .post(
            &format!("{}/archive", doc_path(&a_doc)),
            &sam,
            json!({"reason": "x"}),
        )
        .await;
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap());
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["document"]["status"], "ARCHIVED");
    let r = app.get(&doc_path(&b_doc), &bo).await;
    assert_eq!(r.json::<Value>().await.unwrap()["status"], "PENDING_REVIEW");
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_platform_admin_acts_in_every_space() {
    let app = spawn_app().await;
    spaces_a_and_b(&app).await;
    app.grant("a", "user:rita", &["reviewer"]).await;
    let admin = app.admin();
    let draft = app
        .document_in("b", &app.member("bo"), "Private draft")
        .await;
    let (a_doc, a_review) = app.pending_in("a", &app.member("ann"), "A's").await;
    let r = app.claim(&a_review, &app.member("rita")).await;
    assert_eq!(r.status(), StatusCode::OK);
    for id in [&draft, &a_doc] {
        let r = app.get(&doc_path(id), &admin).await;
        assert_eq!(r.status(), StatusCode::OK, "{id}");
    }
    let r = end_claim(&app, &a_review, "rita", &admin).await;
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap());
    let r = app.approve(&a_review, &admin).await;
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap());
    let r = app
        .post(&format!("{}/archive", doc_path(&draft)), &admin, json!({}))
        .await;
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap());
    let r = app.create_in("b", &admin, "The admin's").await;
    assert_eq!(
        r.status(),
        StatusCode::CREATED,
        "{}",
        r.text().await.unwrap()
    );
    app.finish().await;
}
