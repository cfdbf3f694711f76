//! The PostgreSQL HA topology (`scripts/services.sh up postgres-ha`): three members under
//! Patroni (pg1..pg3 on 5441-5443, REST API 8441-8443) behind HAProxy on 5440, and a
//! FerretDB on 27027 storing through HAProxy. What the failover tests need of it: a
//! database of their own through the proxy, instances pointed at it, the leader, killing
//! it (Patroni and its postmaster), a switchover, and the checks after a failover.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use sqlx::postgres::PgPoolOptions;
use sqlx::PgPool;

use super::app::{spawn_app_with, AppOptions, TestApp};
use super::inspect::wait_for;
use super::load::{Outcome, Step};
use super::topology::{sigkill, state_dir};

pub const PROXY: &str = "postgres://kh:kh@127.0.0.1:5440";
pub const MONGO: &str = "mongodb://127.0.0.1:27027";
const MEMBERS: [(&str, u16, u16); 3] = [
    ("pg1", 5441, 8441),
    ("pg2", 5442, 8442),
    ("pg3", 5443, 8443),
];

/// A fresh database through the proxy, and a pool of the test's own on it.
pub async fn database() -> (String, PgPool) {
    let name = format!("kh_ha_{}", &uuid::Uuid::new_v4().simple().to_string()[..16]);
    let admin = PgPool::connect(&format!("{PROXY}/kh_review"))
        .await
        .expect("PostgreSQL through HAProxy on 5440 (scripts/services.sh up postgres-ha)");
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&admin)
        .await
        .unwrap();
    admin.close().await;
    let pool = PgPoolOptions::new()
        .max_connections(2)
        .connect(&format!("{PROXY}/{name}"))
        .await
        .unwrap();
    (name, pool)
}

/// An instance on database `db` at `url` (the proxy, or one member), MongoDB on the
/// FerretDB that fails over with it; the other stores are the shared ones.
pub async fn instance(url: String, share_with: Option<&TestApp>) -> TestApp {
    spawn_app_with(AppOptions {
        share_with: share_with.map(|a| a.shared.clone()),
        configure: Some(Box::new(move |s| {
            s.database.url = url.clone().into();
            s.mongo.url = MONGO.to_string().into();
        })),
        ..Default::default()
    })
    .await
}

/// The leader's name and PostgreSQL port, as the members that answer see it.
pub async fn leader() -> Option<(String, u16)> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_millis(500))
        .build()
        .unwrap();
    for (_, _, api) in MEMBERS {
        let Ok(r) = client
            .get(format!("http://127.0.0.1:{api}/cluster"))
            .send()
            .await
        else {
            continue;
        };
        let Ok(v) = r.json::<Value>().await else {
            continue;
        };
        let members = v["members"].as_array().cloned().unwrap_or_default();
        if let Some(m) = members.iter().find(|m| m["role"] == "leader") {
            let name = m["name"].as_str().unwrap_or_default().to_string();
            let port = MEMBERS
                .iter()
                .find(|(n, _, _)| *n == name)
                .map(|(_, p, _)| *p)?;
            return Some((name, port));
        }
    }
    None
}

/// Waits until a member other than `old` leads.
pub async fn new_leader(old: &str, deadline: Duration) -> String {
    wait_for("a new leader", deadline, || async {
        leader().await.map(|(n, _)| n).filter(|n| n != old)
    })
    .await
}

/// SIGKILL for member `name`'s Patroni and its postmaster together (the postmaster alone
/// would be restarted in place by Patroni: no failover).
pub fn kill_member(name: &str) {
    let dir = state_dir().join("postgres-ha").join(name);
    sigkill(&[dir.join("patroni.pid"), dir.join("data/postmaster.pid")]);
}

/// `postgres-ha.sh switchover`: the sync standby becomes the leader; returns once the
/// topology is healthy again.
pub async fn switchover() {
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/topologies/postgres-ha.sh");
    let out = tokio::task::spawn_blocking(move || {
        Command::new("bash").arg(script).arg("switchover").output()
    })
    .await
    .unwrap()
    .unwrap();
    assert!(
        out.status.success(),
        "switchover failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// What the clients saw during a failover: successes, and `503 DEPENDENCY_UNAVAILABLE`
/// while there was no primary; never another error.
pub fn only_unavailable(outcomes: &[Outcome]) {
    let other: Vec<_> = outcomes
        .iter()
        .filter(|o| {
            let unavailable =
                o.status == 503 && o.code.as_deref() == Some("DEPENDENCY_UNAVAILABLE");
            !(o.ok() || unavailable)
        })
        .collect();
    assert!(
        other.is_empty(),
        "answers other than 2xx and 503 DEPENDENCY_UNAVAILABLE: {other:?}"
    );
}

/// After the failover, on the new primary: every review the clients saw approved is
/// approved; no transition is doubled; every committed transition's event was published
/// (each event `events` counts is a row of the outbox, so none comes from a lost
/// transaction); MongoDB holds each document's last version. Returns the duplicates.
pub async fn committed_state_holds(
    pg: &PgPool,
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
    mongo_holds_last_versions(pg, mongo_db).await;
    events.values().map(|n| n - 1).sum()
}

async fn mongo_holds_last_versions(pg: &PgPool, mongo_db: &str) {
    let versions: Vec<(uuid::Uuid, i64)> = sqlx::query_as("SELECT id, version FROM documents")
        .fetch_all(pg)
        .await
        .unwrap();
    let client = mongodb::Client::with_uri_str(MONGO).await.unwrap();
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

/// Reads every event off the instances' queue until each outbox row's event is there.
pub async fn events_of_outbox(app: &TestApp, pg: &PgPool, into: &mut HashMap<String, usize>) {
    let wanted: i64 =
        sqlx::query_scalar("SELECT count(*) FROM outbox WHERE routing_key IS NOT NULL")
            .fetch_one(pg)
            .await
            .unwrap();
    let seen = std::cell::RefCell::new(std::mem::take(into));
    wait_for(
        "every committed transition's event",
        Duration::from_secs(60),
        || async {
            let taken = app.take_events().await;
            let mut seen = seen.borrow_mut();
            for (_, props) in taken {
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
    *into = seen.into_inner();
}
