//! `make bench`: what the outer lock and the review path cost, against the floor their stores
//! set, measured in one run. Prints a Markdown table and writes it (and a JSON copy) under
//! `target/bench/`. Every figure is the median of ROUNDS rounds after a warm-up round; every
//! ratio compares figures of this run. The run checks its own results and fails loudly
//! rather than print figures from a broken run.
//!
//! The service runs as its own release binary (so its memory is its own), against the
//! services `make services` starts, in a database, Redis prefix, MongoDB database and queue
//! of the benchmark's own.

mod bench_support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bench_support::*;
use hdrhistogram::Histogram;
use kh_review::lock::redis::RedisLockProvider;
use kh_review::lock::{LockProvider, Ttl};
use serde_json::json;
use uuid::Uuid;

pub(crate) const ROUNDS: usize = 3;

#[tokio::main(flavor = "multi_thread", worker_threads = 4)]
async fn main() -> anyhow::Result<()> {
    let started = Instant::now();
    let env = BenchEnv::prepare().await?;
    let mut report = Report::default();

    lock_rows(&mut report, &env).await?;
    let up = env.spawn_service("up", &[]).await?;
    let down = env
        .spawn_service("redis-down", &[("APP__REDIS__URL", env.dead_redis_url())])
        .await?;
    approve_rows(&mut report, &env, &up, &down).await?;

    // 3. Contention: 64 clients on one review.
    let contention = rounds(|| contention(&env, &up, 64)).await?;
    report.row(
        "contention: 64 approvals of one review, the 409 replies",
        64,
        &contention,
        None,
    );

    // 6. Memory, before the services go away.
    let peak_rss_mib = up.peak_rss_mib()?;
    report.note(format!(
        "service peak resident memory (VmHWM, Redis-up instance): {peak_rss_mib:.1} MiB"
    ));
    drop(up);
    drop(down);

    // 5. Outbox drain after RabbitMQ comes back.
    let drain = outbox_drain(&env, 500).await?;
    report.note(format!(
        "outbox drain: {} events committed while RabbitMQ was unreachable, delivered in {:.2} s after it returned: {:.0} events/s",
        drain.0, drain.1, drain.0 as f64 / drain.1
    ));

    report.note(format!(
        "total benchmark time: {:.0} s",
        started.elapsed().as_secs_f64()
    ));
    report.write(peak_rss_mib)?;
    Ok(())
}

/// 1. Lock floor: raw SET NX PX + DEL, then the provider's acquire + release.
async fn lock_rows(report: &mut Report, env: &BenchEnv) -> anyhow::Result<()> {
    let provider = RedisLockProvider::new(&env.redis_url, 64, Duration::from_millis(500))?;
    for conc in [1usize, 32] {
        let ops = if conc == 1 { 2_000 } else { 8_000 };
        let raw = rounds(|| lock_raw(&provider, conc, ops)).await?;
        let prov = rounds(|| lock_provider(&provider, conc, ops)).await?;
        report.row("lock floor: SET NX PX + DEL", conc, &raw, None);
        report.row(
            "lock provider: acquire + release",
            conc,
            &prov,
            Some(("vs floor", prov.p50_ms / raw.p50_ms)),
        );
    }

    Ok(())
}

/// 2. Review path over HTTP, Redis up, and Redis down (circuit open), and 4. the floor.
async fn approve_rows(
    report: &mut Report,
    env: &BenchEnv,
    up: &Service,
    down: &Service,
) -> anyhow::Result<()> {
    for conc in [1usize, 16, 64] {
        let n = match conc {
            1 => 150,
            16 => 480,
            _ => 960,
        };
        let with_redis = rounds(|| approve_load(env, up, conc, n)).await?;
        let without = rounds(|| approve_load(env, down, conc, n)).await?;
        report.row("approve over HTTP, Redis up", conc, &with_redis, None);
        report.row(
            "approve over HTTP, Redis down (circuit open)",
            conc,
            &without,
            Some(("p50 vs Redis up", without.p50_ms / with_redis.p50_ms)),
        );
        // 4. The floor: the same statements, MongoDB update and confirmed publish, direct.
        let floor = rounds(|| review_floor(env, conc, n)).await?;
        report.row(
            "floor: same PG statements + Mongo update + confirmed publish, no service",
            conc,
            &floor,
            Some(("service p50 / floor p50", with_redis.p50_ms / floor.p50_ms)),
        );
        report.ratio(
            &format!("throughput service / floor at {conc}"),
            with_redis.ops_per_sec / floor.ops_per_sec,
        );
    }

    Ok(())
}

/// One warm-up round, then the median of ROUNDS rounds.
async fn rounds<F, Fut>(mut f: F) -> anyhow::Result<Figures>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<Figures>>,
{
    f().await?;
    let mut all = Vec::new();
    for _ in 0..ROUNDS {
        all.push(f().await?);
    }
    Ok(Figures::median(&all))
}

/// How one operation went.
enum Rec {
    Ok,
    Failed,
    /// Succeeded but is left out of the latency figures.
    Unrecorded,
}

impl From<bool> for Rec {
    fn from(ok: bool) -> Self {
        if ok {
            Rec::Ok
        } else {
            Rec::Failed
        }
    }
}

/// Runs `n` operations over `conc` workers.
async fn drive<F, Fut, R>(conc: usize, n: usize, op: F) -> anyhow::Result<Figures>
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = anyhow::Result<R>> + Send,
    R: Into<Rec>,
{
    let op = Arc::new(op);
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..conc {
        let (op, next) = (op.clone(), next.clone());
        workers.push(tokio::spawn(async move {
            let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).expect("histogram");
            let mut errors = 0usize;
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    break;
                }
                let t = Instant::now();
                let rec: Rec = op(i).await?.into();
                let micros = t.elapsed().as_micros().max(1) as u64;
                match rec {
                    Rec::Ok => h.record(micros).expect("in range"),
                    Rec::Failed => {
                        h.record(micros).expect("in range");
                        errors += 1;
                    }
                    Rec::Unrecorded => {}
                }
            }
            anyhow::Ok((h, errors))
        }));
    }
    let mut hist = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).expect("histogram");
    let mut errors = 0;
    for w in workers {
        let (h, e) = w.await??;
        hist.add(h).expect("same bounds");
        errors += e;
    }
    Ok(Figures::from_hist(&hist, n, errors, started.elapsed()))
}

async fn lock_raw(p: &RedisLockProvider, conc: usize, ops: usize) -> anyhow::Result<Figures> {
    let pool = p.pool().clone();
    let key = format!("bench:floor:{}", Uuid::new_v4().simple());
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
                .arg(10_000)
                .query_async(&mut c)
                .await?;
            if set.is_some() {
                let _: i64 = redis::cmd("DEL").arg(&key).query_async(&mut c).await?;
            }
            anyhow::Ok(true)
        }
    })
    .await
}

async fn lock_provider(p: &RedisLockProvider, conc: usize, ops: usize) -> anyhow::Result<Figures> {
    let p = p.clone();
    let key = format!("bench:prov:{}", Uuid::new_v4().simple());
    let ttl = Ttl::new(Duration::from_secs(10)).expect("non-zero");
    drive(conc, ops, move |_| {
        let (p, key) = (p.clone(), key.clone());
        async move {
            let h = p.acquire(&key, ttl).await?;
            if h.acquired {
                anyhow::ensure!(p.release(&h).await?, "release of an acquired lock failed");
            }
            anyhow::Ok(true)
        }
    })
    .await
}

/// Approves every review over HTTP, `conc` at a time; a non-200 counts as an error.
async fn approve_each(
    env: &BenchEnv,
    svc: &Service,
    conc: usize,
    reviews: Vec<Uuid>,
) -> anyhow::Result<Figures> {
    let n = reviews.len();
    let reviews = Arc::new(reviews);
    let (client, base, token) = (
        env.http.clone(),
        svc.base.clone(),
        env.reviewer_token.clone(),
    );
    drive(conc, n, move |i| {
        let (client, base, token, reviews) =
            (client.clone(), base.clone(), token.clone(), reviews.clone());
        async move {
            let r = client
                .post(format!("{base}/api/v1/reviews/{}/approve", reviews[i]))
                .bearer_auth(&token)
                .json(&json!({}))
                .send()
                .await?;
            anyhow::Ok(r.status() == reqwest::StatusCode::OK)
        }
    })
    .await
}

async fn approve_load(
    env: &BenchEnv,
    svc: &Service,
    conc: usize,
    n: usize,
) -> anyhow::Result<Figures> {
    let reviews = env.make_pending(n).await?;
    env.purge_queue().await?;
    let figures = approve_each(env, svc, conc, reviews).await?;
    anyhow::ensure!(
        figures.errors == 0,
        "{} approvals failed at concurrency {conc} ({})",
        figures.errors,
        svc.name
    );
    env.expect_delivered(n).await?;
    Ok(figures)
}

async fn review_floor(env: &BenchEnv, conc: usize, n: usize) -> anyhow::Result<Figures> {
    let reviews = Arc::new(env.make_pending(n).await?);
    env.purge_queue().await?;
    let direct = Arc::new(env.direct().await?);
    let figures = drive(conc, n, move |i| {
        let (direct, reviews) = (direct.clone(), reviews.clone());
        async move {
            direct.approve(reviews[i]).await?;
            anyhow::Ok(true)
        }
    })
    .await?;
    env.expect_queue(n).await?;
    Ok(figures)
}

async fn contention(env: &BenchEnv, svc: &Service, clients: usize) -> anyhow::Result<Figures> {
    let review = env.make_pending(1).await?[0];
    env.purge_queue().await?;
    let oks = Arc::new(AtomicUsize::new(0));
    let (client, base, token, oks2) = (
        env.http.clone(),
        svc.base.clone(),
        env.reviewer_token.clone(),
        oks.clone(),
    );
    // One request per client, all at once: the figures are those of the 409 replies.
    let mut figures = drive(clients, clients, move |_| {
        let (client, base, token, oks) =
            (client.clone(), base.clone(), token.clone(), oks2.clone());
        async move {
            let r = client
                .post(format!("{base}/api/v1/reviews/{review}/approve"))
                .bearer_auth(&token)
                .json(&json!({}))
                .send()
                .await?;
            match r.status() {
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

/// Commits `n` approvals while RabbitMQ is unreachable, brings it back, and times delivery.
async fn outbox_drain(env: &BenchEnv, n: usize) -> anyhow::Result<(usize, f64)> {
    let proxy = Proxy::start(env.amqp_host_port()).await;
    proxy.cut();
    let svc = env
        .spawn_service("drain", &[("APP__AMQP__URL", env.amqp_url_via(proxy.port))])
        .await?;
    let reviews = env.make_pending(n).await?;
    env.purge_queue().await?;
    let f = approve_each(env, &svc, 16, reviews).await?;
    anyhow::ensure!(f.errors == 0, "approvals failed while RabbitMQ was down");
    anyhow::ensure!(
        env.queue_len().await? == 0,
        "events were published while RabbitMQ was unreachable"
    );
    let backlog = env.backlog().await?;
    anyhow::ensure!(
        backlog as usize >= n,
        "only {backlog} events waiting in the outbox"
    );
    let t = Instant::now();
    proxy.restore();
    env.expect_queue(n).await?;
    let secs = t.elapsed().as_secs_f64();
    drop(svc);
    Ok((n, secs))
}
