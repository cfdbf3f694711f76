//! The failure-table rows of the review workflow: the last approvals of N-of-M at once
//! from several instances, withdraw against the final approval, two claims of the last
//! seat, a reject against the last approval, Redis down, and a due review with three
//! instances, one restarted.

use std::time::Duration;

use futures_util::future::join_all;
use kh_review::web::auth::Role;
use reqwest::StatusCode;
use serde_json::Value;

use crate::support::app::{spawn_app, spawn_app_with, AppOptions, TestApp};
use crate::support::inspect::wait_for;
use crate::support::own_redis::OwnRedis;

fn shared(a: &TestApp) -> AppOptions {
    AppOptions {
        share_with: Some(a.shared.clone()),
        ..Default::default()
    }
}

async fn code_of(r: reqwest::Response) -> (StatusCode, String) {
    let status = r.status();
    let body: Value = r.json().await.unwrap_or(Value::Null);
    (status, body["code"].as_str().unwrap_or("").to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_last_approvals_of_n_of_m_at_once_from_three_instances() {
    let a = spawn_app().await;
    let (b, c) = (
        spawn_app_with(shared(&a)).await,
        spawn_app_with(shared(&a)).await,
    );
    let apps = [&a, &b, &c];
    a.n_of_m("three", 3).await;
    for round in 0..4 {
        let (_, review_id) = a.pending_under("three").await;
        // Six reviewers at once (and each twice: a double click) for three approvals.
        let votes = (0..12).map(|i| {
            let app = apps[i % 3];
            let token = app.token(&format!("r{round}-{}", i % 6), &[Role::Reviewer]);
            let review_id = review_id.clone();
            async move { (i % 6, code_of(app.approve(&review_id, &token).await).await) }
        });
        let results = join_all(votes).await;
        let mut ok = std::collections::HashSet::new();
        for (who, (status, code)) in &results {
            match *status {
                StatusCode::OK => assert!(ok.insert(*who), "reviewer {who} counted twice"),
                StatusCode::CONFLICT => assert!(
                    ["INVALID_STATE", "ALREADY_VOTED", "LOCK_NOT_ACQUIRED"]
                        .contains(&code.as_str()),
                    "{code}"
                ),
                other => panic!("{other} {code}"),
            }
        }
        assert_eq!(ok.len(), 3, "three approvals went through: {results:?}");
        let votes = format!("SELECT count(*) FROM review_votes WHERE review_id = '{review_id}'");
        assert_eq!(a.count(&votes).await, 3, "each vote recorded once");
        assert_eq!(a.events_of(&review_id, "document.approved").await, 1);
        assert_eq!(a.events_of(&review_id, "review.approval_recorded").await, 2);
        assert_eq!(a.review_status_in_db(&review_id).await, "APPROVED");
    }
    a.outbox_drained(Duration::from_secs(20)).await;
    for app in [b, c] {
        app.stop().await;
    }
    a.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn withdraw_and_the_final_approval_at_once_one_wins_every_time() {
    let app = spawn_app().await;
    app.n_of_m("two", 2).await;
    let mut approvals_won = 0;
    for _ in 0..12 {
        let (doc_id, review_id) = app.pending_under("two").await;
        assert_eq!(
            app.approve(&review_id, &app.reviewer()).await.status(),
            StatusCode::OK
        );
        let carol = app.token("carol", &[Role::Reviewer]);
        let (w, v) = tokio::join!(app.withdraw(&doc_id), app.approve(&review_id, &carol));
        let (w, v) = (code_of(w).await, code_of(v).await);
        let oks = [&w, &v]
            .iter()
            .filter(|(s, _)| *s == StatusCode::OK)
            .count();
        assert_eq!(oks, 1, "exactly one 200: withdraw {w:?}, approve {v:?}");
        let loser = if w.0 == StatusCode::OK { &v } else { &w };
        assert_eq!(
            (loser.0, loser.1.as_str()),
            (StatusCode::CONFLICT, "INVALID_STATE")
        );
        let decided = app.events_of(&review_id, "document.approved").await
            + app.events_of(&review_id, "document.withdrawn").await;
        assert_eq!(decided, 1, "one transition, one event");
        approvals_won += usize::from(v.0 == StatusCode::OK);
    }
    eprintln!("approval won {approvals_won} of 12");
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_reviewers_claim_the_last_seat_at_once() {
    let app = spawn_app().await;
    for _ in 0..10 {
        let (_, review_id) = app.pending_review().await;
        let (bob, carol) = (app.reviewer(), app.token("carol", &[Role::Reviewer]));
        let (x, y) = tokio::join!(app.claim(&review_id, &bob), app.claim(&review_id, &carol));
        let (x, y) = (code_of(x).await, code_of(y).await);
        let mut got = [x.clone(), y.clone()];
        got.sort_by_key(|(s, _)| s.as_u16());
        assert_eq!(got[0].0, StatusCode::OK, "{x:?} {y:?}");
        assert_eq!(
            (got[1].0, got[1].1.as_str()),
            (StatusCode::CONFLICT, "REVIEW_CLAIMED"),
            "{x:?} {y:?}"
        );
        let claims = format!("SELECT count(*) FROM review_claims WHERE review_id = '{review_id}'");
        assert_eq!(app.count(&claims).await, 1, "one claim");
    }
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_reject_and_the_last_approval_at_once_the_first_to_commit_decides() {
    let app = spawn_app().await;
    app.n_of_m("two", 2).await;
    for _ in 0..8 {
        let (_, review_id) = app.pending_under("two").await;
        assert_eq!(
            app.approve(&review_id, &app.reviewer()).await.status(),
            StatusCode::OK
        );
        let (carol, dave) = (
            app.token("carol", &[Role::Reviewer]),
            app.token("dave", &[Role::Reviewer]),
        );
        let (x, y) = tokio::join!(
            app.approve(&review_id, &carol),
            app.reject(&review_id, &dave)
        );
        let (x, y) = (code_of(x).await, code_of(y).await);
        for (s, code) in [&x, &y] {
            assert!(
                *s == StatusCode::OK || (*s == StatusCode::CONFLICT && code == "INVALID_STATE"),
                "{s} {code}"
            );
        }
        let approved = app.events_of(&review_id, "document.approved").await;
        let rejected = app.events_of(&review_id, "document.rejected").await;
        assert_eq!(approved + rejected, 1, "one decision event: {x:?} {y:?}");
        let status = app.review_status_in_db(&review_id).await;
        assert_eq!(
            status,
            if approved == 1 {
                "APPROVED"
            } else {
                "REJECTED"
            }
        );
    }
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_down_changes_none_of_the_workflow() {
    let mut own = OwnRedis::start().await;
    let app = spawn_app_with(AppOptions {
        redis_url: Some(own.url()),
        ..Default::default()
    })
    .await;
    app.then_legal("staged", 2).await;
    let (_, review_id) = app.pending_under("staged").await;
    own.kill();
    let carol = app.token("carol", &[Role::Reviewer]);
    assert_eq!(app.claim(&review_id, &carol).await.status(), StatusCode::OK);
    let (status, code) =
        code_of(app.approve(&review_id, &app.reviewer_in("erin", &[])).await).await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::OK, ""),
        "one seat was free"
    );
    let (status, code) = code_of(app.approve(&review_id, &app.reviewer()).await).await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::CONFLICT, "REVIEW_CLAIMED")
    );
    assert_eq!(
        app.approve(&review_id, &carol).await.status(),
        StatusCode::OK
    );
    let (status, code) = code_of(app.approve(&review_id, &app.reviewer()).await).await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::FORBIDDEN, "NOT_ELIGIBLE")
    );
    let (status, code) = code_of(app.approve(&review_id, &carol).await).await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::CONFLICT, "ALREADY_VOTED")
    );
    let r = app
        .approve(&review_id, &app.reviewer_in("dave", &["legal"]))
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    let modes = format!("SELECT count(*) FROM audit_log WHERE review_id = '{review_id}' AND action IN ('approval_recorded', 'stage_completed', 'approve') AND lock_mode = 'row_lock_only'");
    assert_eq!(
        app.count(&modes).await,
        3,
        "every vote ran on the row lock alone"
    );
    assert_eq!(app.events_of(&review_id, "document.approved").await, 1);
    app.finish().await;
}

/// A review due in a second, three instances sweeping every 100 ms, one of them stopped and
/// another started in its place meanwhile: exactly one `review.overdue`; none for a review
/// decided in time.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_due_review_is_overdue_once_with_three_instances_one_restarted() {
    let sweeping = || -> AppOptions {
        AppOptions {
            configure: Some(Box::new(|s| {
                s.review.overdue_sweep = Duration::from_millis(100)
            })),
            ..Default::default()
        }
    };
    let a = spawn_app_with(sweeping()).await;
    let with_a = || AppOptions {
        share_with: Some(a.shared.clone()),
        ..sweeping()
    };
    let (b, c) = (
        spawn_app_with(with_a()).await,
        spawn_app_with(with_a()).await,
    );
    a.due_after("due", 1).await;
    let (_, decided) = a.pending_under("due").await;
    assert_eq!(
        b.approve(&decided, &b.reviewer()).await.status(),
        StatusCode::OK
    );
    let (_, late) = a.pending_under("due").await;
    b.stop().await;
    let d = spawn_app_with(with_a()).await;
    wait_for(
        "the late review's overdue event",
        Duration::from_secs(15),
        || async { (a.events_of(&late, "review.overdue").await > 0).then_some(()) },
    )
    .await;
    // Let every instance sweep again past the due date: still one.
    let marked_at = format!("SELECT count(*) FROM reviews WHERE id = '{late}' AND overdue_notified_at < now() - interval '500 milliseconds'");
    wait_for(
        "half a second after the mark",
        Duration::from_secs(5),
        || async { (a.count(&marked_at).await == 1).then_some(()) },
    )
    .await;
    assert_eq!(
        a.events_of(&late, "review.overdue").await,
        1,
        "exactly once"
    );
    assert_eq!(
        a.events_of(&decided, "review.overdue").await,
        0,
        "decided in time"
    );
    let page: Value = a
        .get("/api/v1/reviews?overdue=true", &a.reviewer())
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(page["items"][0]["id"].as_str(), Some(late.as_str()));
    a.outbox_drained(Duration::from_secs(15)).await;
    for app in [c, d] {
        app.stop().await;
    }
    a.finish().await;
}

/// An archive (of the version its author saw) against the approval of that version: the
/// first to commit wins, the other is refused, and the events say what happened.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn archive_and_the_approval_at_once_one_wins_every_time() {
    let app = spawn_app().await;
    let mut archives_won = 0;
    for _ in 0..12 {
        let (doc_id, review_id) = app.pending_review().await;
        let version = app.document_version_in_db(&doc_id).await;
        let path = format!("/api/v1/documents/{doc_id}/archive");
        let body = serde_json::json!({"reason": "superseded", "version": version});
        let (author, reviewer) = (app.author(), app.reviewer());
        let (a, v) = tokio::join!(
            app.post(&path, &author, body),
            app.approve(&review_id, &reviewer)
        );
        let (a, v) = (code_of(a).await, code_of(v).await);
        let oks = [&a, &v]
            .iter()
            .filter(|(s, _)| *s == StatusCode::OK)
            .count();
        assert_eq!(oks, 1, "exactly one 200: archive {a:?}, approve {v:?}");
        let loser = if a.0 == StatusCode::OK { &v } else { &a };
        assert_eq!(
            (loser.0, loser.1.as_str()),
            (StatusCode::CONFLICT, "INVALID_STATE")
        );
        let events = |t: &'static str| {
            let sql = format!(
                "SELECT count(*) FROM outbox WHERE document_id = '{doc_id}' AND event_type = '{t}'"
            );
            let app = &app;
            async move { app.count(&sql).await }
        };
        let (approved, archived) = (
            events("document.approved").await,
            events("document.archived").await,
        );
        let status = app
            .count(&format!(
                "SELECT count(*) FROM documents WHERE id = '{doc_id}' AND status = 'ARCHIVED'"
            ))
            .await;
        if a.0 == StatusCode::OK {
            archives_won += 1;
            assert_eq!((approved, archived, status), (0, 1, 1));
            assert_eq!(app.review_status_in_db(&review_id).await, "WITHDRAWN");
        } else {
            assert_eq!((approved, archived, status), (1, 0, 0));
            assert_eq!(app.review_status_in_db(&review_id).await, "APPROVED");
        }
    }
    eprintln!("archive won {archives_won} of 12");
    app.finish().await;
}
