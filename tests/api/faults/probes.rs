//! `/readyz` and `/metrics` reuse what their round trips found for `server.probe_cache_ms`,
//! one refresh at a time: a flood of probes (a monitoring system retrying during an outage)
//! costs the pool a few connections per second, not one or two per probe, and writes go on.
//! Readiness still turns unready within the cache's age plus the check timeout.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures_util::stream::{self, StreamExt};
use reqwest::StatusCode;

use crate::support::app::{spawn_app, spawn_app_with, AppOptions, TestApp};
use crate::support::inspect::wait_for;
use kh_review_testkit::proxy::Proxy;
use kh_review_testkit::stores::{pg_url, with_db};

const CACHE_MS: u64 = 1000;
/// The timeout of each dependency's check (`usecases::probes`).
const CHECK_TIMEOUT: Duration = Duration::from_secs(2);

/// Connections the app's pool has handed out so far (`kh_db_pool_acquisitions_total`).
async fn acquisitions(app: &TestApp) -> f64 {
    let n = app.metric("kh_db_pool_acquisitions_total").await;
    n.expect("kh_db_pool_acquisitions_total in /metrics")
}

/// 1,000 probes, 100 at a time, half `/metrics` and half `/readyz`, with an approval sent
/// once the first 100 have answered: the pool hands out a handful of connections for all
/// the probes (today's code: one per `/readyz`, two per `/metrics`), and the approval
/// answers promptly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_probes_costs_the_pool_a_few_connections() {
    let app = spawn_app_with(AppOptions {
        probe_cache_ms: CACHE_MS,
        run_dispatcher: false,
        ..Default::default()
    })
    .await;
    let (_, review_id) = app.pending_review().await;
    let before = acquisitions(&app).await;
    let answered = AtomicUsize::new(0);
    let started = Instant::now();
    let (app_ref, answered_ref) = (&app, &answered);
    let flood = stream::iter(0..1000)
        .map(|n| {
            let path = if n % 2 == 0 { "/metrics" } else { "/readyz" };
            let (app, answered) = (app_ref, answered_ref);
            async move {
                let r = app.client.get(app.url(path)).send().await.unwrap();
                answered.fetch_add(1, Ordering::Relaxed);
                (path, r.status())
            }
        })
        .buffer_unordered(100)
        .collect::<Vec<_>>();
    let approve = async {
        wait_for("100 probes answered", Duration::from_secs(30), || async {
            (answered.load(Ordering::Relaxed) >= 100).then_some(())
        })
        .await;
        // Sampled as the approval is sent: cached probes answer so fast that the rest of
        // the flood may be done before the approval's reply comes back.
        let during = answered.load(Ordering::Relaxed);
        let t = Instant::now();
        let status = app.approve(&review_id, &app.reviewer()).await.status();
        (status, t.elapsed(), during)
    };
    let (statuses, (approved, approve_took, during)) = tokio::join!(flood, approve);
    let elapsed = started.elapsed();
    let after = acquisitions(&app).await;
    for (path, status) in &statuses {
        assert_eq!(*status, StatusCode::OK, "{path}");
    }
    assert_eq!(approved, StatusCode::OK);
    assert!(during < 1000, "the approval ran during the flood");
    assert!(
        approve_took < Duration::from_secs(1),
        "the approval took {approve_took:?} during the flood"
    );
    // Each cache refreshes at most once per CACHE_MS: readiness takes one connection,
    // the outbox figures two; the approval takes a few (its transaction, its delivery).
    let refreshes = (elapsed.as_millis() as f64 / CACHE_MS as f64).ceil() + 1.0;
    let bound = 3.0 * refreshes + 6.0;
    let used = after - before;
    eprintln!("1000 probes in {elapsed:?}: {used} pool acquisitions (bound {bound}); approval {approve_took:?}");
    assert!(
        used <= bound,
        "{used} connections handed out for 1000 probes and one approval in {elapsed:?} \
         (at most {bound} expected)"
    );
    app.finish().await;
}

/// PostgreSQL goes away (its connections cut, new ones refused) right after `/readyz` said
/// ready: `/readyz` may repeat "ready" for up to `probe_cache_ms`, then says 503 not_ready
/// within the check timeout, never later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_turns_unready_within_the_cache_age_and_the_check_timeout() {
    let owner = spawn_app().await;
    let (proxy, via_proxy) = Proxy::in_front_of(&pg_url()).await;
    let app = spawn_app_with(AppOptions {
        database_url: Some(with_db(&via_proxy, &owner.shared.db_name)),
        share_with: Some(owner.shared.clone()),
        run_dispatcher: false,
        probe_cache_ms: CACHE_MS,
        ..Default::default()
    })
    .await;
    let ready = app.client.get(app.url("/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), StatusCode::OK);
    proxy.cut();
    let cut = Instant::now();
    let limit = Duration::from_millis(CACHE_MS) + CHECK_TIMEOUT;
    // Margin for scheduling on a shared, busy machine.
    let deadline = limit + Duration::from_millis(1500);
    let unready = wait_for("/readyz to say not_ready", deadline, || async {
        let r = app.client.get(app.url("/readyz")).send().await.ok()?;
        (r.status() == StatusCode::SERVICE_UNAVAILABLE).then(|| cut.elapsed())
    })
    .await;
    let v: serde_json::Value = app.public_json("/readyz").await;
    assert_eq!(v["status"], "not_ready", "{v}");
    assert_eq!(v["checks"]["postgresql"]["status"], "down", "{v}");
    eprintln!("not_ready {unready:?} after the cut (limit {limit:?})");
    assert!(
        unready <= deadline,
        "not_ready only {unready:?} after the cut"
    );
    app.stop().await;
    owner.finish().await;
}
