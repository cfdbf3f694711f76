//! The rows that look past one approval on empty stores: what an approval costs its hosts,
//! how fresh events fare behind a backlog, a sustained load, the outbox drain, and the
//! review path on a knowledge base of a realistic size.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use super::cost::{CostPer, Stores};
use super::statements::{lines as statement_lines, PerApproval, StatementStats};
use super::{
    approve_each, drive_for, env_size, names, sized, BenchEnv, CostSample, Figures, Floor, Report,
    Service, Statements,
};

/// CPU and commits per approval, on an instance of its own whose background dispatcher is
/// off: every event must then go out from the request that committed it. Its replay runner
/// is off too: it looks for replays once a second (`replay.poll_ms`), a transaction each
/// time, and the commit counter would never stand still long enough to be read.
pub async fn cost_row(report: &mut Report, env: &BenchEnv) -> anyhow::Result<CostPer> {
    let quiet = [
        ("APP__OUTBOX__RUN_DISPATCHER", "false".to_string()),
        ("APP__REPLAY__RUN", "false".to_string()),
    ];
    let svc = env.spawn_service("cost", &quiet).await?;
    // As many approvals as the measured ones first, so that the pool has grown to its
    // steady size: a new PostgreSQL connection counts commits of its own.
    let n = sized(960, 32);
    let warm = env.make_pending(n).await?;
    anyhow::ensure!(approve_each(env, &svc, 16, warm).await?.errors == 0);
    env.expect_delivered(n).await?;
    let reviews = env.make_pending(n).await?;
    let stores = Stores::of(&env.amqp_url, &env.mongo_url);
    let groups = ProjectionGroups::read(env, &svc).await?;
    // FerretDB keeps its data in the database `ferretdb` (scripts/services/ferretdb.sh).
    let dbs = [names().db.as_str(), "ferretdb"];
    let before = CostSample::settled(&env.admin, &names().db, svc.pid(), stores).await?;
    let statements = StatementStats::read(&env.admin, &dbs).await;
    let f = approve_each(env, &svc, 16, reviews).await?;
    let after = CostSample::settled(&env.admin, &names().db, svc.pid(), stores).await?;
    let statements = StatementStats::read(&env.admin, &dbs)
        .await
        .per(&statements, n);
    anyhow::ensure!(f.errors == 0, "{} approvals failed", f.errors);
    env.expect_delivered(n).await?;
    let mut per = after.per(&before, n);
    let grouping = ProjectionGroups::read(env, &svc).await?.per_command(groups);
    drop(svc);
    let old = Floor::new(&env.settings, Statements::Old).await?;
    let (_, floor_cpu) = env.floor(&old, 16, n).await?;
    per.floor_cpu_ms = floor_cpu * 1000.0 / n as f64;
    let new = Floor::new(&env.settings, Statements::New).await?;
    let (_, new_floor_cpu) = env.floor(&new, 16, n).await?;
    per.new_floor_cpu_ms = new_floor_cpu * 1000.0 / n as f64;
    report.note(format!(
        "cost per approval ({n} at concurrency 16, dispatcher off, every event delivered by its request): \
         service CPU {:.3} ms, PostgreSQL CPU {:.3} ms in the service database's backends \
         ({:.3} ms in all of PostgreSQL, which also stores FerretDB's data), FerretDB {:.3} ms, \
         RabbitMQ {:.3} ms, Redis {:.3} ms: {:.3} ms in all these processes; \
         the HTTP client driving it (this process) {:.3} ms, {:.3} commits, \
         {:.2} projection writes per MongoDB command; \
         the floor's own CPU (this process making the same store calls, no service) {:.3} ms \
         with the old statements, {:.3} ms with the new",
        per.service_cpu_ms,
        per.pg_db_cpu_ms,
        per.pg_all_cpu_ms,
        per.ferretdb_cpu_ms,
        per.rabbitmq_cpu_ms,
        per.redis_cpu_ms,
        per.total_cpu_ms(),
        per.client_cpu_ms,
        per.commits,
        grouping,
        per.floor_cpu_ms,
        per.new_floor_cpu_ms
    ));
    statement_notes(report, statements);
    Ok(per)
}

/// The cost row's statements, per approval (see `statements.rs`), or why there are none.
fn statement_notes(report: &mut Report, per: Result<Vec<PerApproval>, String>) {
    match per {
        Ok(per) => {
            report.note(
                "PostgreSQL per approval by statement (pg_stat_statements over the cost row's \
                 measured approvals; exec and plan are wall time, inflated by 16 at once on \
                 this machine; calls, plans, buffers and WAL records are counts):"
                    .to_string(),
            );
            for line in statement_lines(&per, 14) {
                report.note(format!("  {line}"));
            }
        }
        Err(e) => report.note(format!(
            "PostgreSQL per statement: pg_stat_statements could not be read ({e}); \
             scripts/services.sh loads it in a server it starts (restart one started before)"
        )),
    }
}

/// The service's grouped projection commands and the writes they carried, so far.
#[derive(Clone, Copy)]
struct ProjectionGroups {
    commands: f64,
    writes: f64,
}

impl ProjectionGroups {
    async fn read(env: &BenchEnv, svc: &Service) -> anyhow::Result<Self> {
        let probe = BenchEnv::probe(env.http.clone(), svc.base.clone());
        Ok(Self {
            commands: probe.metric("kh_projection_group_commands_total").await?,
            writes: probe.metric("kh_projection_group_updates_total").await?,
        })
    }

    /// Writes per command since `before`.
    fn per_command(self, before: Self) -> f64 {
        (self.writes - before.writes) / (self.commands - before.commands).max(1.0)
    }
}

/// With `backlog` other documents' events undelivered, approvals at concurrency 4: the time
/// from each approval's 200 to its event on a queue. Returns the p50 in milliseconds.
pub async fn starvation_row(
    report: &mut Report,
    env: &BenchEnv,
    svc: &Service,
) -> anyhow::Result<f64> {
    let backlog = env_size("KH_BENCH_BACKLOG", 20_000, 200);
    let n = sized(200, 20);
    let arrivals = env.listen().await?;
    let reviews = env.make_pending(n).await?;
    env.purge_queue().await?;
    env.make_backlog(backlog).await?;
    let replied = Arc::new(Mutex::new(Vec::with_capacity(n)));
    let (approver, list, noted) = (env.approver(svc), Arc::new(reviews), replied.clone());
    let f = drive_for(4, Duration::from_secs(600), n, move |i| {
        let (approver, list, noted) = (approver.clone(), list.clone(), noted.clone());
        async move {
            let status = approver.approve(list[i]).await?;
            noted.lock().unwrap().push((list[i], Instant::now()));
            anyhow::Ok(status == reqwest::StatusCode::OK)
        }
    })
    .await?;
    anyhow::ensure!(
        f.errors == 0,
        "{} approvals failed behind the backlog",
        f.errors
    );
    let left = env.backlog().await?;
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut h = Histogram::<u64>::new_with_bounds(1, 600_000_000, 3)?;
    let replied = replied.lock().unwrap().clone();
    for (review, at) in replied {
        let arrived = loop {
            if let Some(t) = arrivals.arrived(&review) {
                break t;
            }
            anyhow::ensure!(Instant::now() < deadline, "no event for approval {review}");
            tokio::time::sleep(Duration::from_millis(5)).await;
        };
        h.record(arrived.saturating_duration_since(at).as_micros().max(1) as u64)?;
    }
    arrivals.close().await?;
    let mut lat = Figures::from_hist(&h, n, 0, Duration::from_secs(1));
    lat.ops_per_sec = f.ops_per_sec;
    lat.note = format!("{left} rows of the backlog still undelivered when the approvals ended");
    report.row(
        &format!("event latency (200 to event on a queue), {backlog} other documents' events undelivered"),
        4,
        &lat,
        None,
    );
    env.expect_delivered(backlog + n).await?;
    Ok(lat.p50_ms)
}
