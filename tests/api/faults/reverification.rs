//! The re-verification timeline with three instances, one of them stopped and another
//! started in its place meanwhile: each document due gets exactly one re-verification
//! (`document.reverification_due`), one approved stays published with its `verify_by` moved
//! on (`document.verified`), one nobody decides expires once (`document.expired`) and is then
//! revised and approved like a rejected one. The clock is moved by moving the rows' times
//! back (`verify_by`, a re-verification's `due_at`): the scheduler reads the database's
//! `now()`, so that is what "later" is to it.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::app::{spawn_app_with, AppOptions, TestApp};
use crate::support::inspect::{expect_error, wait_for};

fn scheduling() -> AppOptions {
    AppOptions {
        configure: Some(Box::new(|s| {
            s.review.reverify_sweep = Duration::from_millis(100);
        })),
        ..Default::default()
    }
}

impl TestApp {
    /// Outbox rows of `event_type` about `document_id`.
    async fn document_events(&self, document_id: &str, event_type: &str) -> i64 {
        self.count(&format!(
            "SELECT count(*) FROM outbox WHERE document_id = '{document_id}' \
             AND event_type = '{event_type}'"
        ))
        .await
    }

    async fn document(&self, id: &str) -> Value {
        let r = self
            .get(&format!("/api/v1/documents/{id}"), &self.author())
            .await;
        assert_eq!(r.status(), StatusCode::OK);
        r.json().await.unwrap()
    }

    /// Runs `sql` as the test's owner connection (the clock moved by moving rows' times).
    async fn exec(&self, sql: &str) {
        sqlx::query(sqlx::AssertSqlSafe(sql.to_owned()))
            .execute(&self.pg)
            .await
            .unwrap();
    }

    /// A document approved under `policy`: its id.
    async fn approved_under(&self, policy: &str) -> String {
        let (id, review) = self.pending_under(policy).await;
        let r = self.approve(&review, &self.reviewer()).await;
        assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap());
        id
    }

    /// Waits until `document_id` has an event of `event_type`.
    async fn wait_event(&self, document_id: &str, event_type: &str) {
        wait_for(event_type, Duration::from_secs(15), || async {
            (self.document_events(document_id, event_type).await > 0).then_some(())
        })
        .await;
    }

    /// The document's current review, as its history lists it.
    async fn current_review(&self, document_id: &str) -> Value {
        let doc = self.document(document_id).await;
        let id = doc["current_review_id"].clone();
        let path = format!("/api/v1/documents/{document_id}/reviews");
        let page: Value = self
            .get(&path, &self.reviewer())
            .await
            .json()
            .await
            .unwrap();
        let items = page["items"].as_array().expect("a page of reviews");
        items
            .iter()
            .find(|r| r["id"] == id)
            .expect("listed")
            .clone()
    }

    /// The open re-verification of `document_id`: its id.
    async fn reverification_of(&self, document_id: &str) -> String {
        let r = self.current_review(document_id).await;
        assert_eq!(r["kind"], "reverify", "{r}");
        assert_eq!(r["status"], "PENDING");
        r["id"].as_str().unwrap().to_string()
    }
}

/// Seconds from RFC 3339 `a` to `b`.
fn secs_between(a: &Value, b: &Value) -> i64 {
    let t = |v: &Value| chrono::DateTime::parse_from_rfc3339(v.as_str().unwrap()).unwrap();
    (t(b) - t(a)).num_seconds()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn each_due_document_is_reverified_or_expires_once_with_three_instances_one_restarted() {
    let a = spawn_app_with(scheduling()).await;
    let with_a = || AppOptions {
        share_with: Some(a.shared.clone()),
        ..scheduling()
    };
    let (b, c) = (
        spawn_app_with(with_a()).await,
        spawn_app_with(with_a()).await,
    );
    let stages = json!([{"name": "review", "required_approvals": 1}]);
    let body = json!({"stages": stages, "reverify_after_secs": 3600, "reverify_grace_secs": 600});
    a.policy("fresh", body).await;
    let (kept, lapsing) = (
        a.approved_under("fresh").await,
        a.approved_under("fresh").await,
    );
    let doc = a.document(&kept).await;
    assert_eq!(secs_between(&doc["updated_at"], &doc["verify_by"]), 3600);
    assert_eq!(
        a.document_events(&kept, "document.reverification_due")
            .await,
        0
    );
    // An hour later, for the scheduler: both are due.
    a.exec(&format!("UPDATE documents SET verify_by = now() - interval '1 second' WHERE id IN ('{kept}', '{lapsing}')")).await;
    a.wait_event(&kept, "document.reverification_due").await;
    b.stop().await;
    let d = spawn_app_with(with_a()).await;
    a.wait_event(&lapsing, "document.reverification_due").await;
    reverified_while_open(&a, &d, &kept).await;
    // Ten minutes later: the lapsing one's deadline passed.
    a.exec(&format!("UPDATE reviews SET due_at = now() - interval '1 second' WHERE document_id = '{lapsing}' AND kind = 'reverify'")).await;
    a.wait_event(&lapsing, "document.expired").await;
    let expired_at = format!("SELECT count(*) FROM audit_log WHERE document_id = '{lapsing}' AND action = 'expire' AND at < now() - interval '500 milliseconds'");
    wait_for(
        "half a second after the expiry",
        Duration::from_secs(5),
        || async { (a.count(&expired_at).await == 1).then_some(()) },
    )
    .await;
    for (doc, event, n) in [
        (&kept, "document.reverification_due", 1),
        (&kept, "document.verified", 1),
        (&kept, "document.expired", 0),
        (&lapsing, "document.reverification_due", 1),
        (&lapsing, "document.expired", 1),
        (&lapsing, "document.verified", 0),
    ] {
        assert_eq!(a.document_events(doc, event).await, n, "{event} of {doc}");
    }
    revised_after_expiry(&a, &lapsing).await;
    a.outbox_drained(Duration::from_secs(15)).await;
    for app in [c, d] {
        app.stop().await;
    }
    a.finish().await;
}

/// The open re-verification of `kept` (due, opened by the scheduler): still published at
/// its version, not the author's to approve. The author starts a revision meanwhile, which
/// cannot be submitted while the re-verification is open; approved by a reviewer on
/// instance `d`, the published version stays as it is with `verify_by` moved on, and the
/// revision can be submitted.
async fn reverified_while_open(a: &TestApp, d: &TestApp, kept: &str) {
    let doc = a.document(kept).await;
    assert_eq!(
        (doc["status"].as_str(), doc["version"].as_i64()),
        (Some("APPROVED"), Some(3))
    );
    assert!(doc["verify_by"].is_null(), "cleared while it is open");
    let published = format!("/api/v1/documents/{kept}/published");
    let r = a.get(&published, &a.reviewer()).await;
    assert_eq!(
        r.status(),
        StatusCode::OK,
        "still published while it is open"
    );
    let review = a.reverification_of(kept).await;
    let r = a.approve(&review, &a.author()).await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    let edit = a
        .put(
            &format!("/api/v1/documents/{kept}"),
            &a.author(),
            json!({"body": "Restart the indexer twice."}),
        )
        .await;
    assert_eq!(edit.status(), StatusCode::OK, "a revision may be drafted");
    let submit = format!("/api/v1/documents/{kept}/submit");
    let r = a.post(&submit, &a.author(), json!({})).await;
    expect_error(r, StatusCode::CONFLICT, "INVALID_STATE").await;
    let r = d.approve(&review, &d.reviewer()).await;
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap());
    let doc = a.document(kept).await;
    assert_eq!(
        (doc["status"].as_str(), doc["version"].as_i64()),
        (Some("DRAFT"), Some(4)),
        "the revision as it was"
    );
    assert_eq!(doc["published_version"], 3);
    assert_eq!(
        secs_between(&doc["updated_at"], &doc["verify_by"]),
        3600,
        "moved on"
    );
    let r = a.post(&submit, &a.author(), json!({})).await;
    assert_eq!(
        r.status(),
        StatusCode::CREATED,
        "the revision goes to review"
    );
}

/// An expired document: nothing published; revised and submitted like a rejected one, and
/// published again by the approval.
async fn revised_after_expiry(a: &TestApp, id: &str) {
    let doc = a.document(id).await;
    assert_eq!(doc["status"], "EXPIRED");
    assert!(doc["published_version"].is_null() && doc["verify_by"].is_null());
    let published = a
        .get(&format!("/api/v1/documents/{id}/published"), &a.reviewer())
        .await;
    assert_eq!(published.status(), StatusCode::NOT_FOUND);
    let r = a
        .put(
            &format!("/api/v1/documents/{id}"),
            &a.author(),
            json!({"body": "Restart the indexer, then check its lag."}),
        )
        .await;
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap());
    let edited: Value = r.json().await.unwrap();
    assert_eq!(edited["status"], "EXPIRED", "an edit keeps it expired");
    let review = a.submitted(id).await;
    let r = a.approve(&review, &a.reviewer()).await;
    assert_eq!(r.status(), StatusCode::OK);
    let doc = a.document(id).await;
    assert_eq!(doc["status"], "APPROVED");
    assert_eq!(doc["published_version"], doc["version"]);
    assert!(doc["verify_by"].is_string(), "due again under its policy");
    let mongo = a.mongo_doc(id).await.expect("projected");
    assert_eq!(mongo.get_str("status").unwrap(), "APPROVED");
}

/// A reviewer rejects a re-verification: the document expires at once (one
/// `document.expired`, naming the reviewer and the reason), and the projection no longer
/// holds a published revision.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_rejected_reverification_expires_the_document() {
    let a = spawn_app_with(scheduling()).await;
    let stages = json!([{"name": "review", "required_approvals": 1}]);
    a.policy(
        "fresh",
        json!({"stages": stages, "reverify_after_secs": 60}),
    )
    .await;
    let id = a.approved_under("fresh").await;
    a.exec(&format!(
        "UPDATE documents SET verify_by = now() WHERE id = '{id}'"
    ))
    .await;
    a.wait_event(&id, "document.reverification_due").await;
    let review = a.reverification_of(&id).await;
    let r = a.current_review(&id).await;
    assert_eq!(
        secs_between(&r["submitted_at"], &r["due_at"]),
        604_800,
        "a week by default"
    );
    shown_in_the_queue_and_the_console(&a, &id, &review).await;
    let r = a.reject(&review, &a.reviewer()).await;
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap());
    let doc = a.document(&id).await;
    assert_eq!(
        (doc["status"].as_str(), doc["version"].as_i64()),
        (Some("EXPIRED"), Some(4))
    );
    let events = a.wait_events(4, Duration::from_secs(15)).await;
    let expired = events
        .iter()
        .find(|e| e["event_type"] == "document.expired")
        .unwrap();
    assert_eq!(expired["actor_id"], "bob");
    assert_eq!(expired["data"]["expired_by"], "bob");
    assert_eq!(expired["data"]["expired_version"], 3);
    assert!(expired["data"]["reason"]
        .as_str()
        .is_some_and(|r| !r.is_empty()));
    let mongo = a.mongo_doc(&id).await.expect("projected");
    assert_eq!(mongo.get_str("status").unwrap(), "EXPIRED");
    assert!(mongo
        .get("published_version")
        .is_some_and(|v| v.as_null().is_some()));
    a.finish().await;
}

/// The open re-verification `review` of `id`: in the review queue with its kind and
/// deadline, marked in the console's queue and on the document's page, which offers the
/// reviewer the decision.
async fn shown_in_the_queue_and_the_console(a: &TestApp, id: &str, review: &str) {
    let page: Value = a
        .get("/api/v1/reviews?order=due", &a.reviewer())
        .await
        .json()
        .await
        .unwrap();
    let listed = &page["items"][0];
    assert_eq!(
        (listed["id"].as_str(), listed["kind"].as_str()),
        (Some(review), Some("reverify"))
    );
    assert!(listed["due_at"].is_string(), "its deadline");
    let html = |path: String, token: String| async move {
        let r = a.get(&path, &token).await;
        assert_eq!(r.status(), StatusCode::OK);
        r.text().await.unwrap()
    };
    let queue = html("/console/f/queue".into(), a.reviewer()).await;
    assert!(
        queue.contains(r#"data-kind="reverify""#) && queue.contains("Re-verify"),
        "{queue}"
    );
    let mine = html(format!("/console/f/documents/{id}"), a.author()).await;
    assert!(mine.contains(r#"id="reverify""#), "{mine}");
    assert!(
        mine.contains(r#"id="edit-form""#),
        "a revision may be drafted meanwhile"
    );
    let theirs = html(format!("/console/f/documents/{id}"), a.reviewer()).await;
    assert!(
        theirs.contains(&format!("/reviews/{review}/approve")),
        "{theirs}"
    );
}

/// A revision is being drafted when the published version comes due: the published version
/// is re-verified (the draft stays a draft); nobody approving it in time unpublishes it and
/// leaves the draft as it was, which then goes to review as any draft.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_revision_drafted_when_due_keeps_its_draft_and_loses_its_published_version() {
    let a = spawn_app_with(scheduling()).await;
    let stages = json!([{"name": "review", "required_approvals": 1}]);
    let body = json!({"stages": stages, "reverify_after_secs": 60});
    a.policy("fresh", body).await;
    let id = a.approved_under("fresh").await;
    let r = a
        .put(
            &format!("/api/v1/documents/{id}"),
            &a.author(),
            json!({"body": "Restart the indexer, then its workers."}),
        )
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    a.exec(&format!(
        "UPDATE documents SET verify_by = now() WHERE id = '{id}'"
    ))
    .await;
    a.wait_event(&id, "document.reverification_due").await;
    let review = a.current_review(&id).await;
    assert_eq!(
        (review["kind"].as_str(), review["document_version"].as_i64()),
        (Some("reverify"), Some(3))
    );
    a.exec(&format!(
        "UPDATE reviews SET due_at = now() WHERE document_id = '{id}' AND kind = 'reverify'"
    ))
    .await;
    a.wait_event(&id, "document.expired").await;
    let doc = a.document(&id).await;
    assert_eq!(
        (doc["status"].as_str(), doc["version"].as_i64()),
        (Some("DRAFT"), Some(5))
    );
    assert!(doc["published_version"].is_null());
    let published = a
        .get(&format!("/api/v1/documents/{id}/published"), &a.reviewer())
        .await;
    assert_eq!(published.status(), StatusCode::NOT_FOUND);
    let review = a.submitted(&id).await;
    assert_eq!(
        a.approve(&review, &a.reviewer()).await.status(),
        StatusCode::OK
    );
    let doc = a.document(&id).await;
    assert_eq!(
        (doc["status"].as_str(), doc["published_version"].as_i64()),
        (Some("APPROVED"), Some(7))
    );
    a.finish().await;
}
