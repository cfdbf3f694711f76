//! A three-node RabbitMQ cluster (`scripts/services.sh up rabbitmq-cluster`) whose node the
//! service publishes through is killed under load: requests keep succeeding, every
//! transition that got its 2xx has its event on a quorum queue, none lost (duplicates, as
//! at-least-once allows, counted and printed), and in the instances' quorum archive queue.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use lapin::options::{BasicGetOptions, QueueDeclareOptions, QueueDeleteOptions};
use lapin::types::FieldTable;
use lapin::{Channel, Connection, ConnectionProperties};
use serde_json::Value;

use kh_review::outbox::QueueType;

use crate::support::app::{spawn_app_with, AppOptions, TestApp};
use crate::support::inspect::wait_for;
use crate::support::load::{steady_load, tally, Outcome, Progress, Step};
use crate::support::topology::{profile_up, sigkill, state_dir, take_turn};
use kh_review_testkit::amqp::{declare_exchange_and_queue, Lasting};

const PORTS: [u16; 3] = [5681, 5682, 5683];

fn node_url(port: u16) -> String {
    format!("amqp://guest:guest@127.0.0.1:{port}/%2f")
}

/// SIGKILL for the cluster node on `port` (its Erlang VM, by its pid file).
fn kill_node(port: u16) {
    let node = state_dir().join("rabbitmq-cluster").join(port.to_string());
    sigkill(&[node.join("rabbitmq.pid")]);
}

/// A quorum queue bound to every event of `exchange`, declared through the node on `port`.
async fn quorum_queue(port: u16, exchange: &str, queue: &str) -> (Connection, Channel) {
    let conn = Connection::connect(&node_url(port), ConnectionProperties::default())
        .await
        .unwrap_or_else(|e| {
            panic!("node on {port}: {e} (scripts/services.sh up rabbitmq-cluster)")
        });
    let ch = conn.create_channel().await.unwrap();
    declare_exchange_and_queue(&ch, exchange, queue, Lasting::Quorum)
        .await
        .unwrap();
    (conn, ch)
}

/// Every message on `queue` now: (document_id, event_type) -> how many times.
async fn drain(ch: &Channel, queue: &str, into: &mut HashMap<(String, String), usize>) {
    while let Some(m) = ch
        .basic_get(queue.into(), BasicGetOptions { no_ack: true })
        .await
        .unwrap()
    {
        let v: Value = serde_json::from_slice(&m.delivery.data).unwrap();
        let key = (
            v["document_id"].as_str().unwrap_or_default().to_string(),
            v["event_type"].as_str().unwrap_or_default().to_string(),
        );
        *into.entry(key).or_default() += 1;
    }
}

/// An instance publishing to the cluster, with a quorum archive queue `archive`.
async fn instance(share_with: Option<&TestApp>, archive: &str) -> TestApp {
    let archive = archive.to_string();
    spawn_app_with(AppOptions {
        share_with: share_with.map(|a| a.shared.clone()),
        configure: Some(Box::new(move |s| {
            s.amqp.urls = PORTS.iter().map(|&p| node_url(p).into()).collect();
            s.amqp.bind_queue = archive.clone();
            s.amqp.bind_queue_type = QueueType::Quorum;
        })),
        ..Default::default()
    })
    .await
}

/// 3 instances approve for 30 s (a flow each 150 ms each); once 200 approvals are in (about
/// 10 s), the node they publish through (the first: each starts there) gets SIGKILL, and is
/// started again at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_killed_node_loses_no_event_of_an_acknowledged_transition() {
    let _turn = take_turn().await;
    profile_up("rabbitmq-cluster").await;
    let archive = format!("kh.test.archive.{}", uuid::Uuid::new_v4().simple());
    let owner = instance(None, &archive).await;
    let second = instance(Some(&owner), &archive).await;
    let third = instance(Some(&owner), &archive).await;
    let queue = format!("kh.test.quorum.{}", uuid::Uuid::new_v4().simple());
    let (_conn, ch) = quorum_queue(PORTS[1], &owner.shared.exchange, &queue).await;

    let progress = Progress::default();
    let killed = async {
        progress.approvals(200).await; // about 10 s into the load
        let (at, wall) = (Instant::now(), chrono::Utc::now());
        kill_node(PORTS[0]);
        profile_up("rabbitmq-cluster").await;
        println!(
            "node 1 killed and started again in {:.1} s",
            at.elapsed().as_secs_f64()
        );
        (at, wall)
    };
    let apps = [&owner, &second, &third];
    let load = steady_load(
        &apps,
        Duration::from_secs(30),
        Duration::from_millis(150),
        &progress,
    );
    let (outcomes, (_, killed_wall)) = tokio::join!(load, killed);
    println!("answers: {}", tally(&outcomes));
    assert!(
        outcomes.iter().all(|o| o.ok()),
        "every request succeeds: {}",
        tally(&outcomes)
    );

    owner.outbox_drained(Duration::from_secs(60)).await;
    print_first_delivery_after(&owner, killed_wall).await;
    let expected = acknowledged(&outcomes);
    let duplicates = all_on_queue(&ch, &queue, &expected).await;
    println!(
        "{} transitions acknowledged, each with its event on the quorum queue; {duplicates} duplicates",
        expected.len()
    );
    // A quorum queue's count is its leader's answer, and the kill may have moved the leader
    // moments ago; the count only grows, so it is read until it holds every event, not once.
    let archived = wait_for(
        "the archive queue to hold every event too",
        Duration::from_secs(30),
        || async {
            let n = message_count(&ch, &archive).await;
            (n >= expected.len()).then_some(n)
        },
    )
    .await;
    println!("the quorum archive queue holds {archived} events");
    ch.queue_delete(archive.as_str().into(), QueueDeleteOptions::default())
        .await
        .unwrap();
    ch.queue_delete(queue.as_str().into(), QueueDeleteOptions::default())
        .await
        .unwrap();
    for app in [third, second, owner] {
        app.stop().await;
    }
}

/// How long after the kill the first event of a transition committed after it, and the
/// last event of one committed before it, went out (published_at, PostgreSQL's clock).
async fn print_first_delivery_after(app: &TestApp, at: chrono::DateTime<chrono::Utc>) {
    let (first_new, last_old): (Option<f64>, Option<f64>) = sqlx::query_as(
        "SELECT EXTRACT(EPOCH FROM min(published_at) FILTER (WHERE created_at > $1) - $1)::float8, \
                EXTRACT(EPOCH FROM max(published_at) FILTER (WHERE created_at <= $1) - $1)::float8 \
         FROM outbox WHERE routing_key IS NOT NULL",
    )
    .bind(at)
    .fetch_one(&app.pg)
    .await
    .unwrap();
    println!(
        "after the kill: the first event of a transition committed after it was published {:.2} s later, the last of one committed before it {:.2} s later",
        first_new.unwrap_or(f64::NAN),
        last_old.unwrap_or(f64::NAN)
    );
}

/// The events the acknowledged transitions must have: (document_id, event_type).
fn acknowledged(outcomes: &[Outcome]) -> HashSet<(String, String)> {
    outcomes
        .iter()
        .filter(|o| o.ok())
        .filter_map(|o| {
            let kind = match o.step {
                Step::Submit => "document.submitted",
                Step::Approve => "document.approved",
                Step::Create => return None,
            };
            Some((o.document.clone()?, kind.to_string()))
        })
        .collect()
}

/// Reads `queue` until each of `expected` is there; returns how many came more than once.
async fn all_on_queue(ch: &Channel, queue: &str, expected: &HashSet<(String, String)>) -> usize {
    let got = std::cell::RefCell::new(HashMap::<(String, String), usize>::new());
    wait_for(
        "every acknowledged transition's event on the quorum queue",
        Duration::from_secs(60),
        || async {
            let mut now = HashMap::new();
            drain(ch, queue, &mut now).await;
            let mut seen = got.borrow_mut();
            for (k, n) in now {
                *seen.entry(k).or_default() += n;
            }
            expected.iter().all(|k| seen.contains_key(k)).then_some(())
        },
    )
    .await;
    let got = got.into_inner();
    expected.iter().map(|k| got[k] - 1).sum()
}

async fn message_count(ch: &Channel, queue: &str) -> usize {
    let passive = QueueDeclareOptions {
        passive: true,
        ..Default::default()
    };
    ch.queue_declare(queue.into(), passive, FieldTable::default())
        .await
        .unwrap()
        .message_count() as usize
}
