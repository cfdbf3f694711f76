use std::time::Duration;

use kh_review::web::auth::Role;
use reqwest::StatusCode;
use serde_json::json;

use crate::support::app::{spawn_app, spawn_app_with, AppOptions, AUTHOR, REVIEWER, REVIEWER2};
use crate::support::inspect::{expect_error, redis_cmd, redis_get, wait_for};
use crate::support::views::{Document, Event, Items, Review, Transition};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approve_publishes_one_event_after_the_projection() {
    let app = spawn_app().await;
    let (doc_id, review_id) = app.pending_review().await;
    let r = app.approve(&review_id, &app.reviewer()).await;
    assert_eq!(r.status(), StatusCode::OK);
    let t: Transition = r.json().await.unwrap();
    assert_eq!(t.document.status, "APPROVED");
    assert_eq!(t.document.version, 3);
    assert_eq!(t.review.status, "APPROVED");
    assert_eq!(t.review.decided_by.as_deref(), Some(REVIEWER));
    assert_eq!(t.review.comment.as_deref(), Some("ok"));
    assert!(t.review.decided_at.is_some());

    app.outbox_drained(Duration::from_secs(10)).await;
    let events = app.take_events().await;
    assert_eq!(events.len(), 2, "submitted + approved: {events:?}");
    let (approved, props) = &events[1];
    let approved: Event = serde_json::from_value(approved.clone()).unwrap();
    assert_eq!(events[0].0["event_type"], "document.submitted");
    assert_eq!(approved.event_type, "document.approved");
    assert_eq!(approved.document_id.to_string(), doc_id);
    assert_eq!(
        approved.review_id.map(|r| r.to_string()),
        Some(review_id.clone())
    );
    assert_eq!(approved.document_version, 3);
    assert_eq!(approved.actor_id, REVIEWER);
    assert_eq!(approved.data["comment"], "ok");
    assert!(!approved.occurred_at.is_empty());
    assert_eq!(
        props.message_id().as_ref().map(|s| s.to_string()),
        Some(approved.event_id.to_string())
    );
    assert_eq!(
        props.content_type().as_ref().map(|s| s.as_str()),
        Some("application/json")
    );
    assert_eq!(*props.delivery_mode(), Some(2), "persistent");
    // MongoDB holds the approved version.
    let m = app.mongo_doc(&doc_id).await.unwrap();
    assert_eq!(m.get_str("status").unwrap(), "APPROVED");
    assert_eq!(m.get_i64("version").unwrap(), 3);
    // One audit row per transition, with the request id and lock mode.
    let audits = app
        .count("SELECT count(*) FROM audit_log WHERE lock_mode = 'redis'")
        .await;
    assert_eq!(audits, 2);
    // Approving again is an invalid state; nothing changes.
    let r = app
        .approve(&review_id, &app.token(REVIEWER2, &[Role::Reviewer]))
        .await;
    expect_error(r, StatusCode::CONFLICT, "INVALID_STATE").await;
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reject_then_resubmit_opens_a_new_review() {
    let app = spawn_app().await;
    let (doc_id, review_id) = app.pending_review().await;
    // A reason is required.
    let r = app
        .post(
            &format!("/api/v1/reviews/{review_id}/reject"),
            &app.reviewer(),
            json!({}),
        )
        .await;
    expect_error(r, StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED").await;
    let r = app
        .post(
            &format!("/api/v1/reviews/{review_id}/reject"),
            &app.reviewer(),
            json!({"reason": "  "}),
        )
        .await;
    expect_error(r, StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED").await;
    let r = app.reject(&review_id, &app.reviewer()).await;
    assert_eq!(r.status(), StatusCode::OK);
    let t: Transition = r.json().await.unwrap();
    assert_eq!(t.document.status, "REJECTED");
    assert_eq!(t.review.reason.as_deref(), Some("needs work"));
    // Editable again, then a second submit makes a second review.
    let r = app
        .client
        .put(app.url(&format!("/api/v1/documents/{doc_id}")))
        .bearer_auth(app.author())
        .json(&json!({"title": "Quarterly report v2"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let r = app
        .post(
            &format!("/api/v1/documents/{doc_id}/submit"),
            &app.author(),
            json!({}),
        )
        .await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let second: Transition = r.json().await.unwrap();
    assert_ne!(second.review.id.to_string(), review_id);
    let h: Items<Review> = app
        .get(
            &format!("/api/v1/documents/{doc_id}/reviews"),
            &app.author(),
        )
        .await
        .json()
        .await
        .unwrap();
    let statuses: Vec<&str> = h.items.iter().map(|r| r.status.as_str()).collect();
    assert_eq!(statuses, ["REJECTED", "PENDING"]);
    // The old review cannot be decided any more.
    let r = app.approve(&review_id, &app.reviewer()).await;
    expect_error(r, StatusCode::CONFLICT, "INVALID_STATE").await;
    app.outbox_drained(Duration::from_secs(10)).await;
    let kinds: Vec<String> = app
        .take_events()
        .await
        .into_iter()
        .map(|(e, _)| e["event_type"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        kinds,
        [
            "document.submitted",
            "document.rejected",
            "document.submitted"
        ]
    );
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_eyes_and_roles() {
    let app = spawn_app().await;
    let (doc_id, review_id) = app.pending_review().await;
    // The author, even holding the reviewer role, may not decide their own document.
    let both = app.token(AUTHOR, &[Role::Author, Role::Reviewer]);
    let r = app.approve(&review_id, &both).await;
    expect_error(r, StatusCode::FORBIDDEN, "SELF_REVIEW_FORBIDDEN").await;
    let r = app.reject(&review_id, &both).await;
    expect_error(r, StatusCode::FORBIDDEN, "SELF_REVIEW_FORBIDDEN").await;
    // Wrong role.
    let r = app.approve(&review_id, &app.author()).await;
    expect_error(r, StatusCode::FORBIDDEN, "FORBIDDEN").await;
    let r = app
        .post(
            "/api/v1/documents",
            &app.reviewer(),
            json!({"title": "t", "body": "b"}),
        )
        .await;
    expect_error(r, StatusCode::FORBIDDEN, "FORBIDDEN").await;
    // Another author of the space co-edits a submitted document, but a pending one takes
    // no submit from anyone.
    let other = app.token("mallory", &[Role::Author]);
    let r = app
        .post(
            &format!("/api/v1/documents/{doc_id}/submit"),
            &other,
            json!({}),
        )
        .await;
    expect_error(r, StatusCode::CONFLICT, "INVALID_STATE").await;
    // Nothing changed.
    let r = app
        .get(&format!("/api/v1/documents/{doc_id}"), &app.reviewer())
        .await;
    let d: Document = r.json().await.unwrap();
    assert_eq!(d.status, "PENDING_REVIEW");
    assert_eq!(d.version, 2);
    assert_eq!(app.count("SELECT count(*) FROM audit_log").await, 2);
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_lock_key_gives_409_with_retry_after_then_success() {
    let app = spawn_app().await;
    let (_, review_id) = app.pending_review().await;
    let key = app.lock_key_review(&review_id);
    redis_cmd(&app.redis, &["SET", &key, "someone-else", "PX", "60000"]).await;
    let r = app.approve(&review_id, &app.reviewer()).await;
    let retry_after: u64 = r
        .headers()
        .get("retry-after")
        .expect("Retry-After")
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(retry_after >= 1);
    expect_error(r, StatusCode::CONFLICT, "LOCK_NOT_ACQUIRED").await;
    assert_eq!(
        redis_get(&app.redis, &key).await.as_deref(),
        Some("someone-else"),
        "a refused request never touches the holder's key"
    );
    redis_cmd(&app.redis, &["DEL", &key]).await;
    let r = app.approve(&review_id, &app.reviewer()).await;
    assert_eq!(r.status(), StatusCode::OK);
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_lost_before_commit_commits_nothing() {
    let app = spawn_app_with(AppOptions {
        lock_ttl_ms: 600,
        ..Default::default()
    })
    .await;
    let (doc_id, review_id) = app.pending_review().await;
    let key = app.lock_key_review(&review_id);
    let req = app
        .approve_paused(
            &review_id,
            kh_review::web::test_hooks::PAUSE_BEFORE_COMMIT_HEADER,
            1500,
            false,
        )
        .send();
    let hijack = async {
        // While the handler is paused, the lock moves to another owner.
        wait_for(
            "the handler to take the lock",
            Duration::from_secs(5),
            || async { redis_get(&app.redis, &key).await.map(|_| ()) },
        )
        .await;
        redis_cmd(&app.redis, &["SET", &key, "thief", "PX", "60000"]).await;
    };
    let (r, ()) = tokio::join!(req, hijack);
    expect_error(r.unwrap(), StatusCode::CONFLICT, "LOCK_LOST").await;
    let d: Document = app
        .get(&format!("/api/v1/documents/{doc_id}"), &app.reviewer())
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(d.status, "PENDING_REVIEW");
    assert_eq!(d.version, 2);
    assert_eq!(
        redis_get(&app.redis, &key).await.as_deref(),
        Some("thief"),
        "the lost holder must not release the new owner's lock"
    );
    redis_cmd(&app.redis, &["DEL", &key]).await;
    assert_eq!(
        app.count("SELECT count(*) FROM outbox WHERE event_type = 'document.approved'")
            .await,
        0
    );
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_held_past_its_ttl_keeps_the_lock_by_renewal() {
    let app = spawn_app_with(AppOptions {
        lock_ttl_ms: 400,
        ..Default::default()
    })
    .await;
    let (_, review_id) = app.pending_review().await;
    let r = app
        .approve_paused(
            &review_id,
            kh_review::web::test_hooks::PAUSE_BEFORE_COMMIT_HEADER,
            1200,
            false,
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap());
    app.finish().await;
}
