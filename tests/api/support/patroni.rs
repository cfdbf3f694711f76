//! The PostgreSQL HA topology (`scripts/services.sh up postgres-ha`): three members under
//! Patroni (pg1..pg3 on 5441-5443, REST API 8441-8443) behind HAProxy on 5440, and a
//! FerretDB on 27027 storing through HAProxy. What the failover tests need of it: a
//! database of their own through the proxy, instances pointed at it, the leader, killing
//! it (Patroni and its postmaster), a switchover (the checks after it: `delivery`).

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use sqlx::postgres::PgPoolOptions;
use sqlx::PgPool;

use super::app::{spawn_app_with, AppOptions, TestApp};
use super::inspect::wait_for;
use super::load::Outcome;
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
            // As the owner, through the proxy (the wall of row-level security is proven
            // on the single server: routes::row_security).
            s.database.url = url.clone().into();
            s.database.migrate_url = None;
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

/// `topology.py postgres-ha switchover`: the sync standby becomes the leader; returns once
/// the topology is healthy again.
pub async fn switchover() {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/topologies/topology.py");
    let out = tokio::task::spawn_blocking(move || {
        Command::new(script)
            .args(["postgres-ha", "switchover"])
            .output()
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
