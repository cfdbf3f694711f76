//! RabbitMQ or MongoDB unreachable: requests succeed, and the outbox catches up, in order,
//! once they are back.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::app::{spawn_app, spawn_app_with, AppOptions, TestApp, AUTHOR};
use crate::support::inspect::wait_for;
use crate::support::views::typed_events;
use kh_review_testkit::proxy::{blackhole, Proxy};
use kh_review_testkit::stores::{amqp_url, mongo_url};

async fn run_two_documents(app: &TestApp) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for _ in 0..2 {
        out.push(app.approved_review().await);
    }
    out
}

pub(super) fn assert_in_order(bodies: &[Value], docs: &[(String, String)]) {
    let events = typed_events(bodies);
    for (doc, _) in docs {
        let kinds: Vec<(&str, i64)> = events
            .iter()
            .filter(|e| e.document_id.to_string() == *doc)
            .map(|e| (e.event_type.as_str(), e.document_version))
            .collect();
        assert_eq!(
            kinds,
            [("document.submitted", 2), ("document.approved", 3)],
            "doc {doc}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rabbitmq_down_then_back_delivers_every_event_in_order() {
    let (proxy, url) = Proxy::in_front_of(&amqp_url()).await;
    proxy.cut();
    let app = spawn_app_with(AppOptions {
        amqp_url: Some(url),
        ..Default::default()
    })
    .await;
    let docs = run_two_documents(&app).await;
    // The projection does not depend on RabbitMQ.
    for (doc, _) in &docs {
        wait_for(
            "mongo to show APPROVED",
            Duration::from_secs(10),
            || async {
                app.mongo_doc(doc)
                    .await
                    .filter(|d| d.get_str("status") == Ok("APPROVED"))
            },
        )
        .await;
    }
    assert!(
        app.take_events().await.is_empty(),
        "nothing can be published yet"
    );
    let waiting = app
        .count("SELECT count(*) FROM outbox WHERE done_at IS NULL AND routing_key IS NOT NULL")
        .await;
    assert_eq!(waiting, 4);
    proxy.restore();
    let events = app.wait_events(4, Duration::from_secs(30)).await;
    assert_in_order(&events, &docs);
    app.outbox_drained(Duration::from_secs(10)).await;
    assert!(app.take_events().await.is_empty(), "no duplicates");
    app.finish().await;
}

/// A backlog of many batches: each full batch is published while the next is claimed, and
/// that claim must not take a later event of a document whose earlier one is in flight.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backlog_of_many_batches_drains_in_order_while_the_next_batch_is_claimed_ahead() {
    let (proxy, url) = Proxy::in_front_of(&amqp_url()).await;
    proxy.cut();
    let app = spawn_app_with(AppOptions {
        amqp_url: Some(url),
        outbox_batch: Some(3),
        ..Default::default()
    })
    .await;
    let mut docs = Vec::new();
    for _ in 0..6 {
        docs.extend(run_two_documents(&app).await);
    }
    app.outbox_projected(Duration::from_secs(20)).await;
    assert!(app.take_events().await.is_empty(), "nothing published yet");
    proxy.restore();
    let events = app.wait_events(24, Duration::from_secs(30)).await;
    assert_in_order(&events, &docs);
    app.outbox_drained(Duration::from_secs(10)).await;
    assert!(app.take_events().await.is_empty(), "no duplicates");
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mongodb_down_then_back_catches_up_then_publishes() {
    let (proxy, url) = Proxy::in_front_of(&mongo_url()).await;
    proxy.cut();
    let app = spawn_app_with(AppOptions {
        mongo_url: Some(url),
        ..Default::default()
    })
    .await;
    let docs = run_two_documents(&app).await;
    // GET still answers, from PostgreSQL.
    let d: Value = app
        .get(&format!("/api/v1/documents/{}", docs[0].0), &app.reviewer())
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(d["status"], "APPROVED");
    assert_eq!(d["body_source"], "postgresql");
    assert_eq!(d["body"], "Numbers and words.");
    // An event is never published before MongoDB holds its version.
    assert!(app.take_events().await.is_empty());
    assert!(app.mongo_doc(&docs[0].0).await.is_none());
    proxy.restore();
    let events = app.wait_events(4, Duration::from_secs(30)).await;
    assert_in_order(&events, &docs);
    for (doc, _) in &docs {
        let m = app.mongo_doc(doc).await.expect("projected after recovery");
        assert_eq!(m.get_str("status").unwrap(), "APPROVED");
        assert_eq!(m.get_i64("version").unwrap(), 3);
    }
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_projection_never_overwrites_a_newer_one() {
    let app = spawn_app().await;
    let (doc, _) = app.approved_review().await;
    app.outbox_drained(Duration::from_secs(10)).await;
    // Replay the projection of version 1 (as a slow dispatcher would).
    let row = kh_review::domain::Document {
        id: doc.parse().unwrap(),
        title: "old".into(),
        body: "old body".into(),
        status: kh_review::domain::DocumentStatus::Draft,
        version: 1,
        author_id: AUTHOR.into(),
        space: "default".into(),
        current_review_id: None,
        policy: "default".into(),
        fence_token: None,
        created_at: chrono::Utc::now(),
        updated_at: chrono::Utc::now(),
        published_version: None,
        published_title: None,
        published_body: None,
        contributors: Vec::new(),
        verify_by: None,
    };
    let projection = kh_review::store::mongo::MongoProjection::new(
        &mongo_url(),
        &app.shared.mongo_db,
        "documents",
        Duration::from_secs(2),
    )
    .await
    .unwrap();
    let outcome = projection.project(&row).await.unwrap();
    assert_eq!(outcome, kh_review::store::mongo::Projected::Stale);
    let m = app.mongo_doc(&doc).await.unwrap();
    assert_eq!(m.get_str("status").unwrap(), "APPROVED");
    assert_eq!(m.get_i64("version").unwrap(), 3);
    let _ = json!({});
    app.finish().await;
}

/// RabbitMQ that accepts connections and never answers, for longer than a request waits for
/// a database connection: the outbox does its I/O with no transaction open, so a small
/// pool still serves every request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_rabbitmq_never_starves_the_database_pool() {
    let (port, _stop) = blackhole().await;
    let url = format!("amqp://guest:guest@127.0.0.1:{port}/%2f");
    let app = spawn_app_with(AppOptions {
        amqp_url: Some(url),
        db_pool: 3,
        amqp_timeout_ms: 4000, // the pool's acquire timeout is 3000 ms
        ..Default::default()
    })
    .await;
    let reviews = app.pending_reviews_in_db(8).await;
    let token = app.reviewer();
    let calls = reviews.iter().map(|r| app.approve(r, &token));
    for r in futures_util::future::join_all(calls).await {
        assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap());
    }
    let waiting = app
        .count("SELECT count(*) FROM outbox WHERE routing_key IS NOT NULL AND done_at IS NULL")
        .await;
    assert_eq!(waiting, 8, "every event waits in the outbox");
    app.stop().await;
}

/// The request that commits owns its outbox row from the INSERT: no dispatcher can claim it
/// while the request's lease runs. When the request never delivers (its instance died after
/// COMMIT), a dispatcher takes the row over once the lease ends; and a dispatcher whose own
/// claim expired cannot touch the row any more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owned_row_is_taken_over_after_its_lease_and_an_expired_claim_cannot_mark_it() {
    let app = spawn_app_with(AppOptions {
        run_dispatcher: false,
        inline_lease_ms: 1500,
        ..Default::default()
    })
    .await;
    let review = app.pending_reviews_in_db(1).await.remove(0);
    let r = app
        .client
        .post(app.url(&format!("/api/v1/reviews/{review}/approve")))
        .bearer_auth(app.reviewer())
        .header(kh_review::web::test_hooks::SKIP_DISPATCH_HEADER, "true")
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let repo = kh_review::store::PgStore::new(app.pg.clone(), Duration::from_secs(10));
    let owned: (bool, bool) = sqlx::query_as(
        "SELECT claimed_until > now(), claim_token IS NOT NULL FROM outbox WHERE done_at IS NULL",
    )
    .fetch_one(&app.pg)
    .await
    .unwrap();
    assert_eq!(owned, (true, true), "the committing request owns its row");
    let early = repo.take_unprojected(None, 10, Duration::from_secs(30));
    let early = early.await.unwrap();
    assert!(early.is_empty(), "no claim while the request owns the row");
    // Dispatcher A claims once the lease is over, with a claim that is itself already over.
    let a = wait_for(
        "the request's lease to end",
        Duration::from_secs(10),
        || async {
            let rows = repo
                .take_unprojected(None, 10, Duration::ZERO)
                .await
                .unwrap();
            (!rows.is_empty()).then_some(rows)
        },
    )
    .await;
    assert_eq!(a.len(), 1);
    let b = repo
        .take_unprojected(None, 10, Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(b.len(), 1, "an expired claim frees the row");
    assert_ne!(a[0].ticket, b[0].ticket);
    let ids = [a[0].id];
    let parked = repo.mark_failed(
        a[0].id,
        a[0].ticket,
        Duration::from_secs(60),
        "late",
        true,
        1,
    );
    assert!(!parked.await.unwrap(), "a stale claim parks nothing");
    repo.put_back(&ids, a[0].ticket).await.unwrap();
    repo.mark_projected(&ids, a[0].ticket).await.unwrap();
    let (attempts, claimed, projected): (i32, bool, bool) = sqlx::query_as(
        "SELECT attempts, claimed_until > now(), projected_at IS NOT NULL FROM outbox WHERE id = $1",
    )
    .bind(a[0].id)
    .fetch_one(&app.pg)
    .await
    .unwrap();
    assert_eq!(
        (attempts, claimed, projected),
        (0, true, false),
        "B's claim is untouched"
    );
    repo.put_back(&ids, b[0].ticket).await.unwrap();
    app.stop().await;
}
