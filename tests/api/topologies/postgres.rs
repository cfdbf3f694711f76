//! PostgreSQL under Patroni behind HAProxy (`scripts/services.sh up postgres-ha`), its
//! primary killed and switched over under load, with no restart of the service: clients
//! see `503 DEPENDENCY_UNAVAILABLE` during the switch and success after it, and on the new
//! primary no acknowledged transition is lost or doubled, every committed transition has
//! its event, and MongoDB (a FerretDB storing through the same proxy) holds each document's
//! last version. A session on a primary that came back as a replica is refused.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use sqlx::PgPool;

use crate::support::app::TestApp;
use crate::support::delivery::{committed_state_holds, events_of_outbox, outbox_drained};
use crate::support::inspect::{expect_error, wait_for};
use crate::support::load::{outage, steady_load, tally, Outcome, Progress, Step};
use crate::support::patroni::{
    database, instance, kill_member, leader, new_leader, only_unavailable, switchover, MONGO, PROXY,
};
use crate::support::topology::{profile_up, take_turn};

/// Three instances through the proxy, on a fresh database.
async fn instances() -> (Vec<TestApp>, PgPool) {
    let (db, pg) = database().await;
    let url = format!("{PROXY}/{db}");
    let owner = instance(url.clone(), None).await;
    let second = instance(url.clone(), Some(&owner)).await;
    let third = instance(url, Some(&owner)).await;
    (vec![owner, second, third], pg)
}

/// The checks after a failover at `at`; prints what the clients saw.
async fn after_failover(
    apps: &[TestApp],
    pg: &PgPool,
    outcomes: &[Outcome],
    at: Instant,
    what: &str,
) {
    println!("{what}: answers: {}", tally(outcomes));
    only_unavailable(outcomes);
    match outage(outcomes, at) {
        Some((first_503, back)) => println!(
            "{what}: the first 503 came {:.2} s after it, the first success after that {:.2} s after it",
            first_503.as_secs_f64(),
            back.expect("requests succeed again without a restart")
                .as_secs_f64()
        ),
        None => println!("{what}: no request failed"),
    }
    let later = outcomes
        .iter()
        .filter(|o| o.step == Step::Approve && o.ok() && o.at > at)
        .count();
    assert!(
        later > 0,
        "approvals succeed after the {what}, without a restart"
    );
    outbox_drained(pg).await;
    let mut events = HashMap::new();
    events_of_outbox(&apps[0], pg, &mut events, false).await;
    let duplicates =
        committed_state_holds(pg, MONGO, &apps[0].shared.mongo_db, outcomes, &events).await;
    println!(
        "{what}: {} events, one per committed transition; {duplicates} duplicates",
        events.len()
    );
}

/// `fault` (given the load's progress; it returns when the fault struck) during `secs` of
/// load on three fresh instances through the proxy, then the checks.
async fn failover_under_load<F, Fut>(secs: u64, what: &str, fault: F)
where
    F: FnOnce(Arc<Progress>) -> Fut,
    Fut: Future<Output = Instant>,
{
    let _turn = take_turn().await;
    profile_up("postgres-ha").await;
    let (apps, pg) = instances().await;
    let progress = Arc::new(Progress::default());
    let refs: Vec<&TestApp> = apps.iter().collect();
    let load = steady_load(
        &refs,
        Duration::from_secs(secs),
        Duration::from_millis(200),
        &progress,
    );
    let (outcomes, at) = tokio::join!(load, fault(progress.clone()));
    after_failover(&apps, &pg, &outcomes, at, what).await;
    for app in apps.into_iter().rev() {
        app.stop().await;
    }
}

/// 30 s of load (15 flows a second); once 150 approvals are in (about 10 s), the leader's
/// Patroni and its postmaster get SIGKILL together.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_primary_killed_under_load_loses_no_acknowledged_transition() {
    failover_under_load(30, "primary killed", |progress| async move {
        progress.approvals(150).await;
        let (old, _) = leader().await.expect("a leader");
        let at = Instant::now();
        kill_member(&old);
        let new = new_leader(&old, Duration::from_secs(60)).await;
        println!(
            "kill -9 of {old}: {new} leads {:.2} s later",
            at.elapsed().as_secs_f64()
        );
        profile_up("postgres-ha").await; // the old primary comes back, as a replica
        println!(
            "{old} back as a replica {:.1} s after the kill",
            at.elapsed().as_secs_f64()
        );
        at
    })
    .await
}

/// 20 s of load; once 75 approvals are in (about 5 s), a switchover to the sync standby
/// (patronictl).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_switchover_under_load_loses_no_acknowledged_transition() {
    failover_under_load(20, "switchover", |progress| async move {
        progress.approvals(75).await;
        let (old, _) = leader().await.expect("a leader");
        let at = Instant::now();
        switchover().await;
        let (new, _) = leader().await.expect("a leader");
        assert_ne!(new, old);
        println!(
            "switchover {old} -> {new}: healthy again {:.1} s later",
            at.elapsed().as_secs_f64()
        );
        at
    })
    .await
}

/// An instance that names the primary itself (no proxy) after that member was demoted by
/// a switchover: its sessions there are read-only, so each approval is a 503
/// DEPENDENCY_UNAVAILABLE (never a 500, never a write), and the pool keeps no session on
/// the demoted member.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_demoted_primarys_sessions_are_refused() {
    let _turn = take_turn().await;
    profile_up("postgres-ha").await;
    let (db, pg) = database().await;
    let (old, port) = leader().await.expect("a leader");
    let application = format!(
        "kh-demoted-{}",
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    );
    let direct = format!("postgres://kh:kh@127.0.0.1:{port}/{db}?application_name={application}");
    let app = instance(direct.clone(), None).await;
    app.approved_review().await; // a warm pool, on the primary
    let (_, review) = app.pending_review().await;
    switchover().await;
    let (new, _) = leader().await.expect("a leader");
    assert_ne!(new, old, "{old} was demoted");
    for _ in 0..3 {
        let r = app.approve(&review, &app.reviewer()).await;
        expect_error(r, StatusCode::SERVICE_UNAVAILABLE, "DEPENDENCY_UNAVAILABLE").await;
    }
    // What the contract promises is that no session is *kept* on the demoted member. The
    // instance's background tasks keep dialling the only address it knows, and each new
    // session shows until `after_connect` refuses it, so on a busy machine one may show at
    // every instant: every session seen (pid and start, not a count) must be gone within
    // a bound.
    let on_old = PgPool::connect(&direct).await.unwrap();
    let sessions = || async {
        sqlx::query_scalar::<_, String>(
            "SELECT pid::text || ' ' || backend_start::text FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()",
        )
        .bind(&application)
        .fetch_all(&on_old)
        .await
        .ok()
    };
    let seen = wait_for(
        "the sessions on the demoted member",
        Duration::from_secs(15),
        sessions,
    )
    .await;
    wait_for(
        &format!("no session of the instance kept on the demoted {old} ({seen:?})"),
        Duration::from_secs(15),
        || async {
            let now = sessions().await?;
            seen.iter().all(|s| !now.contains(s)).then_some(())
        },
    )
    .await;
    on_old.close().await;
    let status: String = sqlx::query_scalar("SELECT status::text FROM reviews WHERE id = $1::uuid")
        .bind(&review)
        .fetch_one(&pg)
        .await
        .unwrap();
    assert_ne!(status, "APPROVED", "nothing was written");
    app.stop().await;
}
