//! The MongoDB projection's write guard and concerns: a copy written from a transaction a
//! PostgreSQL failover lost is replaced by the new primary's copy of the same version; the
//! write concern and the majority read reach the server; and a write the server did not
//! acknowledge at the concern is a projection to retry, never a published event.

use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use chrono::{DateTime, Utc};
use futures_util::future::join_all;
use kh_review::domain::{Document, DocumentStatus};
use kh_review::store::mongo::{MongoProjection, Projected};
use reqwest::StatusCode;

use crate::support::app::{spawn_app, spawn_app_with, AppOptions, TestApp, AUTHOR};
use crate::support::inspect::wait_for;
use kh_review_testkit::mongo_wire::MongoWireProxy;
use kh_review_testkit::stores::mongo_url;

/// Version `version` of document `id` with `body`, committed at `at`.
fn copy(id: uuid::Uuid, version: i64, body: &str, at: DateTime<Utc>) -> Document {
    Document {
        id,
        title: "t".into(),
        body: body.into(),
        status: DocumentStatus::Draft,
        version,
        author_id: AUTHOR.into(),
        space: "default".into(),
        current_review_id: None,
        policy: "default".into(),
        fence_token: None,
        created_at: at,
        updated_at: at,
        published_version: None,
        published_title: None,
        published_body: None,
        contributors: Vec::new(),
        verify_by: None,
    }
}

async fn projection(url: &str, app: &TestApp) -> MongoProjection {
    MongoProjection::new(
        url,
        &app.shared.mongo_db,
        "documents",
        Duration::from_secs(2),
    )
    .await
    .unwrap()
}

fn host_port(url: &str) -> String {
    let rest = url.split("://").nth(1).unwrap_or(url);
    rest.split(['/', '?']).next().unwrap().to_string()
}

/// Version 2 was committed on a primary that then failed over before a replica had it; its
/// copy reached MongoDB. The new primary commits version 2 again, later, with another body:
/// that copy replaces the lost one (today's guard, on the version alone, kept the lost
/// body). The lost transaction's copy, retried late, does not come back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_from_a_lost_transaction_is_replaced_by_the_new_primarys() {
    let app = spawn_app().await;
    let doc = app.create_document("lost", "v1").await;
    app.outbox_drained(Duration::from_secs(10)).await;
    let mongo = projection(&mongo_url(), &app).await;
    let lost_at = Utc::now();
    let lost = copy(doc.id, 2, "from the lost transaction", lost_at);
    assert_eq!(mongo.project(&lost).await.unwrap(), Projected::Updated);
    let kept = copy(
        doc.id,
        2,
        "from the new primary",
        lost_at + chrono::Duration::milliseconds(5),
    );
    assert_eq!(mongo.project(&kept).await.unwrap(), Projected::Updated);
    assert_eq!(
        mongo.project(&lost).await.unwrap(),
        Projected::Stale,
        "the late retry"
    );
    let m = app.mongo_doc(&doc.id.to_string()).await.unwrap();
    assert_eq!(m.get_str("body").unwrap(), "from the new primary");
    assert_eq!(m.get_i64("head_version").unwrap(), 2);
    // The same copy again is written again (and so waits for the write concern again).
    assert_eq!(mongo.project(&kept).await.unwrap(), Projected::Updated);
    app.finish().await;
}

/// What the projection sends: every write with the configured write concern (`majority`),
/// and the check that finds a newer copy at read concern `majority`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_write_concern_and_the_majority_read_reach_the_server() {
    let app = spawn_app().await;
    let doc = app.create_document("concerns", "v1").await;
    app.outbox_drained(Duration::from_secs(10)).await;
    let proxy = MongoWireProxy::start(host_port(&mongo_url())).await;
    let mongo = projection(&proxy.url(), &app).await;
    let at = Utc::now();
    assert_eq!(
        mongo.project(&copy(doc.id, 5, "v5", at)).await.unwrap(),
        Projected::Updated
    );
    assert_eq!(
        mongo.project(&copy(doc.id, 4, "v4", at)).await.unwrap(),
        Projected::Stale
    );
    let updates = proxy.commands("update");
    assert!(!updates.is_empty(), "no update went through the proxy");
    for u in &updates {
        let w = u
            .get_document("writeConcern")
            .unwrap_or_else(|_| panic!("{u}"));
        assert_eq!(w.get_str("w").unwrap(), "majority", "{u}");
    }
    let finds = proxy.commands("find");
    let levels: Vec<&str> = finds
        .iter()
        .filter_map(|f| f.get_document("readConcern").ok())
        .filter_map(|r| r.get_str("level").ok())
        .collect();
    assert_eq!(levels, ["majority"], "the stale check's find: {finds:?}");
    app.finish().await;
}

/// MongoDB applies the approval's projection but answers that the write concern was not
/// met (a `writeConcernError`, as a replica set does when a majority does not confirm in
/// time): the event is not published and the projection is tried again; once the concern
/// is met, the event goes out, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_write_concern_is_a_retried_projection_not_a_published_event() {
    let proxy = MongoWireProxy::start(host_port(&mongo_url())).await;
    let app = spawn_app_with(AppOptions {
        mongo_url: Some(proxy.url()),
        ..Default::default()
    })
    .await;
    let (_, review) = app.pending_review().await;
    app.outbox_drained(Duration::from_secs(10)).await;
    app.take_events().await;
    proxy.refuse_write_concern_of(Some("update"));
    assert_eq!(
        app.approve(&review, &app.reviewer()).await.status(),
        StatusCode::OK
    );
    wait_for(
        "two refused projection writes",
        Duration::from_secs(15),
        || async { (proxy.refused() >= 2).then_some(()) },
    )
    .await;
    assert_eq!(app.undelivered().await, 1, "the approval's event waits");
    assert!(app.take_events().await.is_empty(), "nothing published");
    proxy.refuse_write_concern_of(None);
    let events = app.wait_events(1, Duration::from_secs(15)).await;
    assert_eq!(events[0]["event_type"], "document.approved");
    app.outbox_drained(Duration::from_secs(10)).await;
    assert!(app.take_events().await.is_empty(), "published once");
    app.finish().await;
}

/// `n` documents created and projected, and a projection of `app`'s reaching MongoDB
/// through a proxy that reads its commands.
async fn projected_behind_a_proxy(
    app: &TestApp,
    n: usize,
) -> (Vec<uuid::Uuid>, MongoWireProxy, MongoProjection) {
    let mut ids = Vec::new();
    for i in 0..n {
        ids.push(app.create_document(&format!("group {i}"), "v1").await.id);
    }
    app.outbox_drained(Duration::from_secs(10)).await;
    let proxy = MongoWireProxy::start(host_port(&mongo_url())).await;
    let mongo = projection(&proxy.url(), app).await;
    (ids, proxy, mongo)
}

/// How many statements each `update` command through `proxy` carried, in order.
fn update_sizes(proxy: &MongoWireProxy) -> Vec<usize> {
    proxy
        .commands("update")
        .iter()
        .map(|u| u.get_array("updates").map_or(0, |a| a.len()))
        .collect()
}

/// Projection writes that arrive together go out together: 31 documents projected at once
/// reach MongoDB in fewer `update` commands than writes, and every copy is written. A copy
/// older than the one MongoDB holds, sent with fresh ones and a document MongoDB does not
/// hold yet, is found stale and changes nothing; the others of its group are written, the
/// new document inserted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_projections_share_commands_and_a_stale_copy_stays_out() {
    let app = spawn_app().await;
    let (ids, proxy, mongo) = projected_behind_a_proxy(&app, 32).await;
    let at = Utc::now();
    let fresh: Vec<Document> = ids[1..]
        .iter()
        .map(|id| copy(*id, 3, &format!("v3 of {id}"), at))
        .collect();
    let outcomes = join_all(fresh.iter().map(|c| mongo.project(c))).await;
    assert!(outcomes.iter().all(|o| matches!(o, Ok(Projected::Updated))));
    let sizes = update_sizes(&proxy);
    assert_eq!(sizes.iter().sum::<usize>(), 31, "{sizes:?}");
    assert!(sizes.len() < 31, "each update went alone: {sizes:?}");
    // FerretDB holds a connection of its pool of 50 per statement until a command ends.
    assert!(
        sizes.iter().all(|n| *n <= 8),
        "a command too large: {sizes:?}"
    );
    let figures = mongo.group_figures().expect("grouped by default");
    assert_eq!(figures.updates.load(Relaxed), 31);
    assert!(figures.commands.load(Relaxed) < 31);

    // Document 0 holds version 9; a copy of version 5 goes with fresh ones.
    let first = copy(ids[0], 9, "v9", at);
    assert_eq!(mongo.project(&first).await.unwrap(), Projected::Updated);
    let absent = uuid::Uuid::now_v7();
    let mut mixed = vec![copy(ids[0], 5, "v5", at), copy(absent, 1, "new", at)];
    mixed.extend(
        ids[1..9]
            .iter()
            .map(|id| copy(*id, 4, &format!("v4 of {id}"), at)),
    );
    let outcomes = join_all(mixed.iter().map(|c| mongo.project(c))).await;
    assert!(matches!(outcomes[0], Ok(Projected::Stale)), "{outcomes:?}");
    assert!(
        matches!(outcomes[1], Ok(Projected::Inserted)),
        "{outcomes:?}"
    );
    assert!(outcomes[2..]
        .iter()
        .all(|o| matches!(o, Ok(Projected::Updated))));
    let held = app.mongo_doc(&ids[0].to_string()).await.unwrap();
    assert_eq!(held.get_str("body").unwrap(), "v9");
    let inserted = app.mongo_doc(&absent.to_string()).await.unwrap();
    assert_eq!(inserted.get_str("body").unwrap(), "new");
    for (i, id) in ids.iter().enumerate().skip(1) {
        let m = app.mongo_doc(&id.to_string()).await.unwrap();
        let (v, body) = if i < 9 { (4, "v4") } else { (3, "v3") };
        assert_eq!(m.get_i64("head_version").unwrap(), v, "{id}");
        assert_eq!(m.get_str("body").unwrap(), format!("{body} of {id}"));
    }
    app.finish().await;
}

/// A second grouped command goes while the first is unanswered: with one command at a
/// time, updates that arrive meanwhile waited for its answer, and under load the projection
/// was what approvals waited for. The first update's answer is held until a second command
/// is sent (at most 5 s): the updates that arrive meanwhile do not wait for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_group_goes_while_the_first_is_unanswered() {
    let app = spawn_app().await;
    let (ids, proxy, mongo) = projected_behind_a_proxy(&app, 9).await;
    proxy.hold_updates_until_sent(2);
    let at = Utc::now();
    let copies: Vec<Document> = ids.iter().map(|id| copy(*id, 3, "v3", at)).collect();
    let first = {
        let (mongo, c) = (mongo.clone(), copies[0].clone());
        tokio::spawn(async move { mongo.project(&c).await })
    };
    wait_for(
        "the first update to be sent",
        Duration::from_secs(10),
        || {
            let sent = proxy.commands("update").len();
            async move { (sent == 1).then_some(()) }
        },
    )
    .await;
    let rest = join_all(copies[1..].iter().map(|c| mongo.project(c))).await;
    assert!(matches!(first.await.unwrap(), Ok(Projected::Updated)));
    assert!(
        rest.iter().all(|o| matches!(o, Ok(Projected::Updated))),
        "{rest:?}"
    );
    assert_eq!(
        proxy.updates_open_max(),
        2,
        "the second command waited for the first"
    );
    let sizes = update_sizes(&proxy);
    assert_eq!(sizes[0], 1, "{sizes:?}");
    assert_eq!(sizes.iter().sum::<usize>(), 9, "{sizes:?}");
    app.finish().await;
}
