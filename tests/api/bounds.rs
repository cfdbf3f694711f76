//! Every statement the service sends PostgreSQL has a client-side bound, not only the write
//! transactions: a partitioned database (connections open, nothing coming back) never
//! answers, and its own `statement_timeout` cannot fire then. Requests end within the
//! bound (`database.tx_timeout()`) instead of hanging for the TCP retransmission timeout.

use std::time::{Duration, Instant};

use kh_review::review::hooks::PAUSE_AFTER_COMMIT_HEADER;
use reqwest::StatusCode;
use serde_json::json;

use crate::support::*;

/// How late past the bound an answer may come (scheduling on a shared, busy machine).
const MARGIN: Duration = Duration::from_secs(3);

/// An instance of `owner`'s deployment that reaches PostgreSQL through a proxy, with short
/// server-side timeouts so that its client-side bound is short too.
/// (The proxy comes second so that it is dropped first: a failed test's teardown must not
/// wait on a frozen database.)
async fn behind_proxy(owner: &TestApp) -> (TestApp, Proxy) {
    let (proxy, via_proxy) = Proxy::in_front_of(&pg_url()).await;
    let db_url = format!(
        "{}/{}",
        via_proxy.rsplit_once('/').unwrap().0,
        owner.shared.db_name
    );
    let app = spawn_app_with(AppOptions {
        database_url: Some(db_url),
        share_with: Some(owner.shared.clone()),
        configure: Some(Box::new(|s| {
            s.database.statement_timeout = Duration::from_secs(1);
            s.database.lock_timeout = Duration::from_secs(1);
        })),
        ..Default::default()
    })
    .await;
    (app, proxy)
}

/// PostgreSQL freezes right after an approve has committed: the approve still gets its 200
/// (the delivery attempt after COMMIT gives up on marking its outbox row within the bound;
/// the row stays for the dispatchers), and a GET and an idempotent create made while it is
/// frozen get a 503 within the bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_frozen_after_commit_answers_within_the_bound() {
    let owner = spawn_app().await; // the stores, reached directly
    let (app, proxy) = behind_proxy(&owner).await;
    let bound = app.settings.database.tx_timeout();
    let doc = owner.create_document("Frozen", "Body").await.id.to_string();
    let review = owner.pending_reviews_in_db(1).await.remove(0);
    let pause = Duration::from_millis(1500);
    let approve = app
        .client
        .post(app.url(&format!("/api/v1/reviews/{review}/approve")))
        .bearer_auth(app.reviewer())
        .header(PAUSE_AFTER_COMMIT_HEADER, pause.as_millis().to_string())
        .json(&json!({}))
        .send();
    let frozen_then = async {
        wait_for("the approve to commit", Duration::from_secs(10), || async {
            let status: String =
                sqlx::query_scalar("SELECT status FROM reviews WHERE id = $1::uuid")
                    .bind(&review)
                    .fetch_one(&owner.pg)
                    .await
                    .unwrap();
            (status == "APPROVED").then_some(())
        })
        .await;
        proxy.freeze();
        let frozen_at = Instant::now();
        let (path, token) = (format!("/api/v1/documents/{doc}"), app.reviewer());
        let get = timed(app.get(&path, &token));
        let create = timed(
            app.client
                .post(app.url("/api/v1/documents"))
                .bearer_auth(app.author())
                .header("Idempotency-Key", "frozen-create")
                .json(&json!({"title": "t", "body": "b"}))
                .send(),
        );
        let (get, create) = tokio::join!(get, create);
        (frozen_at, get, create)
    };
    let (approved, (frozen_at, (get, get_took), (create, create_took))) =
        tokio::join!(approve, frozen_then);
    let approve_took = frozen_at.elapsed();
    println!(
        "bound {bound:?}: approve answered {approve_took:?} after the freeze (it paused \
         {pause:?} after COMMIT), GET {get_took:?}, idempotent create {create_took:?}"
    );
    assert_eq!(approved.unwrap().status(), StatusCode::OK, "committed: 200");
    assert!(
        approve_took < pause + bound + MARGIN,
        "approve answered within the bound: {approve_took:?}"
    );
    for (what, took) in [("GET", get_took), ("idempotent create", create_took)] {
        assert!(took < bound + MARGIN, "{what} within the bound: {took:?}");
    }
    expect_error(
        get,
        StatusCode::SERVICE_UNAVAILABLE,
        "DEPENDENCY_UNAVAILABLE",
    )
    .await;
    let create = create.expect("an answer");
    expect_error(
        create,
        StatusCode::SERVICE_UNAVAILABLE,
        "DEPENDENCY_UNAVAILABLE",
    )
    .await;
    proxy.cut(); // the server sees the connections close
    let created: i64 = sqlx::query_scalar("SELECT count(*) FROM documents WHERE title = 't'")
        .fetch_one(&owner.pg)
        .await
        .unwrap();
    assert_eq!(created, 0, "the create never ran");
    app.stop().await;
    // The approve's event was not marked delivered by its request: the dispatchers deliver
    // it (the teardown fails on an undelivered row).
    owner.finish().await;
}

async fn timed<T>(request: impl std::future::Future<Output = T>) -> (T, Duration) {
    let started = Instant::now();
    let out = request.await;
    (out, started.elapsed())
}
