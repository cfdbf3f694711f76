//! A document's life after its first approval: revisions (the published revision stays
//! live while the next is drafted and reviewed), archive, comments and the paged history.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::app::{spawn_app, TestApp};
use crate::support::inspect::expect_error;

async fn json_of(r: reqwest::Response, status: StatusCode) -> Value {
    let got = r.status();
    let body: Value = r.json().await.unwrap_or(Value::Null);
    assert_eq!(got, status, "{body}");
    body
}

async fn edit(app: &TestApp, id: &str, body: &str) -> Value {
    let r = app
        .put(
            &format!("/api/v1/documents/{id}"),
            &app.author(),
            json!({"body": body}),
        )
        .await;
    json_of(r, StatusCode::OK).await
}

#[tokio::test]
async fn a_revision_keeps_the_published_version_live_until_its_own_approval() {
    let app = spawn_app().await;
    let (id, _) = app
        .approved_document("Runbook", "Restart the indexer.")
        .await;
    // Edit v3 to v4: a revision, the approved v3 still published.
    let v4 = edit(&app, &id, "Restart the indexer, then drain the queue.").await;
    assert_eq!(
        (v4["status"].as_str(), v4["version"].as_i64()),
        (Some("DRAFT"), Some(4))
    );
    assert_eq!(v4["published_version"], 3);
    app.outbox_drained(Duration::from_secs(10)).await;
    let mine = json_of(
        app.get(&format!("/api/v1/documents/{id}"), &app.author())
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(mine["body"], "Restart the indexer, then drain the queue.");
    assert_eq!(
        mine["body_source"], "mongodb",
        "the projection holds the working copy"
    );
    let path = format!("/api/v1/documents/{id}/published");
    let live = json_of(app.get(&path, &app.reviewer()).await, StatusCode::OK).await;
    assert_eq!(
        (live["version"].as_i64(), live["working_version"].as_i64()),
        (Some(3), Some(4))
    );
    assert_eq!(live["body"], "Restart the indexer.");
    assert_eq!(live["body_source"], "mongodb");
    projection_holds_both(&app, &id).await;
    // The revision goes through review like a first version; its approval replaces v3.
    let second = app.submitted(&id).await;
    let under_review = json_of(app.get(&path, &app.reviewer()).await, StatusCode::OK).await;
    assert_eq!(under_review["version"], 3, "still v3 while v5 is reviewed");
    assert_eq!(
        app.approve(&second, &app.reviewer()).await.status(),
        StatusCode::OK
    );
    let now = json_of(app.get(&path, &app.reviewer()).await, StatusCode::OK).await;
    assert_eq!(
        (now["version"].as_i64(), now["working_version"].as_i64()),
        (Some(6), Some(6))
    );
    assert_eq!(now["body"], "Restart the indexer, then drain the queue.");
    assert_eq!(app.events_of(&second, "document.approved").await, 1);
    let replaced = app
        .count(&format!(
            "SELECT (payload->'data'->>'replaced_version')::int8 FROM outbox \
             WHERE payload->>'review_id' = '{second}' AND event_type = 'document.approved'"
        ))
        .await;
    assert_eq!(replaced, 3, "the event names the version it replaced");
    app.outbox_drained(Duration::from_secs(10)).await;
    let m = app.mongo_doc(&id).await.unwrap();
    assert_eq!(
        (
            m.get_i64("version").unwrap(),
            m.get_i64("published_version").unwrap()
        ),
        (6, 6)
    );
    assert!(
        m.get("working").is_some_and(|w| w.as_null().is_some()),
        "{m:?}"
    );
    history_shows_both_rounds(&app, &id).await;
    app.finish().await;
}

/// The history of a document reviewed twice, a page at a time.
async fn history_shows_both_rounds(app: &TestApp, id: &str) {
    let hist = format!("/api/v1/documents/{id}/reviews?limit=1");
    let first = json_of(app.get(&hist, &app.reviewer()).await, StatusCode::OK).await;
    assert_eq!(first["items"][0]["document_version"], 2);
    let cursor = first["next_cursor"]
        .as_str()
        .expect("a second page")
        .to_string();
    let rest = json_of(
        app.get(&format!("{hist}&cursor={cursor}"), &app.reviewer())
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(rest["items"][0]["document_version"], 5);
    assert_eq!(rest["items"][0]["status"], "APPROVED");
    assert!(rest["next_cursor"].is_null());
}

/// MongoDB holds both: the published revision on top (what indexers read), the draft beside.
async fn projection_holds_both(app: &TestApp, id: &str) {
    let m = app.mongo_doc(id).await.expect("projected");
    assert_eq!(m.get_i64("version").unwrap(), 3);
    assert_eq!(m.get_str("body").unwrap(), "Restart the indexer.");
    assert_eq!(m.get_str("status").unwrap(), "APPROVED");
    assert_eq!(
        (
            m.get_i64("head_version").unwrap(),
            m.get_i64("published_version").unwrap()
        ),
        (4, 3)
    );
    let working = m.get_document("working").unwrap();
    assert_eq!(working.get_i64("version").unwrap(), 4);
    assert_eq!(
        working.get_str("body").unwrap(),
        "Restart the indexer, then drain the queue."
    );
}

#[tokio::test]
async fn an_archive_is_terminal_takes_the_document_out_of_the_published_set_and_says_so() {
    let app = spawn_app().await;
    let (id, _) = app.approved_document("Runbook", "Old procedure.").await;
    let path = format!("/api/v1/documents/{id}/archive");
    let carol = app.token("carol", &[kh_review::web::auth::Role::Author]);
    expect_error(
        app.post(&path, &carol, json!({})).await,
        StatusCode::FORBIDDEN,
        "FORBIDDEN",
    )
    .await;
    let reason = json!({"reason": "replaced by v2 of the runbook"});
    let done = json_of(app.post(&path, &app.author(), reason).await, StatusCode::OK).await;
    assert_eq!(done["document"]["status"], "ARCHIVED");
    assert!(done["document"]["published_version"].is_null());
    assert!(done["review"].is_null(), "nothing was pending");
    let published = app
        .get(
            &format!("/api/v1/documents/{id}/published"),
            &app.reviewer(),
        )
        .await;
    expect_error(published, StatusCode::NOT_FOUND, "NOT_FOUND").await;
    for (r, what) in [
        (
            app.put(
                &format!("/api/v1/documents/{id}"),
                &app.author(),
                json!({"body": "x"}),
            )
            .await,
            "edit",
        ),
        (
            app.post(
                &format!("/api/v1/documents/{id}/submit"),
                &app.author(),
                json!({}),
            )
            .await,
            "submit",
        ),
        (app.post(&path, &app.admin(), json!({})).await, "archive"),
        (
            app.post(
                &format!("/api/v1/documents/{id}/comments"),
                &app.reviewer(),
                json!({"body": "hm"}),
            )
            .await,
            "comment",
        ),
    ] {
        let e = expect_error(r, StatusCode::CONFLICT, "INVALID_STATE").await;
        eprintln!("{what}: {}", e["message"]);
    }
    app.outbox_drained(Duration::from_secs(10)).await;
    let m = app.mongo_doc(&id).await.unwrap();
    assert_eq!(m.get_str("status").unwrap(), "ARCHIVED");
    assert!(
        m.get("published_version")
            .is_some_and(|v| v.as_null().is_some()),
        "{m:?}"
    );
    let event = app
        .count(&format!(
            "SELECT count(*) FROM outbox WHERE document_id = '{id}' AND event_type = 'document.archived' \
             AND payload->'data'->>'reason' = 'replaced by v2 of the runbook' \
             AND payload->'data'->>'archived_by' = 'alice' AND routing_key = 'document.archived'"
        ))
        .await;
    assert_eq!(event, 1);
    app.finish().await;
}

/// A pending document archived by an admin: its review is withdrawn and named.
#[tokio::test]
async fn an_admin_archives_a_pending_document_and_its_review_is_withdrawn() {
    let app = spawn_app().await;
    let (doc2, review2) = app.pending_review().await;
    let done = json_of(
        app.post(
            &format!("/api/v1/documents/{doc2}/archive"),
            &app.admin(),
            json!(null),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(done["review"]["status"], "WITHDRAWN");
    assert_eq!(app.events_of(&review2, "document.archived").await, 1);
    assert_eq!(
        app.events_of(&review2, "document.withdrawn").await,
        0,
        "no document.withdrawn"
    );
    let approve = app.approve(&review2, &app.reviewer()).await;
    expect_error(approve, StatusCode::CONFLICT, "INVALID_STATE").await;
    app.finish().await;
}
