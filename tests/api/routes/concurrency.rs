use std::time::Duration;

use futures_util::future::join_all;
use kh_review::web::auth::Role;
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::app::{spawn_app, TestApp};
use crate::support::views::Transition;

/// Fires `n` approve/reject calls at one review from different reviewers at once.
pub async fn storm(app: &TestApp, review_id: &str, n: usize) -> Vec<(StatusCode, Value)> {
    timed_storm(app, review_id, n)
        .await
        .into_iter()
        .map(|(s, v, _)| (s, v))
        .collect()
}

/// Like [`storm`], with each call's latency.
pub async fn timed_storm(
    app: &TestApp,
    review_id: &str,
    n: usize,
) -> Vec<(StatusCode, Value, std::time::Duration)> {
    let calls = (0..n).map(|i| {
        let token = app.token(&format!("reviewer-{i}"), &[Role::Reviewer]);
        let review_id = review_id.to_string();
        async move {
            let started = std::time::Instant::now();
            let r = if i % 2 == 0 {
                app.approve(&review_id, &token).await
            } else {
                app.reject(&review_id, &token).await
            };
            let status = r.status();
            (status, r.json::<Value>().await.unwrap(), started.elapsed())
        }
    });
    join_all(calls).await
}

/// Exactly one 200, every other reply a 409 with a conflict code.
pub fn exactly_one_winner(results: &[(StatusCode, Value)]) -> Transition {
    let winners: Vec<_> = results
        .iter()
        .filter(|(s, _)| *s == StatusCode::OK)
        .collect();
    assert_eq!(winners.len(), 1, "exactly one decision wins: {results:?}");
    for (s, v) in results.iter().filter(|(s, _)| *s != StatusCode::OK) {
        assert_eq!(*s, StatusCode::CONFLICT, "{v}");
        let code = v["code"].as_str().unwrap();
        assert!(
            ["LOCK_NOT_ACQUIRED", "INVALID_STATE"].contains(&code),
            "{v}"
        );
    }
    serde_json::from_value(winners[0].1.clone()).expect("the winner's reply is a transition")
}

/// PostgreSQL, MongoDB and the queue agree on the one decision.
pub async fn one_decision_everywhere(app: &TestApp, doc_id: &str, winner: &Transition) {
    app.outbox_drained(Duration::from_secs(15)).await;
    let status = winner.document.status.as_str();
    let version = winner.document.version;
    let (pg_status, pg_version): (String, i64) =
        sqlx::query_as("SELECT status, version FROM documents WHERE id = $1::uuid")
            .bind(doc_id)
            .fetch_one(&app.pg)
            .await
            .unwrap();
    assert_eq!((pg_status.as_str(), pg_version), (status, version));
    let decided = app
        .count("SELECT count(*) FROM reviews WHERE status <> 'PENDING'")
        .await;
    assert_eq!(decided, 1);
    let m = app.mongo_doc(doc_id).await.expect("projected");
    assert_eq!(m.get_str("status").unwrap(), status);
    assert_eq!(m.get_i64("version").unwrap(), version);
    let events = app.take_events().await;
    let decisions: Vec<_> = events
        .iter()
        .filter(|(e, _)| e["event_type"] != "document.submitted")
        .collect();
    assert_eq!(decisions.len(), 1, "one event for one decision: {events:?}");
    assert_eq!(decisions[0].0["document_version"], version);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_concurrent_decisions_one_winner_one_event() {
    let app = spawn_app().await;
    let (doc_id, review_id) = app.pending_review().await;
    let results = storm(&app, &review_id, 50).await;
    let winner = exactly_one_winner(&results);
    one_decision_everywhere(&app, &doc_id, &winner).await;
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_double_submit_makes_one_review() {
    let app = spawn_app().await;
    let doc = app.create_document("Double click", "body").await;
    let id = doc.id;
    let (path, token) = (format!("/api/v1/documents/{id}/submit"), app.author());
    let calls = (0..10).map(|_| app.post(&path, &token, json!({})));
    let results = join_all(calls).await;
    let created = results
        .iter()
        .filter(|r| r.status() == StatusCode::CREATED)
        .count();
    assert_eq!(created, 1);
    for r in &results {
        assert!(
            matches!(r.status(), StatusCode::CREATED | StatusCode::CONFLICT),
            "{}",
            r.status()
        );
    }
    assert_eq!(app.count("SELECT count(*) FROM reviews").await, 1);
    app.outbox_drained(Duration::from_secs(10)).await;
    let submitted = app.take_events().await.len();
    assert_eq!(submitted, 1);
    app.finish().await;
}
