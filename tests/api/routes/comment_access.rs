//! A comment by a token that carries the author or the reviewer role: its memberships are
//! read by its transaction as it begins, not before (`Commenter`), as a vote's are. Who may
//! comment (whoever may read the document) is then judged under the document's row lock
//! with the memberships that transaction read: by a group whose name needs escaping in SQL,
//! by the token's own role, none in the document's space, a membership revoked; and the
//! answer about a held document (409 to a member, 404 to anyone else).

use kh_review::web::auth::Role;
use reqwest::{Response, StatusCode};
use serde_json::json;
use sqlx::Connection;

use crate::faults::review_lock::hold_document;
use crate::routes::vote_access::{spaces_and_rex, GROUP};
use crate::support::app::{spawn_app, TestApp};
use crate::support::inspect::expect_error;

async fn comment(app: &TestApp, doc: &str, token: &str, body: &str) -> Response {
    let path = format!("/api/v1/documents/{doc}/comments");
    app.post(&path, token, json!({ "body": body })).await
}

async fn comments_in_db(app: &TestApp, doc: &str) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM comments WHERE document_id = $1::uuid")
        .bind(doc)
        .fetch_one(&app.pg)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_comment_is_judged_by_the_memberships_its_transaction_reads() {
    let app = spawn_app().await;
    let rex = spaces_and_rex(&app).await;
    let (in_a, _) = app.pending_in("a", &app.member("ann"), "In A").await;
    let (in_b, _) = app.pending_in("b", &app.member("bo"), "In B").await;
    // No role in b: the document does not exist for rex.
    let r = comment(&app, &in_b, &rex, "Seen?").await;
    expect_error(r, StatusCode::NOT_FOUND, "NOT_FOUND").await;
    assert_eq!(comments_in_db(&app, &in_b).await, 0);
    // Reviewer in a by the group: the comment is written.
    let r = comment(&app, &in_a, &rex, "Looks right.").await;
    assert_eq!(
        r.status(),
        StatusCode::CREATED,
        "{}",
        r.text().await.unwrap()
    );
    // ann's token carries the author role; she is an author of a by her own membership.
    let ann = app.token("ann", &[Role::Author]);
    let r = comment(&app, &in_a, &ann, "Thanks.").await;
    assert_eq!(
        r.status(),
        StatusCode::CREATED,
        "{}",
        r.text().await.unwrap()
    );
    // The group's membership revoked: the next comment finds nothing.
    app.revoke("a", &format!("group:{GROUP}")).await;
    let r = comment(&app, &in_a, &rex, "Again?").await;
    expect_error(r, StatusCode::NOT_FOUND, "NOT_FOUND").await;
    assert_eq!(comments_in_db(&app, &in_a).await, 2);
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_document_is_told_to_a_member_and_hidden_from_anyone_else() {
    let app = spawn_app().await;
    let rex = spaces_and_rex(&app).await;
    let stranger = app.token_in("sam", &[Role::Reviewer], &["nobody"]);
    let (in_a, _) = app.pending_in("a", &app.member("ann"), "In A").await;
    // Both wait for the row until their lock_timeout, then are told.
    let (mut holder, _) = hold_document(&app, &in_a).await;
    let (member, other) = tokio::join!(
        comment(&app, &in_a, &rex, "Waiting."),
        comment(&app, &in_a, &stranger, "Waiting.")
    );
    expect_error(member, StatusCode::CONFLICT, "LOCK_NOT_ACQUIRED").await;
    expect_error(other, StatusCode::NOT_FOUND, "NOT_FOUND").await;
    sqlx::query("COMMIT").execute(&mut holder).await.unwrap();
    holder.close().await.unwrap();
    assert_eq!(comments_in_db(&app, &in_a).await, 0);
    app.finish().await;
}
