//! Row (replay): a history replay of delivered events to one queue, with `replay.max_per_sec`
//! set high, while a live approval load runs; against the floor of raw confirmed publishes
//! (`publish.rs`), and the live events' latency against the same load with no replay. The
//! three are measured in turns, round by round.
//!
//! `KH_BENCH_REPLAY` sets the events replayed (default 100,000, the size the replay's
//! latency goal names).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use kh_review::web::auth::Role;
use lapin::options::{QueueDeclareOptions, QueueDeleteOptions};
use lapin::types::FieldTable;
use serde_json::json;
use uuid::Uuid;

use super::caller::Caller;
use super::{env_size, interleaved, names, sized, BenchEnv, Figures, Measure, Report, Service};

/// The replay's target queue.
fn target() -> &'static str {
    &names().replay_target
}

/// Live approvals per round, one at a time.
fn live_approvals() -> usize {
    sized(150, 20)
}

fn events() -> usize {
    env_size("KH_BENCH_REPLAY", 100_000, 1_000)
}

pub async fn replay_row(report: &mut Report, env: &BenchEnv) -> anyhow::Result<()> {
    let n = events();
    let batch = env.settings.outbox.batch_size.to_string();
    let envs = [
        ("APP__REPLAY__MAX_PER_SEC", "1000000".to_string()),
        ("APP__REPLAY__BATCH_SIZE", batch),
    ];
    let svc = env.spawn_service("replay", &envs).await?;
    let docs = seed_delivered(env, n).await?;
    let admin = env.caller(&svc, "bench-admin", Role::Admin);
    let (svc, replay) = (
        &svc,
        Replayed {
            admin: &admin,
            docs: &docs,
            n,
        },
    );
    let alone: Measure = Box::new(move || Box::pin(live_load(env, svc, None)));
    let during: Measure = Box::new(move || Box::pin(live_load(env, svc, Some(replay))));
    let floor: Measure = Box::new(move || Box::pin(floor(env, n)));
    let [alone, during, floor] = interleaved(vec![alone, during, floor])
        .await?
        .try_into()
        .expect("three rows");
    report.row(
        "raw confirmed publishes, batches of outbox.batch_size (replay floor)",
        1,
        &floor,
        None,
    );
    let mut replayed = during.clone();
    replayed.ops = n;
    replayed.p50_ms = 0.0;
    replayed.p99_ms = 0.0;
    let vs_floor = during.ops_per_sec / floor.ops_per_sec;
    report.row(
        &format!(
            "history replay of {n} events to one queue, during a live approval load (events/s)"
        ),
        1,
        &replayed,
        Some(("vs floor", vs_floor)),
    );
    report.row(
        "live approvals alone: click to event on a queue",
        1,
        &alone,
        None,
    );
    let mut live = during.clone();
    live.ops_per_sec = alone.ops_per_sec;
    live.note = "latency of the live events while the replay ran".into();
    report.row(
        "live approvals during the replay: click to event on a queue",
        1,
        &live,
        None,
    );
    let delay = during.p99_ms - alone.p99_ms;
    report.note(format!(
        "replay: {:.0} events/s ({vs_floor:.2}x the floor of {:.0}); live event p50 {:.1} -> {:.1} ms, p99 {:.1} -> {:.1} ms during it",
        during.ops_per_sec, floor.ops_per_sec, alone.p50_ms, during.p50_ms, alone.p99_ms, during.p99_ms
    ));
    report.goal(
        "replay throughput vs raw confirmed publishes",
        format!("{vs_floor:.2}x"),
        ">= 0.5x",
        vs_floor >= 0.5,
    );
    report.goal(
        "live event p99 during a replay, minus without",
        format!("{delay:.1} ms"),
        "<= 100 ms",
        delay <= 100.0,
    );
    Ok(())
}

/// What a round replays: the `n` delivered events of `docs`.
#[derive(Clone, Copy)]
struct Replayed<'a> {
    admin: &'a Caller,
    docs: &'a [Uuid],
    n: usize,
}

/// `n` delivered events of 100 documents, written straight into the outbox; returns the
/// documents.
async fn seed_delivered(env: &BenchEnv, n: usize) -> anyhow::Result<Vec<Uuid>> {
    let docs: Vec<Uuid> = (0..100).map(|_| Uuid::now_v7()).collect();
    sqlx::query(
        "INSERT INTO documents (id, title, body, status, version, author_id, \
           published_version, published_title, published_body) \
         SELECT d, 'Replayed', 'Body', 'APPROVED', 3, 'bench-author', 3, 'Replayed', 'Body' \
         FROM unnest($1::uuid[]) d",
    )
    .bind(&docs)
    .execute(&env.pg)
    .await?;
    // Each approved by a review of its own: a history replay sends the events of documents
    // that were submitted (never a private draft's).
    sqlx::query(
        "WITH r AS (INSERT INTO reviews (id, document_id, status, document_version, submitted_by, \
                                         decided_by, decided_at) \
                    SELECT gen_random_uuid(), d, 'APPROVED', 2, 'bench-author', 'bench-reviewer', \
                           now() FROM unnest($1::uuid[]) d RETURNING id, document_id) \
         UPDATE documents SET current_review_id = r.id FROM r WHERE documents.id = r.document_id",
    )
    .bind(&docs)
    .execute(&env.pg)
    .await?;
    sqlx::query(
        "INSERT INTO outbox (event_id, document_id, document_version, event_type, routing_key, \
           payload, projected_at, published_at, done_at) \
         SELECT e, d, 3, 'document.approved', 'document.approved', \
           jsonb_build_object('event_id', e, 'event_type', 'document.approved', \
             'document_id', d, 'document_version', 3, 'data', '{}'::jsonb), now(), now(), now() \
         FROM (SELECT gen_random_uuid() AS e, ($1::uuid[])[1 + g % 100] AS d \
               FROM generate_series(1, $2::int8) g) s",
    )
    .bind(&docs)
    .bind(n as i64)
    .execute(&env.pg)
    .await?;
    sqlx::query("ANALYZE outbox").execute(&env.pg).await?;
    Ok(docs)
}

/// Live approvals one at a time, each timed from its request to its event on a queue; with
/// `replay`, during a history replay of `n` events to the target queue, started first. The
/// figures: the live latencies, and the replay's events a second (or the approvals').
async fn live_load(
    env: &BenchEnv,
    svc: &Service,
    replay: Option<Replayed<'_>>,
) -> anyhow::Result<Figures> {
    let arrivals = env.listen().await?;
    let reviews = env.make_pending(live_approvals()).await?;
    env.purge_queue().await?;
    let approver = env.approver(svc);
    let started = match replay {
        Some(r) => Some((r, start_replay(env, r).await?)),
        None => None,
    };
    let running = Arc::new(AtomicBool::new(true));
    let watch = started.as_ref().map(|(r, (id, t))| {
        let (admin, id, flag) = (r.admin, id.clone(), running.clone());
        async move { wait_done(admin, &id, *t, flag).await }
    });
    let live = async {
        let mut h = Histogram::<u64>::new_with_bounds(1, 600_000_000, 3)?;
        let t = Instant::now();
        let mut done = 0;
        for r in &reviews {
            if started.is_some() && !running.load(Ordering::Relaxed) {
                break;
            }
            // From the click: the request publishes its event before it replies, so the
            // event is often on the queue before the 200 is read.
            let clicked = Instant::now();
            anyhow::ensure!(
                approver.approve(*r).await? == reqwest::StatusCode::OK,
                "approval failed"
            );
            let deadline = Instant::now() + Duration::from_secs(30);
            let arrived = loop {
                if let Some(at) = arrivals.arrived(r) {
                    break at;
                }
                anyhow::ensure!(Instant::now() < deadline, "no event for approval {r}");
                tokio::time::sleep(Duration::from_millis(1)).await;
            };
            h.record(
                arrived
                    .saturating_duration_since(clicked)
                    .as_micros()
                    .max(1) as u64,
            )?;
            done += 1;
        }
        anyhow::ensure!(
            done >= sized(10, 1),
            "the replay ended after {done} live approvals: too few to time"
        );
        Ok::<_, anyhow::Error>(Figures::from_hist(&h, done, 0, t.elapsed()))
    };
    let (mut figures, rate) = match watch {
        Some(w) => {
            let (f, rate) = tokio::join!(live, w);
            (f?, Some(rate?))
        }
        None => (live.await?, None),
    };
    arrivals.close().await?;
    // The approvals left over are approved untimed, so every round starts alike.
    let rest: Vec<Uuid> = reviews[figures.ops..].to_vec();
    for r in rest {
        approver.approve(r).await?;
    }
    env.expect_delivered(live_approvals()).await?;
    if let (Some(rate), Some(r)) = (rate, replay) {
        check_target(env, r.n).await?;
        figures.ops_per_sec = rate;
    }
    Ok(figures)
}

/// A fresh target queue, and a history replay to it; returns its id and start.
async fn start_replay(env: &BenchEnv, r: Replayed<'_>) -> anyhow::Result<(String, Instant)> {
    let ch = env.amqp_conn().create_channel().await?;
    ch.queue_delete(target().into(), QueueDeleteOptions::default())
        .await?;
    ch.queue_declare(
        target().into(),
        QueueDeclareOptions::default(),
        FieldTable::default(),
    )
    .await?;
    let _ = ch.close(200, "done".into()).await;
    let t = Instant::now();
    let body = json!({"mode": "history", "target_queue": target(), "document_ids": r.docs});
    let (status, replay) = r
        .admin
        .send(reqwest::Method::POST, "/api/v1/admin/replays", &body)
        .await?;
    anyhow::ensure!(
        status == reqwest::StatusCode::ACCEPTED,
        "replay refused: {status} {replay}"
    );
    Ok((replay["id"].as_str().unwrap_or_default().to_string(), t))
}

/// Waits until the replay is done; returns its events a second, start to end.
async fn wait_done(
    admin: &Caller,
    id: &str,
    started: Instant,
    running: Arc<AtomicBool>,
) -> anyhow::Result<f64> {
    let deadline = started + Duration::from_secs(300);
    loop {
        let (_, r) = admin.get(&format!("/api/v1/admin/replays/{id}")).await?;
        if r["state"] != "running" {
            running.store(false, Ordering::Relaxed);
            anyhow::ensure!(r["state"] == "done", "the replay ended {}: {r}", r["state"]);
            let secs = started.elapsed().as_secs_f64();
            return Ok(r["sent"].as_f64().unwrap_or(0.0) / secs);
        }
        anyhow::ensure!(Instant::now() < deadline, "the replay did not end in 300 s");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Exactly `n` messages on the target queue; then it is deleted.
async fn check_target(env: &BenchEnv, n: usize) -> anyhow::Result<()> {
    let ch = env.amqp_conn().create_channel().await?;
    let passive = QueueDeclareOptions {
        passive: true,
        ..Default::default()
    };
    let q = ch
        .queue_declare(target().into(), passive, FieldTable::default())
        .await?;
    anyhow::ensure!(
        q.message_count() as usize == n,
        "{} replayed messages on the target queue, expected {n}",
        q.message_count()
    );
    ch.queue_delete(target().into(), QueueDeleteOptions::default())
        .await?;
    let _ = ch.close(200, "done".into()).await;
    Ok(())
}

/// Raw confirmed publishes of `n` events: the floor the replay is read against.
async fn floor(env: &BenchEnv, n: usize) -> anyhow::Result<Figures> {
    let (rate, _) = env.raw_publish_rate(n).await?;
    let h = Histogram::<u64>::new_with_bounds(1, 600_000_000, 3)?;
    let mut f = Figures::from_hist(&h, n, 0, Duration::from_secs(1));
    f.ops_per_sec = rate;
    Ok(f)
}
