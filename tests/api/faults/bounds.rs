//! Every statement the service sends PostgreSQL has a client-side bound, not only the write
//! transactions: a partitioned database (connections open, nothing coming back) never
//! answers, and its own `statement_timeout` cannot fire then. Requests end within the
//! bound (`database.tx_timeout()`) instead of hanging for the TCP retransmission timeout.

use std::time::{Duration, Instant};

use kh_review::usecases::commit_signalled;
use kh_review::web::test_hooks::{PAUSE_AFTER_COMMIT_HEADER, SIGNAL_AFTER_COMMIT_HEADER};
use reqwest::StatusCode;
use serde_json::json;

use crate::support::app::{spawn_app, spawn_app_with, AppOptions, TestApp};
use crate::support::inspect::{expect_error, wait_for};
use kh_review_testkit::proxy::Proxy;
use kh_review_testkit::stores::{pg_url, with_db};

/// How late past the bound an answer may come (scheduling on a shared, busy machine).
const MARGIN: Duration = Duration::from_secs(3);

/// The proxied instances' server-side timeouts (`statement_timeout`, `lock_timeout`).
const SERVER_TIMEOUT: Duration = Duration::from_secs(1);

/// An instance of `owner`'s deployment that reaches PostgreSQL through a proxy, with short
/// server-side timeouts so that its client-side bound is short too, and no background
/// dispatcher: the statements under test are the only ones on its pool, so each runs on a
/// connection used moments before (the pool hands those out without a ping, whose wait
/// `acquire_timeout_ms` would bound instead).
/// (The proxy comes second so that it is dropped first: a failed test's teardown must not
/// wait on a frozen database.)
async fn behind_proxy(owner: &TestApp) -> (TestApp, Proxy) {
    let (proxy, via_proxy) = Proxy::in_front_of(&pg_url()).await;
    let db_url = with_db(&via_proxy, &owner.shared.db_name);
    let app = spawn_app_with(AppOptions {
        database_url: Some(db_url),
        share_with: Some(owner.shared.clone()),
        run_dispatcher: false,
        configure: Some(Box::new(|s| {
            s.database.statement_timeout = SERVER_TIMEOUT;
            s.database.lock_timeout = SERVER_TIMEOUT;
        })),
        ..Default::default()
    })
    .await;
    (app, proxy)
}

/// PostgreSQL freezes right after an approve has committed: the approve still gets its
/// 200 within the bound (the delivery attempt after COMMIT gives up marking its outbox row;
/// the row stays for the dispatchers). Returns how long after the freeze it answered.
async fn approve_frozen_after_commit(owner: &TestApp) -> Duration {
    let (app, proxy) = behind_proxy(owner).await;
    let review = owner.pending_reviews_in_db(1).await.remove(0);
    let token = uuid::Uuid::new_v4().as_u64_pair().0;
    let approve = async {
        let r = app
            .client
            .post(app.url(&format!("/api/v1/reviews/{review}/approve")))
            .bearer_auth(app.reviewer())
            .header(PAUSE_AFTER_COMMIT_HEADER, "500")
            .header(SIGNAL_AFTER_COMMIT_HEADER, token.to_string())
            .json(&json!({}))
            .send()
            .await;
        (r, Instant::now())
    };
    // Not as soon as the database shows the review approved: that comes a little before
    // the COMMIT's reply reaches the instance, and a freeze in between loses the reply (the
    // approve then answers 503, its outcome unknown to it).
    let freeze = async {
        wait_for(
            "the approve's COMMIT to return",
            Duration::from_secs(10),
            || async { commit_signalled(token).then_some(()) },
        )
        .await;
        proxy.freeze();
        Instant::now()
    };
    let ((approved, answered_at), frozen_at) = tokio::join!(approve, freeze);
    assert_eq!(approved.unwrap().status(), StatusCode::OK, "committed: 200");
    proxy.cut(); // the server sees the connections close
    app.stop().await;
    answered_at - frozen_at
}

/// PostgreSQL freezes; then `request` is sent to a fresh instance behind it, which has just
/// used its connection. It gets a 503 within the bound. Returns how long it took.
async fn frozen_then<F>(owner: &TestApp, request: impl FnOnce(&TestApp) -> F) -> Duration
where
    F: std::future::Future<Output = reqwest::Response>,
{
    let (app, proxy) = behind_proxy(owner).await;
    let ready = app.client.get(app.url("/readyz")).send().await.unwrap();
    assert_eq!(
        ready.status(),
        StatusCode::OK,
        "a connection, used just now"
    );
    proxy.freeze();
    let started = Instant::now();
    let r = request(&app).await;
    let took = started.elapsed();
    expect_error(r, StatusCode::SERVICE_UNAVAILABLE, "DEPENDENCY_UNAVAILABLE").await;
    proxy.cut();
    app.stop().await;
    took
}

/// Every kind of statement ends within the bound on a frozen database: the delivery attempt
/// after an approve's COMMIT, a GET, and the idempotency record of a keyed create.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_database_answers_within_the_bound() {
    let owner = spawn_app().await; // the stores, reached directly
    let mut proxied = owner.settings.database.clone();
    proxied.statement_timeout = SERVER_TIMEOUT;
    proxied.lock_timeout = SERVER_TIMEOUT;
    let bound = proxied.tx_timeout();
    let doc = owner.create_document("Frozen", "Body").await.id.to_string();
    let get = |app: &TestApp| {
        let (url, token) = (app.url(&format!("/api/v1/documents/{doc}")), app.reviewer());
        let client = app.client.clone();
        async move { client.get(url).bearer_auth(token).send().await.unwrap() }
    };
    let create = |app: &TestApp| {
        let req = app
            .client
            .post(app.url("/api/v1/documents"))
            .bearer_auth(app.author())
            .header("Idempotency-Key", "frozen-create")
            .json(&json!({"title": "t", "body": "b"}));
        async move { req.send().await.unwrap() }
    };
    let (approve_took, get_took, create_took) = tokio::join!(
        approve_frozen_after_commit(&owner),
        frozen_then(&owner, get),
        frozen_then(&owner, create),
    );
    println!(
        "bound {bound:?}: after the freeze the approve answered 200 in {approve_took:?}, \
         a GET 503 in {get_took:?}, an idempotent create 503 in {create_took:?}"
    );
    for (what, took) in [
        ("approve", approve_took),
        ("GET", get_took),
        ("idempotent create", create_took),
    ] {
        assert!(took < bound + MARGIN, "{what} within the bound: {took:?}");
    }
    let created: i64 = sqlx::query_scalar("SELECT count(*) FROM documents WHERE title = 't'")
        .fetch_one(&owner.pg)
        .await
        .unwrap();
    assert_eq!(created, 0, "the create never ran");
    // The approve's event was not marked delivered by its request: the owner's dispatcher
    // delivers it (the teardown fails on an undelivered row).
    owner.finish().await;
}
