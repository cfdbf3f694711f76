//! The admin endpoints of the outbox refuse whoever is not an admin, unknown rows, rows
//! that are not parked and bad queries, each with its stable code, and change nothing then.

use std::time::Duration;

use kh_review::http::auth::Role;
use reqwest::StatusCode;
use serde_json::json;

use crate::faults::parked::{
    act, assert_approval_held_back, parked_list, parked_submission, with_max_attempts, ADMIN,
};
use crate::support::app::spawn_app_with;
use crate::support::inspect::expect_error;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_admins_act_on_parked_rows_and_bad_requests_change_nothing() {
    let app = spawn_app_with(with_max_attempts(1)).await;
    let (doc, id) = parked_submission(&app, 1).await;
    let admin = app.token(ADMIN, &[Role::Admin]);
    let reviewer = app.token("bob", &[Role::Reviewer, Role::Author]);
    for action in ["retry", "skip"] {
        let r = act(&app, id, action, &reviewer).await;
        expect_error(r, StatusCode::FORBIDDEN, "FORBIDDEN").await;
        let r = app
            .client
            .post(app.url(&format!("/api/v1/admin/outbox/{id}/{action}")))
            .send()
            .await
            .unwrap();
        expect_error(r, StatusCode::UNAUTHORIZED, "UNAUTHORIZED").await;
        for unknown in ["999999", "abc"] {
            let path = format!("/api/v1/admin/outbox/{unknown}/{action}");
            let r = app.post(&path, &admin, json!({})).await;
            expect_error(r, StatusCode::NOT_FOUND, "NOT_FOUND").await;
        }
        // The document's creation row was delivered long ago: not parked.
        let done: i64 = sqlx::query_scalar(
            "SELECT id FROM outbox WHERE document_id = $1::uuid AND event_type = 'document.created'",
        )
        .bind(&doc)
        .fetch_one(&app.pg)
        .await
        .unwrap();
        let r = act(&app, done, action, &admin).await;
        expect_error(r, StatusCode::CONFLICT, "INVALID_STATE").await;
    }
    let r = app
        .get("/api/v1/admin/outbox?state=parked", &reviewer)
        .await;
    expect_error(r, StatusCode::FORBIDDEN, "FORBIDDEN").await;
    for bad in [
        "state=stuck",
        "state=",
        "limit=0",
        "limit=101",
        "cursor=x",
        "cursor=-1",
    ] {
        let r = app
            .get(&format!("/api/v1/admin/outbox?{bad}"), &admin)
            .await;
        expect_error(r, StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED").await;
    }
    let items = parked_list(&app).await;
    assert_eq!(items.len(), 1);
    assert_eq!(
        (&items[0]["state"], &items[0]["attempts"]),
        (&json!("parked"), &json!(1))
    );
    let audited = app.count("SELECT count(*) FROM outbox_admin_actions").await;
    assert_eq!(audited, 0, "nothing was done, nothing audited");
    assert_approval_held_back(&app, &doc).await;
    assert_eq!(act(&app, id, "skip", &admin).await.status(), StatusCode::OK);
    app.wait_events(1, Duration::from_secs(10)).await;
    app.finish().await;
}
