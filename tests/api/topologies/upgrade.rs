//! A rolling upgrade under load (`make test-upgrade`, and part of `make test-topologies`):
//! three instances of the real binary behind HAProxy on loopback (health checks on
//! `/readyz`), a steady load of creates, submits and approvals with idempotency keys through
//! it for a minute, and each instance in turn replaced by a new process: SIGTERM (it says
//! `draining` on `/readyz`, keeps serving for `shutdown.drain_secs`, exits 0), then the new
//! build on the same port, migrating first, until HAProxy sees it up.
//!
//! The first generation starts at once on an empty database (three instances migrating
//! together). `KH_UPGRADE_FROM` names the checkout of an older release for the first
//! generation, its binary and its own `config/` (`make test-upgrade FROM=<rev>` makes one):
//! an old-to-new upgrade from the old release's schema; unset, both generations are this
//! build.
//!
//! What must hold: every request answered 2xx; every acknowledged transition committed
//! once; every committed transition's event read off the queue, none twice; MongoDB at each
//! document's last version. Latency during the upgrade against the steady phase is printed
//! (p50, p99 and their ratio), not asserted: speed is measured, on this shared machine it is
//! not a pass/fail.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sqlx::PgPool;

use crate::support::app::{expose, spawn_app_with, AppOptions, TestApp};
use crate::support::binary::{listening, serve_build, Build, KillOnDrop};
use crate::support::delivery::{committed_state_holds, events_of_outbox, outbox_drained};
use crate::support::haproxy::Haproxy;
use crate::support::inspect::each_migration_applied_once;
use crate::support::load::{steady_load_to, tally, Outcome, Progress, Target};
use crate::support::topology::{profile_up, take_turn};
use kh_review_testkit::database::{create_database, test_database_name};
use kh_review_testkit::proxy::dead_port;
use kh_review_testkit::stores::{pg_service_url, pg_url, with_db};

const INSTANCES: usize = 3;
const LOAD: Duration = Duration::from_secs(60);
/// One flow (create, submit, approve) started this often: 30 requests a second.
const EVERY: Duration = Duration::from_millis(100);
const DRAIN_SECS: u64 = 3;
const GRACE_SECS: u64 = 12;

/// The instances behind the load balancer, on a database of their own.
struct Fleet<'a> {
    app: &'a TestApp,
    database_url: String,
    /// The same database as the service's own role (kh_app), whom row-level security holds:
    /// this build's instances connect so, an older release's as the owner (as it did).
    service_url: String,
    ports: Vec<u16>,
    processes: Vec<Option<KillOnDrop>>,
    /// Whether the first generation drains on SIGTERM (this build does; a release before
    /// the drain stops at once, and HAProxy's retries cover for it).
    first_drains: bool,
}

impl Fleet<'_> {
    fn start(&self, build: &Build, port: u16) -> KillOnDrop {
        let this = build.binary == Build::this().binary;
        let url = if this {
            &self.service_url
        } else {
            &self.database_url
        };
        let envs = [
            ("APP__DATABASE__URL", url.clone()),
            ("APP__DATABASE__MIGRATE_URL", self.database_url.clone()),
            ("APP__SHUTDOWN__DRAIN_SECS", DRAIN_SECS.to_string()),
            ("APP__SHUTDOWN__GRACE_SECS", GRACE_SECS.to_string()),
        ];
        serve_build(build, self.app, port, &envs)
    }

    /// Replaces instance `i` by a process of `build`: SIGTERM; HAProxy's check sees it
    /// down while it still serves (the drain, when the first generation has one), then it
    /// exits 0 within its grace; the new one listening, and HAProxy's check seeing it up.
    /// Returns when the old one was out of rotation (if it drains) and when it was gone,
    /// after the signal.
    async fn replace(
        &mut self,
        i: usize,
        build: &Build,
        lb: &Haproxy,
    ) -> (Option<Duration>, Duration) {
        let old = self.processes[i].take().expect("a running instance");
        let name = format!("i{i}");
        let grace = Duration::from_secs(GRACE_SECS);
        let signalled = Instant::now();
        let ((status, gone), out) = tokio::join!(
            async { (old.terminate().await, signalled.elapsed()) },
            async {
                if !self.first_drains {
                    return None;
                }
                lb.wait_server(&name, "DOWN", grace).await;
                Some(signalled.elapsed())
            }
        );
        assert!(status.success(), "instance {i} exits cleanly: {status:?}");
        assert!(
            gone <= grace,
            "instance {i} gone within its grace: {gone:?}"
        );
        if let Some(out) = out {
            assert!(
                out < gone,
                "HAProxy took instance {i} out of rotation ({out:?}) before it stopped ({gone:?})"
            );
        }
        let port = self.ports[i];
        self.processes[i] = Some(self.start(build, port));
        listening(self.app, &format!("http://127.0.0.1:{port}")).await;
        lb.wait_server(&name, "UP", Duration::from_secs(10)).await;
        (out, gone)
    }
}

/// The first generation's build and the second's.
fn builds() -> (Option<Build>, Build) {
    let old = std::env::var_os("KH_UPGRADE_FROM").map(|dir| Build::checkout(Path::new(&dir)));
    (old, Build::this())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_rolling_upgrade_under_load_fails_no_request_and_loses_no_event() {
    let _turn = take_turn().await;
    profile_up("load-balancer").await;
    let (from, new) = builds();
    let first_drains = from.is_none();
    let old = from.unwrap_or_else(Build::this);
    println!(
        "upgrade: from {} to {}",
        old.binary.display(),
        new.binary.display()
    );
    // The exchange, queue, Redis prefix and MongoDB database of the instances.
    let app = spawn_app_with(AppOptions {
        run_dispatcher: false,
        ..Default::default()
    })
    .await;
    let name = test_database_name();
    let database_url = create_database(&name, None).await.unwrap();
    let ports: Vec<u16> = (0..INSTANCES).map(|_| dead_port()).collect();
    let mut fleet = Fleet {
        app: &app,
        database_url: database_url.clone(),
        service_url: with_db(&pg_service_url(), &name),
        ports: ports.clone(),
        processes: Vec::new(),
        first_drains,
    };
    // Three at once on the empty database: each migration applied once, under the lock.
    fleet.processes = ports.iter().map(|p| Some(fleet.start(&old, *p))).collect();
    for p in &ports {
        listening(&app, &format!("http://127.0.0.1:{p}")).await;
    }
    let lb = Haproxy::start(&ports);
    for i in 0..INSTANCES {
        lb.wait_server(&format!("i{i}"), "UP", Duration::from_secs(10))
            .await;
    }
    let pg = PgPool::connect(&database_url).await.unwrap();
    each_migration_applied_once(&pg, &old.migrations).await;

    let progress = Arc::new(Progress::default());
    let target = Target::at(&app, lb.base(), true);
    let load = steady_load_to(std::slice::from_ref(&target), LOAD, EVERY, &progress);
    let upgrade = async {
        // The steady phase: until 100 approvals are in (about 10 s).
        progress.approvals(100).await;
        let from = Instant::now();
        for i in 0..INSTANCES {
            let (out, gone) = fleet.replace(i, &new, &lb).await;
            let out = out.map_or("-".into(), |d| format!("{:.2} s", d.as_secs_f64()));
            println!(
                "upgrade: instance {i} replaced: out of rotation {out} after SIGTERM, gone after {:.2} s",
                gone.as_secs_f64()
            );
        }
        (from, Instant::now())
    };
    let (outcomes, (from, to)) = tokio::join!(load, upgrade);
    // The new generation migrated before it served: the rest of its migrations applied.
    each_migration_applied_once(&pg, &new.migrations).await;

    // From another release: it may be older than spaces, whose instances publish without
    // `space` (docs/events.md allows it while the upgrade runs).
    let from_before_spaces = !first_drains;
    after_the_upgrade(&app, &lb, &pg, &outcomes, (from, to), from_before_spaces).await;
    for p in fleet.processes.iter_mut().filter_map(Option::take) {
        assert!(p.terminate().await.success());
    }
    drop(lb);
    pg.close().await;
    drop_database(&name).await;
    app.finish().await;
}

/// The checks after the load: every answer 2xx, HAProxy's retries, latency by phase, and
/// what must hold of the transitions and their events.
async fn after_the_upgrade(
    app: &TestApp,
    lb: &Haproxy,
    pg: &PgPool,
    outcomes: &[Outcome],
    (from, to): (Instant, Instant),
    from_before_spaces: bool,
) {
    println!("upgrade: answers: {}", tally(outcomes));
    let failed: Vec<&Outcome> = outcomes.iter().filter(|o| !o.ok()).collect();
    assert!(failed.is_empty(), "requests failed: {failed:?}");
    latencies(outcomes, from, to);
    let (retries, redispatches) = lb
        .servers()
        .await
        .iter()
        .fold((0, 0), |(r, d), s| (r + s.retries, d + s.redispatches));
    println!("upgrade: haproxy retried {retries} requests, {redispatches} on another instance");

    outbox_drained(pg).await;
    let mut events = HashMap::new();
    events_of_outbox(app, pg, &mut events, from_before_spaces).await;
    let mongo = expose(&app.settings.mongo.url);
    let duplicates =
        committed_state_holds(pg, mongo, &app.shared.mongo_db, outcomes, &events).await;
    println!(
        "upgrade: {} events, one per committed transition; {duplicates} delivered twice",
        events.len()
    );
    assert_eq!(duplicates, 0, "no event delivered twice");
}

/// Prints p50 and p99 of the requests started in the steady phase (before `from`) and of
/// those started during the upgrade (`from` to `to`), and their ratio.
fn latencies(outcomes: &[Outcome], from: Instant, to: Instant) {
    let phase = |keep: &dyn Fn(Instant) -> bool| {
        let mut took: Vec<Duration> = outcomes
            .iter()
            .filter(|o| keep(o.at - o.took))
            .map(|o| o.took)
            .collect();
        took.sort();
        let at = |q: f64| took[((took.len() as f64 * q) as usize).min(took.len() - 1)];
        (took.len(), at(0.5), at(0.99))
    };
    let (n0, p50_0, p99_0) = phase(&|started| started < from);
    let (n1, p50_1, p99_1) = phase(&|started| started >= from && started <= to);
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "upgrade: steady {n0} requests p50 {:.1} ms p99 {:.1} ms; during the upgrade ({:.1} s) {n1} requests p50 {:.1} ms p99 {:.1} ms; p99 ratio {:.2}x",
        ms(p50_0),
        ms(p99_0),
        (to - from).as_secs_f64(),
        ms(p50_1),
        ms(p99_1),
        ms(p99_1) / ms(p99_0)
    );
}

async fn drop_database(name: &str) {
    let admin = PgPool::connect(&pg_url()).await.unwrap();
    let drop = sqlx::AssertSqlSafe(format!("DROP DATABASE {name} WITH (FORCE)"));
    sqlx::query(drop).execute(&admin).await.unwrap();
    admin.close().await;
}
