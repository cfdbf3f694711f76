//! `make bench`: what the outer lock and the review path cost, against the floor their stores
//! set, measured in one run. Prints a Markdown table and writes it (and a JSON copy) under
//! `target/bench/`. Every figure is the median of 3 rounds after a warm-up round; every
//! ratio compares figures of this run, and the rows a ratio compares are measured in turns,
//! round by round (`interleaved`), so that a machine slowing down mid-run skews neither. The
//! run checks its own results and fails loudly rather than print figures from a broken run.
//!
//! The service runs as its own binary (so its memory is its own), the release build of
//! `make bench`, against the services `make services` starts, in a database, Redis prefix,
//! MongoDB database and queue of the benchmark's own.
//!
//! The rows come in groups ([`GROUPS`]). `make bench-smoke` (`KH_BENCH_SMOKE=1`, the debug
//! build) runs every group at tiny sizes, once, and fails unless each produced its figures
//! (`Report::check_since`); it writes its report apart, marked as no measurement.

mod bench_support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use bench_support::{
    approve_load, audit_rows, console_rows, cost_row, data_size_row, drain_row, drive,
    editing_rows, interleaved, lifecycle_rows, lock_rows, peer_rows, replay_row, reverify_rows,
    round_trip_rows, rounds, sized, smoke, space_list_rows, starvation_row, sustained_row,
    trace_rows, webhook_rows, workflow_rows, ApproveFigures, BenchEnv, Figures, Floor, Goals,
    Measure, Rec, Report, Service, Statements,
};

/// The groups of rows `make bench` runs, in this order (the smoke run checks each).
const GROUPS: [&str; 19] = [
    "lock",
    // First, while no other instance polls the benchmark's database.
    "cost",
    "round-trips",
    "approve",
    "trace",
    "contention",
    "starvation",
    "sustained",
    "console",
    "lifecycle",
    "editing",
    "drain",
    "replay",
    "data-size",
    "audit",
    "webhooks",
    // The overdue row leaves its 100,000 reviews behind (withdrawn).
    "workflow",
    // It leaves 100,000 published documents behind, due for re-verification in a day.
    "reverify",
    // Last: it leaves 100,000 documents in 100 spaces behind.
    "space-lists",
];

#[tokio::main(flavor = "multi_thread", worker_threads = 4)]
async fn main() -> anyhow::Result<()> {
    let started = Instant::now();
    let only = std::env::var("KH_BENCH_ONLY").ok();
    anyhow::ensure!(
        smoke() || only.is_some() || !cfg!(debug_assertions),
        "a debug build measures nothing: `make bench` (release), or `make bench-smoke`"
    );
    let env = BenchEnv::prepare().await?;
    env.clear_redis().await?;
    let mut run = Run::new(&env);
    // A quick look at one row while working on it; writes no report.
    if let Some(only) = only {
        if run.one(&only).await? {
            return Ok(());
        }
    }
    for group in GROUPS {
        let (mark, t) = (run.report.mark(), Instant::now());
        run.group(group).await?;
        if smoke() {
            let added = run.report.check_since(mark, group)?;
            let secs = t.elapsed().as_secs_f64();
            eprintln!("smoke: {group}: {added}, every figure a number ({secs:.1} s)");
        }
    }
    let mark = run.report.mark();
    run.goals.report(&mut run.report);
    if smoke() {
        let added = run.report.check_since(mark, "goals")?;
        eprintln!("smoke: goals: {added}, every figure a number");
    }
    env.clear_redis().await?;
    let total = started.elapsed().as_secs_f64();
    run.report
        .note(format!("total benchmark time: {total:.0} s"));
    run.report.write(run.goals.peak_rss_mib)
}

/// A run: its report, the figures its goals read, and the Redis-up instance the approve,
/// contention, backlog and sustained rows share.
struct Run<'e> {
    env: &'e BenchEnv,
    report: Report,
    goals: Goals,
    up: Option<Service>,
}

impl<'e> Run<'e> {
    fn new(env: &'e BenchEnv) -> Self {
        Self {
            env,
            report: Report::default(),
            goals: Goals::default(),
            up: None,
        }
    }

    /// The row (or rows) `KH_BENCH_ONLY` names, alone; false when it names none.
    async fn one(&mut self, only: &str) -> anyhow::Result<bool> {
        let alone = [
            "drain",
            "replay",
            "cost",
            "round-trips",
            "lock",
            "console",
            "audit",
            "space-lists",
            "editing",
            "webhooks",
            // `make bench-peer`: not one of `make bench`'s groups.
            "peer",
            "reverify",
        ];
        if alone.contains(&only) || only == "trace" {
            self.group(only).await?;
            return Ok(true);
        }
        let (env, report) = (self.env, &mut self.report);
        match only {
            "workflow" | "two" | "claim" | "queue" | "overdue" => {
                let only = Some(only).filter(|o| *o != "workflow");
                workflow_rows(report, env, only).await?.report(report);
            }
            "lifecycle" | "revision" | "published" | "comment" => {
                let only = Some(only).filter(|o| *o != "lifecycle");
                lifecycle_rows(report, env, only).await?.report(report);
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Runs the group `name` of [`GROUPS`].
    async fn group(&mut self, name: &str) -> anyhow::Result<()> {
        let Run {
            env,
            report: r,
            goals: g,
            up,
        } = self;
        let env = *env;
        match name {
            "lock" => g.lock_ratio = lock_rows(r, env).await?,
            "cost" => g.cost = cost_row(r, env).await?,
            "round-trips" => g.round_trips = round_trip_rows(r, env).await?,
            "approve" => {
                let dead = [("APP__REDIS__URL", env.dead_redis_url())];
                let down = env.spawn_service("redis-down", &dead).await?;
                // The same service as the tables' owner: row-level security does not hold.
                let owner = [("APP__DATABASE__URL", env.pg_url.clone())];
                let owner = env.spawn_service("owner", &owner).await?;
                let services = (the_up(env, up).await?, &down, &owner);
                g.approve = approve_rows(r, env, services).await?;
            }
            "trace" => _ = trace_rows(r, env).await?,
            "contention" => {
                let svc = the_up(env, up).await?;
                let f = rounds(|| contention(env, svc, 64)).await?;
                let what = "contention: 64 approvals of one review, the 409 replies";
                r.row(what, 64, &f, None);
            }
            "starvation" => g.starved = starvation_row(r, env, the_up(env, up).await?).await?,
            "sustained" => {
                g.sustained = sustained_row(r, env, the_up(env, up).await?).await?;
                // Memory, before the instance goes away.
                let svc = up.take().expect("started above");
                g.peak_rss_mib = svc.peak_rss_mib()?;
                r.note(format!(
                    "service peak resident memory (VmHWM, Redis-up instance, after every row above): {:.1} MiB",
                    g.peak_rss_mib
                ));
            }
            "console" => {
                let console = console_rows(r, env).await?;
                r.note(format!(
                    "console pages: the slowest p50 is {console:.2}x that of the JSON calls it wraps (goal: within 2x)"
                ));
            }
            "lifecycle" => g.lifecycle = lifecycle_rows(r, env, None).await?,
            "editing" => g.editing = editing_rows(r, env).await?,
            "drain" => g.drain = drain_row(r, env).await?,
            "replay" => replay_row(r, env).await?,
            "data-size" => g.grown = data_size_row(r, env, g.approve.p50_c1).await?,
            "audit" => audit_rows(r, env).await?,
            "peer" => _ = peer_rows(r, env).await?,
            "webhooks" => {
                let ratio = webhook_rows(r, env).await?;
                r.note(format!(
                    "approve with a webhook endpoint: p50 {ratio:.2}x that without, at 16 at once (goal: within 1.1x)"
                ));
            }
            "workflow" => g.workflow = workflow_rows(r, env, None).await?,
            "reverify" => _ = reverify_rows(r, env).await?,
            "space-lists" => space_list_rows(r, env).await?,
            _ => anyhow::bail!("no group {name}"),
        }
        Ok(())
    }
}

/// The Redis-up instance, started on first use.
async fn the_up<'s>(env: &BenchEnv, up: &'s mut Option<Service>) -> anyhow::Result<&'s Service> {
    if up.is_none() {
        *up = Some(env.spawn_service("up", &[]).await?);
    }
    Ok(up.as_ref().expect("started"))
}

/// 2. Review path over HTTP, Redis up, and Redis down (circuit open), and 4. the floor.
async fn approve_rows(
    report: &mut Report,
    env: &BenchEnv,
    (up, down, owner): (&Service, &Service, &Service),
) -> anyhow::Result<ApproveFigures> {
    let mut out = ApproveFigures::default();
    // The floors' clients, kept for every round and concurrency.
    let old = Floor::new(&env.settings, Statements::Old).await?;
    let new = Floor::new(&env.settings, Statements::New).await?;
    for conc in [1usize, 16, 64] {
        let n = match conc {
            1 => sized(150, 10),
            16 => sized(480, 32),
            _ => sized(960, 64),
        };
        // 4. The floor (the same statements, MongoDB update and confirmed publish), in turns.
        let with_redis: Measure = Box::new(|| Box::pin(approve_load(env, up, conc, n)));
        let without: Measure = Box::new(|| Box::pin(approve_load(env, down, conc, n)));
        let floor: Measure = Box::new(|| Box::pin(review_floor(env, &old, conc, n)));
        let new_floor: Measure = Box::new(|| Box::pin(review_floor(env, &new, conc, n)));
        let as_owner: Measure = Box::new(|| Box::pin(approve_load(env, owner, conc, n)));
        let rows = vec![with_redis, without, floor, new_floor, as_owner];
        let [with_redis, without, floor, new_floor, as_owner] =
            interleaved(rows).await?.try_into().expect("five rows");
        report.row("approve over HTTP, Redis up", conc, &with_redis, None);
        let walled = (
            with_redis.p50_ms / as_owner.p50_ms,
            with_redis.ops_per_sec / as_owner.ops_per_sec,
        );
        report.row(
            "approve over HTTP, Redis up, as the tables' owner (no row-level security)",
            conc,
            &as_owner,
            Some(("p50 with the wall / without", walled.0)),
        );
        report.ratio(
            &format!("throughput with the wall / without at {conc}"),
            walled.1,
        );
        report.row(
            "approve over HTTP, Redis down (circuit open)",
            conc,
            &without,
            Some(("p50 vs Redis up", without.p50_ms / with_redis.p50_ms)),
        );
        report.row(
            "floor: the old PG statements (one per row, marks one by one) + Mongo update + confirmed publish, no service",
            conc,
            &floor,
            Some(("service p50 / floor p50", with_redis.p50_ms / floor.p50_ms)),
        );
        report.row(
            "floor of the new statements (combined write, grouped marks) + Mongo update + confirmed publish, no service",
            conc,
            &new_floor,
            Some(("service p50 / new floor p50", with_redis.p50_ms / new_floor.p50_ms)),
        );
        let throughput = with_redis.ops_per_sec / floor.ops_per_sec;
        let vs_new = with_redis.ops_per_sec / new_floor.ops_per_sec;
        report.ratio(&format!("throughput service / floor at {conc}"), throughput);
        report.ratio(&format!("throughput service / new floor at {conc}"), vs_new);
        match conc {
            1 => {
                out.walled_c1 = walled;
                out.p50_c1 = with_redis.p50_ms;
                out.p50_vs_floor_c1 = with_redis.p50_ms / floor.p50_ms;
                out.degraded_c1 = without.p50_ms / with_redis.p50_ms;
            }
            16 => {
                out.walled_c16 = walled;
                (out.throughput_c16, out.vs_new_floor_c16) = (throughput, vs_new);
            }
            _ => {
                (out.throughput_c64, out.vs_new_floor_c64) = (throughput, vs_new);
                out.p99_c64 = with_redis.p99_ms;
            }
        }
    }
    Ok(out)
}

async fn review_floor(
    env: &BenchEnv,
    floor: &Arc<Floor>,
    conc: usize,
    n: usize,
) -> anyhow::Result<Figures> {
    Ok(env.floor(floor, conc, n).await?.0)
}

async fn contention(env: &BenchEnv, svc: &Service, clients: usize) -> anyhow::Result<Figures> {
    let review = env.make_pending(1).await?[0];
    env.purge_queue().await?;
    let oks = Arc::new(AtomicUsize::new(0));
    let (approver, oks2) = (env.approver(svc), oks.clone());
    // One request per client, all at once: the figures are those of the 409 replies.
    let mut figures = drive(clients, clients, move |_| {
        let (approver, oks) = (approver.clone(), oks2.clone());
        async move {
            match approver.approve(review).await? {
                reqwest::StatusCode::OK => {
                    oks.fetch_add(1, Ordering::Relaxed);
                    Ok(Rec::Unrecorded)
                }
                reqwest::StatusCode::CONFLICT => Ok(Rec::Ok),
                s => anyhow::bail!("unexpected status {s} under contention"),
            }
        }
    })
    .await?;
    anyhow::ensure!(
        oks.load(Ordering::Relaxed) == 1,
        "exactly one approval must win, got {}",
        oks.load(Ordering::Relaxed)
    );
    let approved = env.approved_count(review).await?;
    anyhow::ensure!(
        approved == 1,
        "PostgreSQL shows {approved} approvals of the contended review"
    );
    env.expect_delivered(1).await?;
    figures.note = "one 200, the rest 409".into();
    Ok(figures)
}
