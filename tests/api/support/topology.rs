//! The Redis topologies the topology tests run against: a Redis Cluster (3 masters, 3
//! replicas on 7001-7006) and a Sentinel set-up (master and replica on 6391/6392, sentinels
//! on 26391-26393), both started by `scripts/services.sh up redis-cluster | redis-sentinel`.
//! Also the faults the tests inject: killing a node (SIGKILL, by its pid file) and pausing
//! a replica's writes.
//!
//! Tests that kill nodes must not overlap: each holds the topology turn for its whole run.
//! The next test's `up` restarts whatever the last one killed.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use kh_review::config::Settings;
use kh_review::lock::RedisMode;
use redis::FromRedisValue;
use secrecy::SecretString;
use serde_json::Value;
use tokio::sync::{Mutex, MutexGuard};

use super::app::{AppOptions, Configure, TestApp};
use super::inspect::wait_for;

pub const CLUSTER_PORTS: [u16; 6] = [7001, 7002, 7003, 7004, 7005, 7006];
pub const SENTINEL_PORTS: [u16; 3] = [26391, 26392, 26393];
pub const SENTINEL_DATA_PORTS: [u16; 2] = [6391, 6392];
pub const MASTER_NAME: &str = "kh-master";

static TURN: Mutex<()> = Mutex::const_new(());

/// The topology turn: tests that kill nodes of a topology run one at a time.
pub async fn take_turn() -> MutexGuard<'static, ()> {
    TURN.lock().await
}

/// `scripts/services.sh up PROFILE`: starts the topology, or repairs what a test killed.
pub async fn profile_up(profile: &'static str) {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/services.sh");
    let out = tokio::task::spawn_blocking(move || {
        Command::new("bash")
            .arg(script)
            .args(["up", profile])
            .output()
    })
    .await
    .unwrap()
    .expect("bash runs scripts/services.sh");
    assert!(
        out.status.success(),
        "`scripts/services.sh up {profile}` failed (run it by hand to see why):\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Cluster,
    Sentinel,
}

impl Kind {
    fn profile(self) -> &'static str {
        match self {
            Kind::Cluster => "redis-cluster",
            Kind::Sentinel => "redis-sentinel",
        }
    }
}

/// A healthy topology, this test's alone while it lives.
pub struct Topology {
    pub kind: Kind,
    _turn: MutexGuard<'static, ()>,
}

impl Topology {
    pub async fn cluster() -> Self {
        Self::up(Kind::Cluster).await
    }

    pub async fn sentinel() -> Self {
        Self::up(Kind::Sentinel).await
    }

    async fn up(kind: Kind) -> Self {
        let turn = take_turn().await;
        profile_up(kind.profile()).await;
        Self { kind, _turn: turn }
    }

    /// A test app on this topology.
    pub fn app_options(&self) -> AppOptions {
        AppOptions {
            configure: Some(self.configure()),
            ..Default::default()
        }
    }

    /// Points a test app's settings at this topology.
    pub fn configure(&self) -> Configure {
        let kind = self.kind;
        Box::new(move |s: &mut Settings| {
            let urls = |ports: &[u16]| -> Vec<SecretString> {
                ports
                    .iter()
                    .map(|p| SecretString::from(format!("redis://127.0.0.1:{p}")))
                    .collect()
            };
            match kind {
                Kind::Cluster => {
                    s.redis.mode = RedisMode::Cluster;
                    s.redis.nodes = urls(&CLUSTER_PORTS);
                }
                Kind::Sentinel => {
                    s.redis.mode = RedisMode::Sentinel;
                    s.redis.sentinels = urls(&SENTINEL_PORTS);
                    s.redis.master_name = MASTER_NAME.to_string();
                }
            }
        })
    }

    /// The data nodes' ports.
    pub fn data_ports(&self) -> &'static [u16] {
        match self.kind {
            Kind::Cluster => &CLUSTER_PORTS,
            Kind::Sentinel => &SENTINEL_DATA_PORTS,
        }
    }

    /// SIGKILL for the node on `port`, by its pid file.
    pub fn kill(&self, port: u16) {
        let node = state_dir().join(self.kind.profile()).join(port.to_string());
        sigkill(&[node.join("redis.pid")]);
    }

    /// Lock keys (not fence counters) left under `prefix` on any data node.
    pub async fn lock_keys_left(&self, prefix: &str) -> Vec<String> {
        let keys = self.keys(&format!("{prefix}lock:doc:*")).await;
        keys.into_iter()
            .filter(|k| !k.ends_with(":fence"))
            .collect()
    }

    /// Every key matching `pattern` on every data node that answers.
    pub async fn keys(&self, pattern: &str) -> Vec<String> {
        let mut all = Vec::new();
        for &port in self.data_ports() {
            if let Ok(keys) = node::<Vec<String>>(port, &["KEYS", pattern]).await {
                all.extend(keys);
            }
        }
        all.sort();
        all.dedup();
        all
    }
}

/// SIGKILL, at once, for the processes whose pids the first lines of `pid_files` hold.
pub fn sigkill(pid_files: &[PathBuf]) {
    let pids: Vec<String> = pid_files
        .iter()
        .map(|f| {
            let text =
                std::fs::read_to_string(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
            text.lines().next().unwrap_or_default().trim().to_string()
        })
        .collect();
    let ok = Command::new("kill")
        .arg("-KILL")
        .args(&pids)
        .status()
        .expect("kill runs");
    assert!(ok.success(), "kill -KILL {pids:?} ({pid_files:?})");
}

pub fn state_dir() -> PathBuf {
    PathBuf::from(std::env::var("KH_STATE_DIR").unwrap_or_else(|_| "/var/tmp/kh-review".into()))
}

/// One command on the node at `port`, over a fresh connection with a short timeout.
pub async fn node<T: FromRedisValue>(port: u16, args: &[&str]) -> redis::RedisResult<T> {
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}"))?;
    let config = redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(Duration::from_millis(500)))
        .set_response_timeout(Some(Duration::from_secs(2)));
    let mut c = client
        .get_multiplexed_async_connection_with_config(&config)
        .await?;
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    cmd.query_async(&mut c).await
}

/// The cluster's masters as (port, slot ranges), from the first node that answers.
pub async fn cluster_masters() -> Vec<(u16, Vec<(u16, u16)>)> {
    for port in CLUSTER_PORTS {
        let Ok(text) = node::<String>(port, &["CLUSTER", "NODES"]).await else {
            continue;
        };
        let mut masters = Vec::new();
        for line in text.lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() < 8 || !f[2].contains("master") || f[2].contains("fail") {
                continue;
            }
            let port: u16 = f[1]
                .split(['@', ','])
                .next()
                .and_then(|a| a.rsplit(':').next())
                .and_then(|p| p.parse().ok())
                .expect("CLUSTER NODES address");
            let slots: Vec<(u16, u16)> = f[8..]
                .iter()
                .filter(|r| !r.starts_with('['))
                .map(|r| match r.split_once('-') {
                    Some((a, b)) => (a.parse().unwrap(), b.parse().unwrap()),
                    None => (r.parse().unwrap(), r.parse().unwrap()),
                })
                .collect();
            if !slots.is_empty() {
                masters.push((port, slots));
            }
        }
        masters.sort();
        return masters;
    }
    panic!(
        "no cluster node answers on {CLUSTER_PORTS:?}: run `scripts/services.sh up redis-cluster`"
    );
}

/// The role the node on `port` reports (`master`, `slave`, `sentinel`), if it answers.
async fn role(port: u16) -> Option<String> {
    let reply: Vec<redis::Value> = node(port, &["ROLE"]).await.ok()?;
    String::from_redis_value(reply.into_iter().next()?).ok()
}

/// The ports of the cluster's live replicas.
pub async fn cluster_replicas() -> Vec<u16> {
    let mut replicas = Vec::new();
    for port in CLUSTER_PORTS {
        if role(port).await.as_deref() == Some("slave") {
            replicas.push(port);
        }
    }
    replicas
}

/// The port of the master that serves `key`.
pub async fn master_of(key: &str) -> u16 {
    let slot: i64 = node(CLUSTER_PORTS[0], &["CLUSTER", "KEYSLOT", key])
        .await
        .expect("CLUSTER KEYSLOT");
    let slot = slot as u16;
    cluster_masters()
        .await
        .into_iter()
        .find(|(_, ranges)| ranges.iter().any(|&(a, b)| a <= slot && slot <= b))
        .map(|(port, _)| port)
        .unwrap_or_else(|| panic!("no master serves slot {slot}"))
}

/// The master's port as the sentinel on `port` names it, if it answers.
async fn named_master(port: u16) -> Option<u16> {
    let cmd = ["SENTINEL", "get-master-addr-by-name", MASTER_NAME];
    let addr: Vec<String> = node(port, &cmd).await.ok()?;
    addr.get(1)?.parse().ok()
}

/// The master's port as the sentinels name it (the first sentinel that answers).
pub async fn sentinel_master() -> u16 {
    for port in SENTINEL_PORTS {
        if let Some(master) = named_master(port).await {
            return master;
        }
    }
    panic!("no sentinel answers on {SENTINEL_PORTS:?}");
}

/// Waits until every sentinel names a master other than `old`, and it says it is master.
pub async fn sentinels_promoted_other_than(old: u16, deadline: Duration) -> u16 {
    wait_for("the sentinels to promote the replica", deadline, || async {
        let mut named = Vec::new();
        for port in SENTINEL_PORTS {
            named.push(named_master(port).await?);
        }
        let new = named[0];
        if new == old || named.iter().any(|&p| p != new) {
            return None;
        }
        (role(new).await.as_deref() == Some("master")).then_some(new)
    })
    .await
}

/// `/readyz` says Redis is up and the breaker is closed: the next request takes the lock.
pub async fn redis_guarding(app: &TestApp) -> bool {
    let Ok(r) = app.client.get(app.url("/readyz")).send().await else {
        return false;
    };
    let v: Value = r.json().await.unwrap_or_default();
    v["checks"]["redis"]["status"] == "up" && v["checks"]["redis"]["circuit_breaker"] == "closed"
}

/// Approves a fresh review and says which lock guarded it.
pub async fn approve_one(app: &TestApp) -> String {
    let (_, review_id) = app.approved_review().await;
    app.approval_lock_mode(&review_id).await
}
