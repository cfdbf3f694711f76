//! What must hold after a load met a fault (a failover, an upgrade): every acknowledged
//! transition committed once, every committed transition's event read off the queue (and
//! none that was not committed), MongoDB at each document's last version.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use sqlx::PgPool;

use super::app::TestApp;
use super::inspect::wait_for;
use super::load::{Outcome, Step};

/// Waits (a minute at most) until every outbox row is delivered.
pub async fn outbox_drained(pg: &PgPool) {
    wait_for("the outbox to drain", Duration::from_secs(60), || async {
        let left: i64 = sqlx::query_scalar("SELECT count(*) FROM outbox WHERE done_at IS NULL")
            .fetch_one(pg)
            .await
            .ok()?;
        (left == 0).then_some(())
    })
    .await;
}

/// After the load and its fault, on the primary: every review the clients saw approved is
/// approved; no transition is doubled; every committed transition's event was published
/// (each event `events` counts is a row of the outbox, so none comes from a lost
/// transaction); MongoDB (at `mongo`) holds each document's last version. Returns the
/// duplicates.
pub async fn committed_state_holds(
    pg: &PgPool,
    mongo: &str,
    mongo_db: &str,
    outcomes: &[Outcome],
    events: &HashMap<String, usize>,
) -> usize {
    let approved: Vec<uuid::Uuid> = outcomes
        .iter()
        .filter(|o| o.step == Step::Approve && o.ok())
        .filter_map(|o| o.document.as_ref()?.parse().ok())
        .collect();
    let statuses: Vec<(uuid::Uuid, String)> =
        sqlx::query_as("SELECT id, status::text FROM documents WHERE id = ANY($1)")
            .bind(&approved)
            .fetch_all(pg)
            .await
            .unwrap();
    let lost: Vec<_> = statuses.iter().filter(|(_, s)| s != "APPROVED").collect();
    assert_eq!(
        statuses.len(),
        approved.len(),
        "an approved document is missing"
    );
    assert!(
        lost.is_empty(),
        "approved, and not APPROVED on the new primary: {lost:?}"
    );
    let doubled: Vec<(uuid::Uuid, String, i64)> = sqlx::query_as(
        "SELECT document_id, event_type, count(*) FROM outbox \
         WHERE event_type IN ('document.submitted', 'document.approved') \
         GROUP BY 1, 2 HAVING count(*) > 1",
    )
    .fetch_all(pg)
    .await
    .unwrap();
    assert!(doubled.is_empty(), "transitions doubled: {doubled:?}");
    let rows: Vec<(uuid::Uuid,)> =
        sqlx::query_as("SELECT event_id FROM outbox WHERE routing_key IS NOT NULL")
            .fetch_all(pg)
            .await
            .unwrap();
    let rows: HashSet<String> = rows.into_iter().map(|(id,)| id.to_string()).collect();
    let unpublished: Vec<_> = rows.iter().filter(|id| !events.contains_key(*id)).collect();
    assert!(
        unpublished.is_empty(),
        "committed, never published: {unpublished:?}"
    );
    let foreign: Vec<_> = events.keys().filter(|id| !rows.contains(*id)).collect();
    assert!(
        foreign.is_empty(),
        "published, and no transition of the new primary: {foreign:?}"
    );
    mongo_holds_last_versions(pg, mongo, mongo_db).await;
    events.values().map(|n| n - 1).sum()
}

async fn mongo_holds_last_versions(pg: &PgPool, mongo: &str, mongo_db: &str) {
    let versions: Vec<(uuid::Uuid, i64)> = sqlx::query_as("SELECT id, version FROM documents")
        .fetch_all(pg)
        .await
        .unwrap();
    let client = mongodb::Client::with_uri_str(mongo).await.unwrap();
    let coll = client
        .database(mongo_db)
        .collection::<mongodb::bson::Document>("documents");
    let mut behind = Vec::new();
    for (id, version) in versions {
        let m = coll
            .find_one(mongodb::bson::doc! {"_id": id.to_string()})
            .await
            .unwrap();
        let held = m.and_then(|d| d.get_i64("head_version").ok());
        if held != Some(version) {
            behind.push((id, version, held));
        }
    }
    assert!(
        behind.is_empty(),
        "MongoDB does not hold the last version: {behind:?}"
    );
}

/// Reads every event off the instances' queue until each outbox row's event is there. With
/// `from_before_spaces` (a rolling upgrade from a release older than spaces), the messages
/// that release's instances published without `space` are allowed; how many is printed.
pub async fn events_of_outbox(
    app: &TestApp,
    pg: &PgPool,
    into: &mut HashMap<String, usize>,
    from_before_spaces: bool,
) {
    let wanted: i64 =
        sqlx::query_scalar("SELECT count(*) FROM outbox WHERE routing_key IS NOT NULL")
            .fetch_one(pg)
            .await
            .unwrap();
    let seen = std::cell::RefCell::new(std::mem::take(into));
    let without_space = std::cell::RefCell::new(0usize);
    wait_for(
        "every committed transition's event",
        Duration::from_secs(60),
        || async {
            let taken: Vec<_> = if from_before_spaces {
                let (taken, older) = app.take_events_upgrading_to_spaces().await;
                *without_space.borrow_mut() += older;
                taken
            } else {
                app.take_events()
                    .await
                    .into_iter()
                    .map(|(_, p)| p)
                    .collect()
            };
            let mut seen = seen.borrow_mut();
            for props in taken {
                let id = props
                    .message_id()
                    .as_ref()
                    .map(|s| s.to_string())
                    .unwrap_or_default();
                *seen.entry(id).or_default() += 1;
            }
            (seen.len() as i64 >= wanted).then_some(())
        },
    )
    .await;
    if from_before_spaces {
        println!(
            "{} messages without ce-khspace, published by the older release's instances",
            without_space.into_inner()
        );
    }
    *into = seen.into_inner();
}
