//! Several instances sharing the stores: one transition per review, one event per
//! transition, per-document order, and another instance delivering a dead one's outbox.

use std::collections::HashMap;
use std::time::Duration;

use futures_util::future::join_all;
use kh_review::web::auth::Role;
use kh_review::web::test_hooks::SKIP_DISPATCH_HEADER;
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::app::{spawn_app, spawn_app_with, AppOptions};
use crate::support::views::typed_events;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_instances_one_transition_per_review() {
    let a = spawn_app().await;
    let shared = || AppOptions {
        share_with: Some(a.shared.clone()),
        ..Default::default()
    };
    let b = spawn_app_with(shared()).await;
    let c = spawn_app_with(shared()).await;
    let apps = [&a, &b, &c];
    let mut reviews = Vec::new();
    for i in 0..5 {
        reviews.push(apps[i % 3].pending_review().await);
    }
    // 100 conflicting decisions, 20 per review, spread over the three instances.
    let calls = (0..100).map(|i| {
        let app = apps[i % 3];
        let (_, review_id) = reviews[i % 5].clone();
        let token = app.token(&format!("reviewer-{i}"), &[Role::Reviewer]);
        async move {
            let r = if i % 2 == 0 {
                app.approve(&review_id, &token).await
            } else {
                app.reject(&review_id, &token).await
            };
            (review_id, r.status())
        }
    });
    let results = join_all(calls).await;
    let mut wins: HashMap<String, usize> = HashMap::new();
    for (review, status) in &results {
        assert!(
            matches!(*status, StatusCode::OK | StatusCode::CONFLICT),
            "{status}"
        );
        if *status == StatusCode::OK {
            *wins.entry(review.clone()).or_default() += 1;
        }
    }
    for (_, review) in &reviews {
        assert_eq!(
            wins.get(review),
            Some(&1),
            "one transition for review {review}"
        );
    }
    a.outbox_drained(Duration::from_secs(20)).await;
    let bodies: Vec<Value> = a.take_events().await.into_iter().map(|(e, _)| e).collect();
    let events = typed_events(&bodies);
    assert_eq!(
        events.len(),
        10,
        "one event per transition (5 submits, 5 decisions)"
    );
    let ids: std::collections::HashSet<_> = events.iter().map(|e| e.event_id).collect();
    assert_eq!(ids.len(), 10, "no duplicates");
    for (doc, _) in &reviews {
        let kinds: Vec<&str> = events
            .iter()
            .filter(|e| e.document_id.to_string() == *doc)
            .map(|e| e.event_type.as_str())
            .collect();
        assert_eq!(kinds.len(), 2);
        assert_eq!(kinds[0], "document.submitted", "in commit order for {doc}");
    }
    c.stop().await;
    b.stop().await;
    a.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_stopped_after_commit_is_covered_by_another() {
    let a = spawn_app_with(AppOptions {
        run_dispatcher: false,
        ..Default::default()
    })
    .await;
    let (doc_id, review_id) = a.pending_review().await;
    a.outbox_drained(Duration::from_secs(10)).await; // the submit went out inline
    let _ = a.take_events().await;
    let r = a
        .client
        .post(a.url(&format!("/api/v1/reviews/{review_id}/approve")))
        .bearer_auth(a.reviewer())
        .header(SKIP_DISPATCH_HEADER, "true")
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let shared = a.shared.clone();
    // Instance A dies right after COMMIT: its event is only in the outbox.
    a.server.stop(false).await;
    assert_eq!(
        a.count("SELECT count(*) FROM outbox WHERE done_at IS NULL")
            .await,
        1
    );
    assert!(a.take_events().await.is_empty());
    let b = spawn_app_with(AppOptions {
        share_with: Some(shared),
        ..Default::default()
    })
    .await;
    let events = b.wait_events(1, Duration::from_secs(15)).await;
    assert_eq!(events[0]["event_type"], "document.approved");
    assert_eq!(events[0]["document_id"], doc_id.as_str());
    let m = b.mongo_doc(&doc_id).await.unwrap();
    assert_eq!(m.get_str("status").unwrap(), "APPROVED");
    b.stop().await;
    a.finish().await;
}
