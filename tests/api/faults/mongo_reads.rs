//! GET reads the body from MongoDB behind a circuit breaker: with MongoDB cut, GETs do not
//! each pay server selection (about `mongo.timeout_ms`) but answer from PostgreSQL at once,
//! and after the breaker's cool-down one read probes MongoDB and closes it again.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::Value;

use crate::support::app::{spawn_app_with, AppOptions, TestApp};
use crate::support::inspect::wait_for;
use kh_review_testkit::proxy::Proxy;
use kh_review_testkit::stores::mongo_url;

const GETS: usize = 20;

/// The median time of `GETS` sequential GETs of `doc`, each asserted to come from `source`.
async fn p50_of_gets(app: &TestApp, doc: &str, source: &str) -> Duration {
    let (path, token) = (format!("/api/v1/documents/{doc}"), app.author());
    let mut took = Vec::with_capacity(GETS);
    for _ in 0..GETS {
        let started = Instant::now();
        let r = app.get(&path, &token).await;
        assert_eq!(r.status(), StatusCode::OK);
        let v: Value = r.json().await.unwrap();
        took.push(started.elapsed());
        assert_eq!(v["body_source"], source, "{v}");
        assert_eq!(v["body"], "The body.", "{v}");
    }
    took.sort();
    took[GETS / 2]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_mongodb_cut_gets_stay_fast_and_answer_from_postgresql() {
    let (proxy, url) = Proxy::in_front_of(&mongo_url()).await;
    let app = spawn_app_with(AppOptions {
        mongo_url: Some(url),
        configure: Some(Box::new(|s| {
            s.mongo.breaker_open = Duration::from_secs(3);
        })),
        ..Default::default()
    })
    .await;
    let doc = app
        .create_document("Breaker", "The body.")
        .await
        .id
        .to_string();
    wait_for("the projection", Duration::from_secs(10), || async {
        app.mongo_doc(&doc).await.map(|_| ())
    })
    .await;
    p50_of_gets(&app, &doc, "mongodb").await; // warm the connections
    let normal = p50_of_gets(&app, &doc, "mongodb").await;
    proxy.cut();
    // The first read after the cut fails and opens the breaker; the rest skip MongoDB.
    let cut = p50_of_gets(&app, &doc, "postgresql").await;
    // 20 ms of slack: both medians are a few milliseconds, where twice one is noise.
    let limit = normal * 2 + Duration::from_millis(20);
    println!("GET p50 over {GETS}: MongoDB up {normal:?}, MongoDB cut {cut:?} (limit {limit:?})");
    assert!(
        cut <= limit,
        "cut p50 {cut:?} > 2 x normal {normal:?} + 20 ms"
    );
    let r = app.client.get(app.url("/readyz")).send().await.unwrap();
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["checks"]["mongodb"]["status"], "down", "{v}");
    assert_ne!(v["checks"]["mongodb"]["circuit_breaker"], "closed", "{v}");
    // MongoDB back: after the cool-down, one read probes it and the breaker closes.
    proxy.restore();
    let path = format!("/api/v1/documents/{doc}");
    wait_for(
        "GETs from MongoDB again",
        Duration::from_secs(15),
        || async {
            let v: Value = app.get(&path, &app.author()).await.json().await.ok()?;
            (v["body_source"] == "mongodb").then_some(())
        },
    )
    .await;
    let v: Value = app.public_json("/readyz").await;
    assert_eq!(v["checks"]["mongodb"]["circuit_breaker"], "closed", "{v}");
    app.finish().await;
}
