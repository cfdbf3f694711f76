//! A vote (or a claim) by a token that carries the reviewer role: its memberships are read
//! by its transaction as it begins, not before (`Voter`). What they give must be what reading them
//! first gives: the spaces its transaction sees, its roles in the review's space (a
//! membership by group whose name needs escaping in SQL, one revoked, one without the
//! reviewer role), the answer about a held lock (409 to a member, 404 to anyone else), and
//! the same through the row lock's slower way, when the review's document is held.

use kh_review::web::auth::Role;
use reqwest::StatusCode;
use serde_json::{json, Value};
use sqlx::Connection;

use crate::faults::review_lock::{approve_later_as, hold_document, someone_waits_for_a_lock};
use crate::support::app::{spawn_app, TestApp};
use crate::support::inspect::{expect_error, redis_cmd};

/// A group name that a SQL literal must escape: a quote and a backslash.
pub(crate) const GROUP: &str = "o'ne\\il";

/// Spaces `a` (ann its author, the group [`GROUP`] its reviewer) and `b` (bo its author),
/// and rex's token: the reviewer role of its own (it counts in `default`) and [`GROUP`].
pub(crate) async fn spaces_and_rex(app: &TestApp) -> String {
    app.space("a").await;
    app.space("b").await;
    app.grant("a", "user:ann", &["author"]).await;
    app.grant("a", &format!("group:{GROUP}"), &["reviewer"])
        .await;
    app.grant("b", "user:bo", &["author"]).await;
    app.token_in("rex", &[Role::Reviewer], &[GROUP])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reviewer_token_votes_by_the_memberships_its_transaction_reads() {
    let app = spawn_app().await;
    let rex = spaces_and_rex(&app).await;
    let (_, in_a) = app.pending_in("a", &app.member("ann"), "In A").await;
    let (_, in_b) = app.pending_in("b", &app.member("bo"), "In B").await;
    // No role in b: the review does not exist for rex.
    let r = app.approve(&in_b, &rex).await;
    expect_error(r, StatusCode::NOT_FOUND, "NOT_FOUND").await;
    assert_eq!(app.review_status_in_db(&in_b).await, "PENDING");
    // Reviewer in a by the group: approved.
    let r = app.approve(&in_a, &rex).await;
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap());
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["document"]["status"], "APPROVED");
    assert_eq!(v["document"]["space"], "a");
    // The group's membership revoked: the next vote in a finds nothing.
    app.revoke("a", &format!("group:{GROUP}")).await;
    let (_, again) = app.pending_in("a", &app.member("ann"), "Again").await;
    let r = app.approve(&again, &rex).await;
    expect_error(r, StatusCode::NOT_FOUND, "NOT_FOUND").await;
    // An author of a sees the review, but may not vote on it.
    app.grant("a", "user:rex", &["author"]).await;
    let path = format!("/api/v1/reviews/{again}/reject");
    let r = app.post(&path, &rex, json!({"reason": "no"})).await;
    expect_error(r, StatusCode::FORBIDDEN, "FORBIDDEN").await;
    // Reviewer there by its own membership: its rejection holds.
    app.revoke("a", "user:rex").await;
    app.grant("a", "user:rex", &["reviewer"]).await;
    let r = app.post(&path, &rex, json!({"reason": "no"})).await;
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap());
    assert_eq!(app.review_status_in_db(&again).await, "REJECTED");
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_lock_is_told_to_a_member_and_hidden_from_anyone_else() {
    let app = spawn_app().await;
    let rex = spaces_and_rex(&app).await;
    let (_, in_a) = app.pending_in("a", &app.member("ann"), "In A").await;
    let key = app.lock_key_review(&in_a);
    redis_cmd(&app.redis, &["SET", &key, "someone-else", "PX", "60000"]).await;
    let r = app.approve(&in_a, &rex).await;
    expect_error(r, StatusCode::CONFLICT, "LOCK_NOT_ACQUIRED").await;
    let stranger = app.token_in("sam", &[Role::Reviewer], &["nobody"]);
    let r = app.approve(&in_a, &stranger).await;
    expect_error(r, StatusCode::NOT_FOUND, "NOT_FOUND").await;
    redis_cmd(&app.redis, &["DEL", &key]).await;
    assert_eq!(app.review_status_in_db(&in_a).await, "PENDING");
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vote_that_waits_for_the_document_reads_the_memberships_its_transaction_read() {
    let app = spawn_app().await;
    let rex = spaces_and_rex(&app).await;
    let (doc, in_a) = app.pending_in("a", &app.member("ann"), "In A").await;
    // The document held: the one statement that locks both skips it, and the vote takes
    // the slower way (the document waited for, then the review).
    let (mut holder, pid) = hold_document(&app, &doc).await;
    let vote = approve_later_as(&app, &in_a, rex);
    someone_waits_for_a_lock(&app, pid).await;
    sqlx::query("COMMIT").execute(&mut holder).await.unwrap();
    holder.close().await.unwrap();
    assert_eq!(vote.await.unwrap(), StatusCode::OK);
    assert_eq!(app.review_status_in_db(&in_a).await, "APPROVED");
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reviewer_token_claims_by_the_memberships_its_transaction_reads() {
    let app = spawn_app().await;
    let rex = spaces_and_rex(&app).await;
    let (doc, in_a) = app.pending_in("a", &app.member("ann"), "In A").await;
    let (_, in_b) = app.pending_in("b", &app.member("bo"), "In B").await;
    let r = app.claim(&in_b, &rex).await;
    expect_error(r, StatusCode::NOT_FOUND, "NOT_FOUND").await;
    let r = app.claim(&in_a, &rex).await;
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap());
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["claims"][0]["reviewer_id"], "rex", "{v}");
    // The document held past lock_timeout: told to a member, hidden from anyone else.
    let (mut holder, _) = hold_document(&app, &doc).await;
    let r = app.claim(&in_a, &rex).await;
    expect_error(r, StatusCode::CONFLICT, "LOCK_NOT_ACQUIRED").await;
    let stranger = app.token_in("sam", &[Role::Reviewer], &["nobody"]);
    let r = app.claim(&in_a, &stranger).await;
    expect_error(r, StatusCode::NOT_FOUND, "NOT_FOUND").await;
    sqlx::query("COMMIT").execute(&mut holder).await.unwrap();
    holder.close().await.unwrap();
    // One claim written, in the review's space, and its audit row; nothing in b.
    let sql = "SELECT count(*) FROM review_claims c JOIN reviews r ON r.id = c.review_id \
               WHERE c.space_id = 'a' AND c.reviewer_id = 'rex'";
    assert_eq!(app.count(sql).await, 1);
    let sql = format!("SELECT count(*) FROM review_claims WHERE review_id = '{in_b}'");
    assert_eq!(app.count(&sql).await, 0);
    let sql = format!("SELECT count(*) FROM audit_log WHERE review_id = '{in_a}' AND action = 'claim' AND space_id = 'a'");
    assert_eq!(app.count(&sql).await, 1);
    app.finish().await;
}
