//! The audit chains against their checkpoints: the writer writes signed checkpoints, each
//! linked to the one before, and announces each with an `audit.checkpoint` event; `audit
//! verify` then finds what the chains' own heads cannot show, each attack by SQL alone
//! (without the key): a tail deleted with its head rewound, a whole document deleted with
//! its rows, and a row changed with every later link recomputed. Two instances write one
//! checkpoint a round between them. Checkpoints come every second here
//! (`audit.checkpoint_secs` = 1); each wait has a deadline.

use std::time::Duration;

use kh_review::domain::audit::checkpoint::ChainId;
use kh_review::domain::audit::{hex, AuditKey};
use kh_review::store::mongo::{CheckpointHeader, CheckpointStore};
use serde_json::{json, Value};
use uuid::Uuid;

use crate::routes::audit::{chained_rows, four_rows, row_at, verify};
use crate::support::app::{expose, spawn_app_with, AppOptions, TestApp};
use crate::support::inspect::wait_for;

/// An app writing a checkpoint every second.
async fn every_second() -> TestApp {
    spawn_app_with(AppOptions {
        configure: Some(Box::new(|s| {
            s.audit.checkpoint_every = Duration::from_secs(1);
        })),
        ..Default::default()
    })
    .await
}

async fn checkpoints(app: &TestApp) -> CheckpointStore {
    CheckpointStore::from_settings(&app.settings.mongo, &app.settings.audit)
        .await
        .expect("the checkpoint store's settings")
}

fn key(app: &TestApp) -> AuditKey {
    AuditKey::new(expose(&app.settings.audit.key).as_bytes())
}

/// The header of a checkpoint after `sequence` that holds every row written so far.
async fn covering(app: &TestApp, store: &CheckpointStore, sequence: i64) -> CheckpointHeader {
    let rows = chained_rows(app).await;
    wait_for(
        "a checkpoint of every row",
        Duration::from_secs(20),
        || async {
            let h = store.latest().await.ok().flatten()?;
            let cp = store.load(&h).await.ok()?;
            (h.sequence > sequence && cp.rows() == rows).then_some(h)
        },
    )
    .await
}

/// The header of a checkpoint written wholly after now: two after the latest one.
async fn after_now(store: &CheckpointStore) -> CheckpointHeader {
    let now = store.latest().await.unwrap().map_or(0, |h| h.sequence);
    wait_for("a later checkpoint", Duration::from_secs(20), || async {
        let h = store.latest().await.ok().flatten()?;
        (h.sequence > now + 1).then_some(h)
    })
    .await
}

/// The `audit.checkpoint` event of checkpoint `sequence`, read off the test's queue (the
/// other events read meanwhile are dropped).
async fn checkpoint_event(app: &TestApp, sequence: i64) -> Value {
    wait_for(
        "its audit.checkpoint event",
        Duration::from_secs(20),
        || async {
            app.take_events()
                .await
                .into_iter()
                .map(|(v, _)| v)
                .find(|v| {
                    v["event_type"] == "audit.checkpoint" && v["data"]["sequence"] == sequence
                })
        },
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_writer_writes_signed_linked_checkpoints_and_announces_each() {
    let app = every_second().await;
    let doc = four_rows(&app).await;
    app.outbox_drained(Duration::from_secs(15)).await;
    let store = checkpoints(&app).await;
    let first = covering(&app, &store, 0).await;
    let h = covering(&app, &store, first.sequence).await;
    let cp = store.load(&h).await.unwrap();
    let before = store.header(h.sequence - 1).await.unwrap().unwrap();
    let link = Some((before.sequence, before.link));
    assert_eq!(cp.check(&key(&app), link), Ok(()), "signed and linked");
    assert!(cp.check(&AuditKey::new(b"another key"), link).is_err());

    // Every chain as PostgreSQL holds it: the document's, and the admin chain.
    let id = Uuid::parse_str(&doc).unwrap();
    let (count, head): (i64, Vec<u8>) =
        sqlx::query_as("SELECT audit_count, audit_head FROM documents WHERE id = $1")
            .bind(id)
            .fetch_one(&app.pg)
            .await
            .unwrap();
    let entry = cp.chains.iter().find(|c| c.chain == ChainId::Document(id));
    let entry = entry.expect("the document's chain");
    assert_eq!(
        (entry.count, entry.head.map(|h| h.to_vec())),
        (4, Some(head))
    );
    assert_eq!(count, 4);
    assert!(cp.chains.iter().any(|c| c.chain == ChainId::Admin));

    // Its event, on a queue bound to the exchange: the same sequence and links.
    let event = checkpoint_event(&app, h.sequence).await;
    let data = &event["data"];
    assert_eq!(data["link"], hex(&h.link), "{event}");
    assert_eq!(data["prev"], hex(&before.link), "{event}");
    assert_eq!(data["chains"], cp.chains.len(), "{event}");
    assert_eq!(data["rows"], cp.rows(), "{event}");
    assert_eq!(data["collection"], "audit_checkpoints", "{event}");
    assert_eq!(event["actor_id"], "kh-review");
    assert!(
        event.get("document_id").is_none(),
        "about no document: {event}"
    );

    let answer = verify(&app, None).await;
    assert!(answer.get("broken_at").is_none(), "{answer}");
    assert_eq!(answer["checkpoint"]["status"], "checked", "{answer}");
    assert!(answer["checkpoint"]["sequence"].as_i64() >= Some(h.sequence));
    app.finish().await;
}

/// Deletes document `doc` with every row that names it, as someone with SQL access would.
async fn delete_document(app: &TestApp, doc: &str) {
    let id = Uuid::parse_str(doc).unwrap();
    let mut tx = app.pg.begin().await.unwrap();
    for statement in [
        "DELETE FROM audit_log WHERE document_id = $1",
        "DELETE FROM outbox WHERE document_id = $1",
        "DELETE FROM comments WHERE document_id = $1",
        "UPDATE documents SET current_review_id = NULL WHERE id = $1",
        "DELETE FROM review_votes WHERE review_id IN (SELECT id FROM reviews WHERE document_id = $1)",
        "DELETE FROM review_claims WHERE review_id IN (SELECT id FROM reviews WHERE document_id = $1)",
        "DELETE FROM reviews WHERE document_id = $1",
        "DELETE FROM documents WHERE id = $1",
    ] {
        sqlx::query(statement)
            .bind(id)
            .execute(&mut *tx)
            .await
            .unwrap_or_else(|e| panic!("{statement}: {e}"));
    }
    tx.commit().await.unwrap();
}

/// Runs `statement` with `doc` as $1.
async fn sql(app: &TestApp, statement: &'static str, doc: &str) {
    sqlx::query(statement)
        .bind(Uuid::parse_str(doc).unwrap())
        .execute(&app.pg)
        .await
        .unwrap_or_else(|e| panic!("{statement}: {e}"));
}

/// Deletes the last row (4) of `doc`'s chain and sets its head back to row 3: a shorter
/// chain that agrees with its head.
async fn rewind(app: &TestApp, doc: &str) {
    let delete = "DELETE FROM audit_log WHERE document_id = $1 AND seq = 4";
    sql(app, delete, doc).await;
    let head = "UPDATE documents SET audit_count = 3, audit_head = \
                  (SELECT hash FROM audit_log WHERE document_id = $1 AND seq = 3) WHERE id = $1";
    sql(app, head, doc).await;
}

/// Changes row 2 of `doc`'s chain and recomputes the links of it and every row after,
/// and the head, with a function of the attacker's (no key).
async fn relink(app: &TestApp, doc: &str) {
    for statement in [
        "UPDATE audit_log SET actor_id = 'mallory' WHERE document_id = $1 AND seq = 2",
        "UPDATE audit_log SET hash = sha256(hash) WHERE document_id = $1 AND seq >= 2",
        "UPDATE documents SET audit_head = \
           (SELECT hash FROM audit_log WHERE document_id = $1 AND seq = 4) WHERE id = $1",
    ] {
        sql(app, statement, doc).await;
    }
}

fn broken(doc: &str, id: Option<i64>, position: i64, found: &str) -> Value {
    json!({"table": "audit_log", "id": id.map(|i| i.to_string()), "document_id": doc,
           "position": position, "found": found})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rewound_deleted_and_relinked_chains_are_found_against_the_checkpoint() {
    let app = every_second().await;
    let mut docs = Vec::new();
    for _ in 0..4 {
        docs.push(four_rows(&app).await);
    }
    app.outbox_drained(Duration::from_secs(15)).await;
    let [rewound, deleted, relinked, intact] = &docs[..] else {
        unreachable!("four documents")
    };
    let store = checkpoints(&app).await;
    covering(&app, &store, 0).await;
    let clean = verify(&app, None).await;
    assert!(clean.get("broken_at").is_none(), "{clean}");
    assert_eq!(clean["checkpoint"]["status"], "checked", "{clean}");

    // (b) A whole document deleted with its rows: the checkpoint still holds its chain,
    // and so does every checkpoint written after.
    delete_document(&app, deleted).await;
    after_now(&store).await;
    let found = verify(&app, None).await;
    assert_eq!(
        found["broken_at"],
        broken(deleted, None, 4, "chain_missing"),
        "{found}"
    );

    // (a) The tail deleted and the head rewound to the row before: the head agrees with
    // the rows, the checkpoint does not.
    rewind(&app, rewound).await;
    after_now(&store).await;
    let found = verify(&app, Some(rewound)).await;
    assert_eq!(
        found["broken_at"],
        broken(rewound, None, 4, "rewound"),
        "{found}"
    );
    assert_eq!(found["checkpoint"]["status"], "checked", "{found}");

    // (c) A row changed and every later link recomputed without the key (the head too):
    // the chain itself finds it.
    relink(&app, relinked).await;
    let row = row_at(&app, relinked, 2).await;
    let found = verify(&app, Some(relinked)).await;
    assert_eq!(
        found["broken_at"],
        broken(relinked, Some(row), 2, "changed"),
        "{found}"
    );

    let untouched = verify(&app, Some(intact)).await;
    assert!(untouched.get("broken_at").is_none(), "{untouched}");
    assert_eq!(untouched["checked"], 4);
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_write_one_checkpoint_a_round_each_linked_to_the_one_before() {
    let app = every_second().await;
    let other = spawn_app_with(AppOptions {
        share_with: Some(app.shared.clone()),
        configure: Some(Box::new(|s| {
            s.audit.checkpoint_every = Duration::from_secs(1);
        })),
        ..Default::default()
    })
    .await;
    let store = checkpoints(&app).await;
    let last = wait_for("five checkpoints", Duration::from_secs(30), || async {
        let h = store.latest().await.ok().flatten()?;
        (h.sequence >= 5).then_some(h)
    })
    .await;
    // No sequence skipped, each linked to the one before, none within half a round of it.
    let mut before: Option<CheckpointHeader> = None;
    for sequence in 1..=last.sequence {
        let h = store.header(sequence).await.unwrap();
        let h = h.unwrap_or_else(|| panic!("checkpoint {sequence} is missing"));
        let cp = store.load(&h).await.unwrap();
        let link = before.as_ref().map(|b| (b.sequence, b.link));
        assert_eq!(cp.check(&key(&app), link), Ok(()), "checkpoint {sequence}");
        if let Some(b) = &before {
            let apart = h.taken_at - b.taken_at;
            assert!(
                apart >= chrono::TimeDelta::milliseconds(500),
                "{sequence}: {apart}"
            );
        }
        before = Some(h);
    }
    other.stop().await;
    app.finish().await;
}
