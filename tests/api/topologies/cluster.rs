//! The service on a real Redis Cluster (3 masters, 3 replicas; `scripts/services.sh up
//! redis-cluster`): hash-tagged lock keys on every master, and a master killed mid-run.

use std::time::{Duration, Instant};

use futures_util::future::join_all;
use kh_review::web::auth::Role;
use kh_review::web::test_hooks::PAUSE_AFTER_LOCK_HEADER;
use reqwest::StatusCode;
use serde_json::Value;

use crate::routes::concurrency::timed_storm;
use crate::support::app::{spawn_app_with, AppOptions, TestApp, REVIEWER};
use crate::support::inspect::wait_for;
use crate::support::topology::{
    approve_one, cluster_masters, cluster_replicas, master_of, node, Topology,
};

/// Holds the lock of `review_id` with a paused approve, fires `n` conflicting decisions at
/// it, then lets the holder finish. Returns the holder's reply and the others' replies with
/// their latencies, and whether the last of the others was answered before the holder.
async fn conflict(app: &TestApp, topology: &Topology, review_id: &str, n: usize) -> Conflict {
    let key = app.lock_key_review(review_id);
    let holder = async {
        let r = app
            .approve_paused(review_id, PAUSE_AFTER_LOCK_HEADER, 1500, false)
            .send()
            .await
            .unwrap();
        (r.status(), Instant::now())
    };
    let others = async {
        wait_for(
            "the holder to take the lock",
            Duration::from_secs(5),
            || async { (!topology.keys(&key).await.is_empty()).then_some(()) },
        )
        .await;
        let replies = timed_storm(app, review_id, n).await;
        (replies, Instant::now())
    };
    let ((holder, holder_done), (others, others_done)) = tokio::join!(holder, others);
    Conflict {
        holder,
        others,
        before_the_holder: others_done < holder_done,
    }
}

struct Conflict {
    holder: StatusCode,
    others: Vec<(StatusCode, Value, Duration)>,
    /// The last of the others was answered before the holder (which holds the lock 1.5 s).
    before_the_holder: bool,
}

/// The one winner, and every other reply a `LOCK_NOT_ACQUIRED` given at once: while the
/// holder still held the lock, not after waiting for it.
fn refused_at_once(c: &Conflict) {
    assert_eq!(c.holder, StatusCode::OK, "the holder decides");
    for (status, body, _) in &c.others {
        assert_eq!(*status, StatusCode::CONFLICT, "{body}");
        assert_eq!(body["code"], "LOCK_NOT_ACQUIRED", "{body}");
    }
    let slowest = c.others.iter().map(|o| o.2).max();
    assert!(
        c.before_the_holder,
        "refused at once, not after the holder (the slowest took {slowest:?})"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_conflicting_decisions_meet_the_redis_lock_on_every_master() {
    let topology = Topology::cluster().await;
    let app = spawn_app_with(topology.app_options()).await;
    let masters: Vec<u16> = cluster_masters().await.into_iter().map(|m| m.0).collect();
    assert_eq!(masters.len(), 3, "3 masters: {masters:?}");

    // 50 conflicting decisions on one review.
    let (doc_id, review_id) = app.pending_review().await;
    refused_at_once(&conflict(&app, &topology, &review_id, 49).await);
    let sql = format!(
        "SELECT count(*) FROM audit_log WHERE document_id = '{doc_id}' AND lock_mode = 'redis'"
    );
    assert_eq!(
        app.count(&sql).await,
        2,
        "submit and approve ran under the Redis lock"
    );

    // Reviews whose lock keys land on each of the three masters.
    let mut by_master: Vec<(u16, String)> = Vec::new();
    while by_master.len() < 3 {
        let (_, review_id) = app.pending_review().await;
        let master = master_of(&app.lock_key_review(&review_id)).await;
        if by_master.iter().all(|(m, _)| *m != master) {
            by_master.push((master, review_id));
        }
    }
    let runs = by_master
        .iter()
        .map(|(_, review_id)| conflict(&app, &topology, review_id, 10));
    for c in join_all(runs).await {
        refused_at_once(&c);
    }
    assert_eq!(
        app.count(
            "SELECT count(*) FROM audit_log WHERE lock_mode <> 'redis' AND action <> 'create'"
        )
        .await,
        0,
        "no request ran degraded"
    );
    assert_eq!(
        app.count("SELECT count(*) FROM reviews WHERE status = 'APPROVED'")
            .await,
        4
    );
    app.outbox_drained(Duration::from_secs(15)).await;
    let decisions = app
        .take_events()
        .await
        .into_iter()
        .filter(|(e, _)| e["event_type"] == "document.approved")
        .count();
    assert_eq!(decisions, 4, "one event per decision");
    let left = topology.lock_keys_left(&app.shared.prefix).await;
    assert!(left.is_empty(), "no lock key left behind: {left:?}");
    app.finish().await;
}

/// Approvals one after another over `reviews`: 20, then `victim` is killed, then on through
/// the failover until 20 have run under the Redis lock again after the replica took over.
/// Each approval's (time since the kill, lock mode), and when the replica was promoted.
async fn approve_through_a_failover(
    app: &TestApp,
    topology: &Topology,
    reviews: &[String],
    victim: u16,
) -> (Vec<(Option<Duration>, String)>, Option<Duration>) {
    let token = app.token(REVIEWER, &[Role::Reviewer]);
    let (mut done, mut killed_at, mut promoted_at, mut guarded) = (Vec::new(), None, None, 0);
    for (i, review_id) in reviews.iter().enumerate() {
        if i == 20 {
            topology.kill(victim);
            killed_at = Some(Instant::now());
        }
        let r = app.approve(review_id, &token).await;
        assert_eq!(
            r.status(),
            StatusCode::OK,
            "request {i}: {:?}",
            r.text().await
        );
        let mode = app.approval_lock_mode(review_id).await;
        done.push((killed_at.map(|at| at.elapsed()), mode.clone()));
        if killed_at.is_some() && promoted_at.is_none() {
            let masters = cluster_masters().await;
            if masters.len() == 3 && masters.iter().all(|m| m.0 != victim) {
                promoted_at = killed_at.map(|at| at.elapsed());
            }
        }
        if promoted_at.is_some() && mode == "redis" {
            guarded += 1;
            if guarded == 20 {
                return (done, promoted_at);
            }
        }
    }
    panic!(
        "not back under the Redis lock within {} approvals",
        reviews.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_a_master_killed_mid_run_costs_at_most_a_brief_degraded_spell() {
    let topology = Topology::cluster().await;
    let app = spawn_app_with(AppOptions {
        breaker_open_ms: 500,
        ..topology.app_options()
    })
    .await;
    let reviews = app.pending_reviews_in_db(600).await;
    let victim = master_of(&app.lock_key_review(&reviews[20])).await;
    let (done, promoted_at) = approve_through_a_failover(&app, &topology, &reviews, victim).await;
    let degraded: Vec<Duration> = done
        .iter()
        .filter(|(_, mode)| mode != "redis")
        .map(|(at, _)| at.expect("nothing degraded before the kill"))
        .collect();
    let back_after = degraded.iter().max().copied().unwrap_or_default();
    eprintln!(
        "cluster: master {victim} killed; replica promoted after {promoted_at:?}; {} of {} later \
         requests degraded; Redis-guarded again after {back_after:?}",
        degraded.len(),
        done.len() - 20
    );
    assert!(
        back_after < Duration::from_secs(8),
        "back to Redis-guarded requests within 8 s, was {back_after:?}"
    );
    let n = done.len() as i64;
    let approvals = "SELECT count(*) FROM audit_log WHERE action = 'approve'";
    assert_eq!(app.count(approvals).await, n, "one transition per review");
    let reviews_decided =
        "SELECT count(DISTINCT review_id) FROM audit_log WHERE action = 'approve'";
    assert_eq!(app.count(reviews_decided).await, n);
    app.outbox_drained(Duration::from_secs(20)).await;
    assert_eq!(
        app.take_events().await.len() as i64,
        n,
        "one event per transition"
    );
    // A lock released on the dead master (its key replicated), or taken by an acquire the
    // cluster client retried after the request gave up, is given back once the new master
    // answers: well within the 10 s TTL, not by expiry.
    wait_for(
        "every lock key given back (well within the 10 s TTL)",
        Duration::from_secs(4),
        || async {
            let left = topology.lock_keys_left(&app.shared.prefix).await;
            left.is_empty().then_some(())
        },
    )
    .await;
    app.finish().await;
}

/// A master that has forgotten the lock scripts (restarted, or a replica just promoted)
/// learns them from the request itself, while another node is down: the script is sent by
/// its source to the one node that serves the key, not loaded on every node (which fails
/// while any node is down).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_a_master_without_the_scripts_learns_them_while_a_node_is_down() {
    let topology = Topology::cluster().await;
    let app = spawn_app_with(topology.app_options()).await;
    assert_eq!(approve_one(&app).await, "redis", "the scripts are loaded");
    let replica = cluster_replicas().await[0];
    topology.kill(replica);
    for (master, _) in cluster_masters().await {
        let _: String = node(master, &["SCRIPT", "FLUSH"]).await.unwrap();
    }
    for _ in 0..3 {
        assert_eq!(
            approve_one(&app).await,
            "redis",
            "with replica {replica} down"
        );
    }
    app.finish().await;
}
