//! A consumer that lost its queue gets its index back: its queue is dropped, more documents
//! are approved meanwhile, then a history replay and a snapshot replay into a fresh queue
//! leave it with exactly the approved documents at their published versions. Live events
//! approved while a replay runs arrive meanwhile (their latency is printed, not asserted).

use std::collections::HashSet;
use std::time::{Duration, Instant};

use serde_json::json;

use super::{index_of, Message};
use crate::support::app::{spawn_app_with, AppOptions, TestApp};
use crate::support::inspect::wait_for;

/// Replays slow enough that live approvals happen while one runs.
fn paced(per_sec: u32) -> AppOptions {
    AppOptions {
        configure: Some(Box::new(move |s| s.replay.max_per_sec = per_sec)),
        ..Default::default()
    }
}

/// Approves documents while the replay `id` runs; returns how long each one's event took
/// to reach the test's own queue (bound to the exchange), from the approval's reply.
async fn live_while_running(app: &TestApp, id: &str) -> Vec<Duration> {
    let mut latencies = Vec::new();
    while app.replay_state(id).await["state"] == "running" && latencies.len() < 20 {
        let doc = app.create_document("Live", "Words.").await.id.to_string();
        let review = app.submitted(&doc).await;
        let _ = app.take_events().await;
        let asked = Instant::now();
        assert!(app
            .approve(&review, &app.reviewer())
            .await
            .status()
            .is_success());
        let answered = asked.elapsed();
        wait_for(
            "the live approval's event",
            Duration::from_secs(10),
            || async {
                let got = app.take_events().await;
                got.iter()
                    .any(|(e, _)| {
                        e["document_id"] == doc.as_str() && e["event_type"] == "document.approved"
                    })
                    .then_some(())
            },
        )
        .await;
        latencies.push(asked.elapsed() - answered);
    }
    latencies
}

fn print_latencies(what: &str, mut l: Vec<Duration>) {
    l.sort();
    let p = |q: f64| l.get(((l.len() as f64 * q) as usize).min(l.len().saturating_sub(1)));
    println!(
        "live events during a {what} replay: {} events, p50 {:?}, max {:?}",
        l.len(),
        p(0.5),
        l.last()
    );
}

/// An indexer's queue is deleted while documents are approved (one of them twice); returns
/// the ids of every event delivered until then.
async fn lost_while_approving(app: &TestApp) -> HashSet<String> {
    let old_queue = app.consumer_queue("indexer").await;
    app.bind_to_events(&old_queue).await;
    let (first, _) = app.approved_review().await;
    app.approved_review().await;
    app.outbox_drained(Duration::from_secs(10)).await;
    // A redeploy drops the indexer's queue; approvals go on meanwhile.
    app.delete_queue(&old_queue).await;
    for _ in 0..6 {
        app.approved_review().await;
    }
    app.approved_revision(&first).await;
    app.outbox_drained(Duration::from_secs(10)).await;
    let _ = app.take_events().await;
    sqlx::query_scalar::<_, uuid::Uuid>(
        "SELECT event_id FROM outbox WHERE published_at IS NOT NULL",
    )
    .fetch_all(&app.pg)
    .await
    .unwrap()
    .into_iter()
    .map(|u| u.to_string())
    .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_and_snapshot_replays_rebuild_a_consumer_that_lost_its_queue() {
    let app = spawn_app_with(paced(40)).await;
    let stored = lost_while_approving(&app).await;
    // The indexer's new queue, bound as the old one was: live events from now on.
    let queue = app.consumer_queue("indexer-new").await;
    app.bind_to_events(&queue).await;
    let history = app
        .started_replay(json!({"mode": "history", "target_queue": queue}))
        .await;
    let live = live_while_running(&app, &history).await;
    let done = app
        .replay_ends(&history, "done", Duration::from_secs(30))
        .await;
    assert_eq!(done["sent"], stored.len() as i64, "{done}");
    assert_eq!(
        (done["total"].clone(), done["events_left"].clone()),
        (done["sent"].clone(), json!(0))
    );
    print_latencies("history", live);

    let snapshot = app
        .started_replay(json!({"mode": "snapshot", "target_queue": queue}))
        .await;
    let live = live_while_running(&app, &snapshot).await;
    let done = app
        .replay_ends(&snapshot, "done", Duration::from_secs(30))
        .await;
    print_latencies("snapshot", live);
    app.outbox_drained(Duration::from_secs(10)).await;

    let messages: Vec<Message> = app.drain(&queue).await;
    let of = |id: Option<&str>| -> Vec<&Message> {
        messages
            .iter()
            .filter(|m| m.replay_id().as_deref() == id)
            .collect()
    };
    let (replayed, snapshots, live) = (of(Some(&history)), of(Some(&snapshot)), of(None));
    assert_eq!(
        replayed.len() + snapshots.len() + live.len(),
        messages.len()
    );
    assert!(
        live.iter().all(|m| !stored.contains(&m.event_id())),
        "live events came live"
    );
    let ids: HashSet<String> = replayed.iter().map(|m| m.event_id()).collect();
    assert_eq!(
        ids, stored,
        "every delivered event once, as it was, and nothing else"
    );
    assert!(
        replayed.windows(2).all(|w| {
            w[0].body["document_id"] != w[1].body["document_id"]
                || w[0].body["document_version"].as_i64() <= w[1].body["document_version"].as_i64()
        }),
        "in commit order per document"
    );
    assert!(snapshots
        .iter()
        .all(|m| m.body["event_type"] == "document.snapshot"
            && m.properties.message_id().as_ref().map(|s| s.to_string()) == Some(m.event_id())));
    assert_eq!(done["sent"], snapshots.len() as i64);
    assert_eq!(
        index_of(&messages),
        app.published().await,
        "the approved documents at their published versions"
    );
    assert!(
        app.take_events().await.iter().all(|(_, p)| p
            .headers()
            .as_ref()
            .is_none_or(|h| !h.inner().contains_key(super::REPLAY_HEADER))),
        "a replay goes to its target queue only, never through the exchange"
    );
    app.delete_queue(&queue).await;
    app.finish().await;
}
