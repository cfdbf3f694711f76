//! The service on a real Sentinel set-up (a master, a replica, three sentinels;
//! `scripts/services.sh up redis-sentinel`): the master killed, a manual failover, and the
//! failover race that makes a Redis lock unsafe on its own.

use std::time::{Duration, Instant};

use kh_review::web::auth::Role;
use kh_review::web::test_hooks::PAUSE_AFTER_LOCK_HEADER;
use reqwest::StatusCode;

use crate::support::app::{spawn_app_with, AppOptions, TestApp, REVIEWER2};
use crate::support::inspect::{expect_error, wait_for};
use crate::support::topology::{
    approve_one, node, redis_guarding, sentinel_master, sentinels_promoted_other_than, Topology,
    MASTER_NAME, SENTINEL_DATA_PORTS, SENTINEL_PORTS,
};
use crate::support::views::Transition;

/// A test app on the Sentinel set-up that has approved one review under the Redis lock.
async fn guarded_app(topology: &Topology) -> TestApp {
    let app = spawn_app_with(AppOptions {
        breaker_open_ms: 500,
        ..topology.app_options()
    })
    .await;
    assert_eq!(approve_one(&app).await, "redis");
    app
}

/// Approves fresh reviews until one runs under the Redis lock.
async fn redis_guarded_again(app: &TestApp, deadline: Duration) {
    wait_for("a Redis-guarded approval", deadline, || async {
        (approve_one(app).await == "redis").then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sentinel_the_service_follows_a_killed_master_to_the_promoted_replica() {
    let topology = Topology::sentinel().await;
    let app = guarded_app(&topology).await;
    let old = sentinel_master().await;
    topology.kill(old);
    let killed = Instant::now();
    let new = sentinels_promoted_other_than(old, Duration::from_secs(15)).await;
    let promoted = killed.elapsed();
    wait_for(
        "/readyz to show Redis up",
        Duration::from_secs(10),
        || async { redis_guarding(&app).await.then_some(()) },
    )
    .await;
    let ready_after = killed.elapsed();
    assert!(ready_after < Duration::from_secs(10), "{ready_after:?}");
    redis_guarded_again(&app, Duration::from_secs(5)).await;
    let n: i64 = node(new, &["DBSIZE"]).await.unwrap();
    assert!(n > 0, "the lock's keys now live on the new master");
    eprintln!(
        "sentinel: master {old} killed, {new} promoted after {promoted:?}; /readyz up and \
         approvals Redis-guarded after {ready_after:?}"
    );
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sentinel_a_manual_failover_is_followed_without_a_restart() {
    let topology = Topology::sentinel().await;
    let app = guarded_app(&topology).await;
    let old = sentinel_master().await;
    let started = Instant::now();
    let _: String = node(SENTINEL_PORTS[0], &["SENTINEL", "FAILOVER", MASTER_NAME])
        .await
        .expect("SENTINEL FAILOVER");
    let new = sentinels_promoted_other_than(old, Duration::from_secs(15)).await;
    // The old master lives on as a read-only replica: a pooled connection to it must not
    // keep serving (every lock would fail with READONLY).
    redis_guarded_again(&app, Duration::from_secs(10)).await;
    let back_after = started.elapsed();
    let n: i64 = node(new, &["DBSIZE"]).await.unwrap();
    assert!(n > 0, "the lock's keys now live on the new master");
    eprintln!("sentinel: manual failover {old} -> {new}; Redis-guarded again after {back_after:?}");
    app.finish().await;
}

/// Holder A has taken `key` on the master `old`, whose replica's writes are paused: kills
/// `old`, promotes the replica (dropping the replication stream it had not applied), waits
/// for the sentinels to name it master, and for the service to take locks again. A's fencing token, and how
/// long until the service was Redis-guarded again.
async fn fail_over_before_the_key_replicates(
    app: &TestApp,
    topology: &Topology,
    key: &str,
    old: u16,
    replica: u16,
) -> (i64, Duration) {
    let fence = format!("{key}:fence");
    let a_fence: String = wait_for("A to take the lock", Duration::from_secs(5), || async {
        node::<Option<String>>(old, &["GET", &fence])
            .await
            .ok()
            .flatten()
    })
    .await;
    let on_replica: Option<String> = node(replica, &["GET", key]).await.unwrap();
    assert_eq!(on_replica, None, "the key has not reached the replica");
    topology.kill(old);
    let killed = Instant::now();
    // Promote the replica before it applies what it holds back: REPLICAOF NO ONE drops the
    // unapplied replication stream. Unpause at once: sentinels talk to it through PUBLISH,
    // which the pause holds too, and a replica that stops answering is no candidate.
    let _: String = node(replica, &["REPLICAOF", "NO", "ONE"]).await.unwrap();
    let _: String = node(replica, &["CLIENT", "UNPAUSE"]).await.unwrap();
    let new = sentinels_promoted_other_than(old, Duration::from_secs(20)).await;
    assert_eq!(new, replica);
    let lost: Option<String> = node(new, &["GET", key]).await.unwrap();
    assert_eq!(lost, None, "the promoted replica never got A's key");
    wait_for(
        "Redis up, breaker closed",
        Duration::from_secs(10),
        || async { redis_guarding(app).await.then_some(()) },
    )
    .await;
    (a_fence.parse().unwrap(), killed.elapsed())
}

/// The failover race that makes a Redis lock unsafe on its own. Holder A takes the lock on
/// the master; the replica never gets the key; the master dies; the replica is promoted;
/// holder B takes the same key on the new master and commits. A wakes, still within its
/// own lease, and must commit nothing and overwrite nothing: its fencing token is older than
/// B's, which the document row now carries.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sentinel_a_lock_lost_in_a_failover_is_fenced_off() {
    let topology = Topology::sentinel().await;
    let app = spawn_app_with(AppOptions {
        // A's lease outlives the whole failover by its own clock, so only the fence can stop
        // it (renewals are suspended: a failed renewal would stop it first).
        lock_ttl_ms: 40_000,
        breaker_open_ms: 300,
        ..topology.app_options()
    })
    .await;
    let (doc_id, review_id) = app.pending_review().await;
    let key = app.lock_key_review(&review_id);
    let old = sentinel_master().await;
    let replica = *SENTINEL_DATA_PORTS.iter().find(|&&p| p != old).unwrap();
    // The replica applies no write (the replication stream included) until unpaused.
    let _: String = node(replica, &["CLIENT", "PAUSE", "30000", "WRITE"])
        .await
        .expect("CLIENT PAUSE on the replica");
    let a = app
        .approve_paused(&review_id, PAUSE_AFTER_LOCK_HEADER, 12_000, true)
        .send();
    let b = async {
        let (a_fence, back_after) =
            fail_over_before_the_key_replicates(&app, &topology, &key, old, replica).await;
        let b = app
            .approve(&review_id, &app.token(REVIEWER2, &[Role::Reviewer]))
            .await;
        assert_eq!(b.status(), StatusCode::OK, "B decides on the new master");
        (a_fence, back_after, b.json::<Transition>().await.unwrap())
    };
    let (a, (a_fence, back_after, b)) = tokio::join!(a, b);
    expect_error(a.unwrap(), StatusCode::CONFLICT, "LOCK_LOST").await;

    let (mode, b_fence): (String, Option<i64>) = sqlx::query_as(
        "SELECT lock_mode, fence_token FROM audit_log WHERE review_id = $1::uuid AND action = 'approve'",
    )
    .bind(&review_id)
    .fetch_one(&app.pg)
    .await
    .unwrap();
    assert_eq!(mode, "redis", "B held the Redis lock on the new master");
    let b_fence = b_fence.expect("B's fencing token");
    assert!(b_fence > a_fence, "B's token {b_fence} above A's {a_fence}");
    let doc: (String, i64) =
        sqlx::query_as("SELECT status, version FROM documents WHERE id = $1::uuid")
            .bind(&doc_id)
            .fetch_one(&app.pg)
            .await
            .unwrap();
    assert_eq!(
        doc,
        ("APPROVED".into(), b.document.version),
        "A overwrote nothing"
    );
    // The review lock's highest token is kept on the review it guards.
    let kept: Option<i64> =
        sqlx::query_scalar("SELECT fence_token FROM reviews WHERE id = $1::uuid")
            .bind(&review_id)
            .fetch_one(&app.pg)
            .await
            .unwrap();
    assert_eq!(kept, Some(b_fence), "B's token kept on the review");
    let decisions = "SELECT count(*) FROM audit_log WHERE action IN ('approve', 'reject')";
    assert_eq!(app.count(decisions).await, 1, "one transition");
    app.outbox_drained(Duration::from_secs(15)).await;
    let m = app.mongo_doc(&doc_id).await.unwrap();
    assert_eq!(m.get_i64("version").unwrap(), b.document.version);
    let events = app.take_events().await;
    let approved: Vec<_> = events
        .iter()
        .filter(|(e, _)| e["event_type"] == "document.approved")
        .collect();
    assert_eq!(approved.len(), 1, "one event");
    assert_eq!(approved[0].0["actor_id"], REVIEWER2);
    eprintln!(
        "sentinel race: master {old} killed with A's key unreplicated; B Redis-guarded after \
         {back_after:?}; A fenced off (token {a_fence} < {b_fence}); 1 transition, 1 event"
    );
    app.finish().await;
}
