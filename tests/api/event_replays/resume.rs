//! A replay survives the death of the instance running it: `kill -9` of a real kh-review
//! process mid-replay, and another process takes the replay over when its lease ends and
//! finishes it from its cursor, with no gap (every expected event id on the queue). The
//! batch in flight may be sent twice: counted on the replay.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use kh_review::domain::replay::snapshot_event_id;
use kh_review_testkit::proxy::dead_port;
use serde_json::json;
use uuid::Uuid;

use crate::support::app::{spawn_app_with, AppOptions, TestApp};
use crate::support::binary::{listening, serve_binary, KillOnDrop};
use crate::support::inspect::wait_for;

const DOCUMENTS: i64 = 300;

/// A kh-review process that runs replays (60 a second, a lease of 1.5 s) on `app`'s stores.
async fn runner(app: &TestApp) -> KillOnDrop {
    let port = dead_port();
    let envs = [
        ("APP__REPLAY__MAX_PER_SEC", "60".to_string()),
        ("APP__REPLAY__LEASE_MS", "1500".to_string()),
        ("APP__REPLAY__POLL_MS", "200".to_string()),
        ("APP__OUTBOX__RUN_DISPATCHER", "false".to_string()),
    ];
    let child = serve_binary(app, port, &envs);
    listening(app, &format!("http://127.0.0.1:{port}")).await;
    child
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_resumed_after_kill_9_finishes_with_no_gap() {
    // The test's own instance serves the API but runs no replay.
    let app = spawn_app_with(AppOptions {
        configure: Some(Box::new(|s| s.replay.run = false)),
        ..Default::default()
    })
    .await;
    app.documents_in_db(DOCUMENTS as usize, "APPROVED", 3).await;
    let queue = app.consumer_queue("rebuilt").await;
    let mut first = runner(&app).await;
    let id = app
        .started_replay(json!({"mode": "snapshot", "target_queue": queue}))
        .await;
    wait_for(
        "a fifth of the replay sent",
        Duration::from_secs(20),
        || async {
            let r = app.replay_state(&id).await;
            (r["sent"].as_i64().unwrap() >= DOCUMENTS / 5).then_some(())
        },
    )
    .await;
    first.0.kill().unwrap(); // SIGKILL: no shutdown, the lease just stops being renewed
    first.0.wait().unwrap();
    let stopped_at = app.replay_state(&id).await;
    assert_eq!(stopped_at["state"], "running");
    let second = runner(&app).await;
    let done = app.replay_ends(&id, "done", Duration::from_secs(30)).await;
    assert_eq!(
        (done["sent"].clone(), done["total"].clone()),
        (json!(DOCUMENTS), json!(DOCUMENTS)),
        "{done}"
    );
    assert_eq!(done["takeovers"], 1, "{done}");

    let replay: Uuid = id.parse().unwrap();
    let expected: HashSet<String> = app
        .published()
        .await
        .iter()
        .map(|(d, v)| snapshot_event_id(replay, d.parse().unwrap(), *v).to_string())
        .collect();
    let messages = app.drain(&queue).await;
    let mut seen: HashMap<String, u32> = HashMap::new();
    for m in &messages {
        *seen.entry(m.event_id()).or_default() += 1;
    }
    let got: HashSet<String> = seen.keys().cloned().collect();
    assert_eq!(
        got, expected,
        "every document's snapshot, under its derived id, and no other"
    );
    let twice: u32 = seen.values().map(|n| n - 1).sum();
    println!(
        "kill -9 after {} sent: {} messages, {twice} sent twice, {} counted as duplicates",
        stopped_at["sent"],
        messages.len(),
        done["duplicates"]
    );
    assert!(
        i64::from(twice) <= done["duplicates"].as_i64().unwrap(),
        "every message sent twice is counted: {twice} > {done}"
    );
    drop(second);
    app.delete_queue(&queue).await;
    app.finish().await;
}
