//! `make bench`: what the outer lock and the review path cost, against the floor their stores
//! set, measured in one run. Prints a Markdown table and writes it (and a JSON copy) under
//! `target/bench/`. Every figure is the median of ROUNDS rounds after a warm-up round; every
//! ratio compares figures of this run, and the rows a ratio compares are measured in turns,
//! round by round (`interleaved`), so that a machine slowing down mid-run skews neither. The run checks its own results and fails loudly
//! rather than print figures from a broken run.
//!
//! The service runs as its own release binary (so its memory is its own), against the
//! services `make services` starts, in a database, Redis prefix, MongoDB database and queue
//! of the benchmark's own.

mod bench_support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bench_support::{
    approve_load, audit_rows, console_rows, cost_row, data_size_row, drain_row, drive, interleaved,
    lifecycle_rows, names, replay_row, round_trip_rows, rounds, starvation_row, sustained_row,
    trace_rows, workflow_rows, ApproveFigures, BenchEnv, Figures, Floor, Goals, Measure, Rec,
    Report, Service, Statements,
};
use kh_review::lock::redis::RedisLockProvider;
use kh_review::lock::{Attempt, LockProvider, Ttl};
use uuid::Uuid;

#[tokio::main(flavor = "multi_thread", worker_threads = 4)]
async fn main() -> anyhow::Result<()> {
    let started = Instant::now();
    let env = BenchEnv::prepare().await?;
    env.clear_redis().await?;
    let mut report = Report::default();
    // A quick look at one row while working on it; writes no report.
    if let Ok(only) = std::env::var("KH_BENCH_ONLY") {
        if one_row(&mut report, &env, &only).await? {
            return Ok(());
        }
    }

    let lock_ratio = lock_rows(&mut report, &env).await?;
    // First, while no other instance polls the benchmark's database.
    let cost = cost_row(&mut report, &env).await?;
    let round_trips = round_trip_rows(&mut report, &env).await?;
    let up = env.spawn_service("up", &[]).await?;
    let down = env
        .spawn_service("redis-down", &[("APP__REDIS__URL", env.dead_redis_url())])
        .await?;
    let approve = approve_rows(&mut report, &env, &up, &down).await?;
    drop(down);
    trace_rows(&mut report, &env).await?;

    // Contention: 64 clients on one review.
    let contention = rounds(|| contention(&env, &up, 64)).await?;
    report.row(
        "contention: 64 approvals of one review, the 409 replies",
        64,
        &contention,
        None,
    );
    let starved = starvation_row(&mut report, &env, &up).await?;
    let sustained = sustained_row(&mut report, &env, &up).await?;

    // Memory, before the service goes away.
    let peak_rss_mib = up.peak_rss_mib()?;
    report.note(format!(
        "service peak resident memory (VmHWM, Redis-up instance, after every row above): {peak_rss_mib:.1} MiB"
    ));
    drop(up);

    let console = console_rows(&mut report, &env).await?;
    report.note(format!(
        "console pages: the slowest p50 is {console:.2}x that of the JSON calls it wraps (goal: within 2x)"
    ));
    let lifecycle = lifecycle_rows(&mut report, &env, None).await?;
    let drain = drain_row(&mut report, &env).await?;
    replay_row(&mut report, &env).await?;
    let grown = data_size_row(&mut report, &env, approve.p50_c1).await?;
    audit_rows(&mut report, &env).await?;
    // Last: the overdue row leaves 100,000 reviews behind (withdrawn).
    let workflow = workflow_rows(&mut report, &env, None).await?;

    let goals = Goals {
        approve,
        lock_ratio,
        cost,
        round_trips,
        drain,
        grown,
        sustained,
        starved,
        peak_rss_mib,
        workflow,
        lifecycle,
    };
    goals.report(&mut report);
    env.clear_redis().await?;
    report.note(format!(
        "total benchmark time: {:.0} s",
        started.elapsed().as_secs_f64()
    ));
    report.write(peak_rss_mib)?;
    Ok(())
}

/// The row (or rows) `KH_BENCH_ONLY` names, alone; false when it names none.
async fn one_row(report: &mut Report, env: &BenchEnv, only: &str) -> anyhow::Result<bool> {
    match only {
        "drain" => drain_row(report, env).await.map(|_| ())?,
        "replay" => replay_row(report, env).await?,
        "cost" => cost_row(report, env).await.map(|_| ())?,
        "round-trips" => round_trip_rows(report, env).await.map(|_| ())?,
        "lock" => lock_rows(report, env).await.map(|_| ())?,
        "console" => console_rows(report, env).await.map(|_| ())?,
        "audit" => audit_rows(report, env).await?,
        "trace" => trace_rows(report, env).await.map(|_| ())?,
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

/// 1. Lock floor: raw SET NX PX + DEL, then the provider's acquire + release.
async fn lock_rows(report: &mut Report, env: &BenchEnv) -> anyhow::Result<f64> {
    let provider = RedisLockProvider::new(&env.redis_url, 64, Duration::from_millis(500))?;
    // The service's lock TTL (`lock.ttl_ms`), for the raw SET and the provider alike.
    let ttl = env.settings.lock.ttl;
    let mut at_one = 0.0;
    for conc in [1usize, 32] {
        let ops = if conc == 1 { 6_000 } else { 8_000 };
        let raw: Measure = Box::new(|| Box::pin(lock_raw(&provider, ttl, conc, ops)));
        let prov: Measure = Box::new(|| Box::pin(lock_provider(&provider, ttl, conc, ops)));
        let [raw, prov] = interleaved(vec![raw, prov])
            .await?
            .try_into()
            .expect("two rows");
        report.row("lock floor: SET NX PX + DEL", conc, &raw, None);
        report.row(
            "lock provider: acquire + release",
            conc,
            &prov,
            Some(("vs floor", prov.p50_ms / raw.p50_ms)),
        );
        if conc == 1 {
            at_one = prov.p50_ms / raw.p50_ms;
        }
    }
    Ok(at_one)
}

/// 2. Review path over HTTP, Redis up, and Redis down (circuit open), and 4. the floor.
async fn approve_rows(
    report: &mut Report,
    env: &BenchEnv,
    up: &Service,
    down: &Service,
) -> anyhow::Result<ApproveFigures> {
    let mut out = ApproveFigures::default();
    // The floors' clients, kept for every round and concurrency.
    let old = Floor::new(&env.settings, Statements::Old).await?;
    let new = Floor::new(&env.settings, Statements::New).await?;
    for conc in [1usize, 16, 64] {
        let n = match conc {
            1 => 150,
            16 => 480,
            _ => 960,
        };
        // 4. The floor: the same statements, MongoDB update and confirmed publish, direct,
        // measured in turns with the service.
        let with_redis: Measure = Box::new(|| Box::pin(approve_load(env, up, conc, n)));
        let without: Measure = Box::new(|| Box::pin(approve_load(env, down, conc, n)));
        let floor: Measure = Box::new(|| Box::pin(review_floor(env, &old, conc, n)));
        let new_floor: Measure = Box::new(|| Box::pin(review_floor(env, &new, conc, n)));
        let rows = vec![with_redis, without, floor, new_floor];
        let [with_redis, without, floor, new_floor] =
            interleaved(rows).await?.try_into().expect("four rows");
        report.row("approve over HTTP, Redis up", conc, &with_redis, None);
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
                out.p50_c1 = with_redis.p50_ms;
                out.p50_vs_floor_c1 = with_redis.p50_ms / floor.p50_ms;
                out.degraded_c1 = without.p50_ms / with_redis.p50_ms;
            }
            16 => (out.throughput_c16, out.vs_new_floor_c16) = (throughput, vs_new),
            _ => {
                (out.throughput_c64, out.vs_new_floor_c64) = (throughput, vs_new);
                out.p99_c64 = with_redis.p99_ms;
            }
        }
    }
    Ok(out)
}

async fn lock_raw(
    p: &RedisLockProvider,
    ttl: Ttl,
    conc: usize,
    ops: usize,
) -> anyhow::Result<Figures> {
    let pool = p.pool().clone();
    let key = format!("{}floor:{}", names().redis_prefix, Uuid::new_v4().simple());
    drive(conc, ops, move |i| {
        let (pool, key) = (pool.clone(), key.clone());
        async move {
            let mut c = pool.get().await?;
            let token = format!("t{i}");
            let set: Option<String> = redis::cmd("SET")
                .arg(&key)
                .arg(&token)
                .arg("NX")
                .arg("PX")
                .arg(ttl.as_millis())
                .query_async(&mut *c)
                .await?;
            if set.is_some() {
                let _: i64 = redis::cmd("DEL").arg(&key).query_async(&mut *c).await?;
            }
            anyhow::Ok(true)
        }
    })
    .await
}

async fn lock_provider(
    p: &RedisLockProvider,
    ttl: Ttl,
    conc: usize,
    ops: usize,
) -> anyhow::Result<Figures> {
    let p = p.clone();
    let key = format!("{}prov:{}", names().redis_prefix, Uuid::new_v4().simple());
    drive(conc, ops, move |_| {
        let (p, key) = (p.clone(), key.clone());
        async move {
            if let Attempt::Held(h) = p.acquire(&key, ttl).await? {
                let released = p.release(&h.ownership).await?;
                anyhow::ensure!(released, "release of an acquired lock failed");
            }
            anyhow::Ok(true)
        }
    })
    .await
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
