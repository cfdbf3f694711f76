//! The re-verification scheduler (`KH_BENCH_ONLY=reverify`): 100,000 approved, published
//! documents whose `verify_by` is a day away (written by SQL), on an instance that runs the
//! scheduler at its default tick (`review.reverify_sweep_ms`, 5 s; the other instances of
//! the benchmark never run it).
//!
//! - *lag*: each round, 1,000 more such documents fall due a second after they are
//!   written; the time from their `verify_by` to each one's `document.reverification_due`
//!   on a queue, and until the last.
//! - *the approve path beside it*: in turns, 3,000 approvals at 16 at once while nothing
//!   falls due, and while 1,000 documents fell due as they started (the scheduler opening
//!   their re-verifications meanwhile); the second's p50 over the first's.
//!
//! Every round's re-verifications are withdrawn after it, so the scheduler never expires a
//! document mid-run.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use uuid::Uuid;

use super::approve::approve_each;
use super::listen::Arrivals;
use super::{interleaved, rounds, sized, warm_ups, BenchEnv, Figures, Measure, Report, Service};

/// The event a document falling due raises.
const DUE: &str = "document.reverification_due";

/// The documents not due, those falling due in a round, and the approvals of a round.
fn sizes() -> (usize, usize, usize) {
    sized((99_000, 1_000, 3_000), (90, 10, 40))
}

/// The scheduler's tick: its default (every half second in the smoke run).
fn tick() -> [(&'static str, String); 1] {
    let every = sized("5000", "500");
    [("APP__REVIEW__REVERIFY_SWEEP_MS", every.to_string())]
}

/// `n` approved documents, version 3 published, due for re-verification in a day.
async fn make_published(env: &BenchEnv, n: usize) -> anyhow::Result<Vec<Uuid>> {
    let docs: Vec<Uuid> = (0..n).map(|_| Uuid::now_v7()).collect();
    sqlx::query(
        "INSERT INTO documents (id, title, body, status, version, author_id, published_version, \
                                published_title, published_body, verify_by) \
         SELECT unnest($1::uuid[]), 'Benchmark document', 'Body', 'APPROVED', 3, 'bench-author', \
                3, 'Benchmark document', 'Body', now() + interval '1 day'",
    )
    .bind(&docs)
    .execute(&env.pg)
    .await?;
    Ok(docs)
}

/// Sets `docs` due `secs` seconds from now.
async fn fall_due(env: &BenchEnv, docs: &[Uuid], secs: f64) -> anyhow::Result<()> {
    sqlx::query(
        "UPDATE documents SET verify_by = now() + make_interval(secs => $2) WHERE id = ANY($1)",
    )
    .bind(docs)
    .bind(secs)
    .execute(&env.pg)
    .await?;
    Ok(())
}

/// Waits for the events of `docs`, then withdraws their re-verifications and empties the
/// queue (the events and the approvals' are there).
async fn settle(env: &BenchEnv, arrivals: &Arrivals, docs: &[Uuid]) -> anyhow::Result<()> {
    arrivals.await_count(docs.len(), DUE).await?;
    sqlx::query(
        "UPDATE reviews SET status = 'WITHDRAWN', decided_by = 'bench-park', decided_at = now() \
         WHERE document_id = ANY($1) AND status = 'PENDING'",
    )
    .bind(docs)
    .execute(&env.pg)
    .await?;
    env.await_drained().await?;
    env.purge_queue().await
}

/// A lag round: `n` documents due a second from now; each event's time from `verify_by`,
/// and the seconds until the last.
async fn lag_round(env: &BenchEnv, n: usize) -> anyhow::Result<(Figures, f64)> {
    let arrivals = env.listen_by(DUE, "document_id").await?;
    let docs = make_published(env, n).await?;
    // Taken before the statement that sets the date: a round is timed from no later.
    let due = Instant::now() + Duration::from_secs(1);
    fall_due(env, &docs, 1.0).await?;
    settle(env, &arrivals, &docs).await?;
    let (f, last) = arrivals.lags(&docs, due, DUE)?;
    arrivals.close().await?;
    Ok((f, last.as_secs_f64()))
}

/// Approvals at 16 at once, with `n` documents falling due as they start (none: `n` 0).
async fn approve_round(env: &BenchEnv, svc: &Service, n: usize) -> anyhow::Result<Figures> {
    let arrivals = env.listen_by(DUE, "document_id").await?;
    let (docs, reviews) = (
        make_published(env, n).await?,
        env.make_pending(sizes().2).await?,
    );
    env.purge_queue().await?;
    fall_due(env, &docs, 0.0).await?;
    let f = approve_each(env, svc, 16, reviews).await?;
    anyhow::ensure!(f.errors == 0, "{} approvals failed", f.errors);
    settle(env, &arrivals, &docs).await?;
    arrivals.close().await?;
    Ok(f)
}

/// The rows; returns (seconds from `verify_by` to the last event, median round; the
/// approve p50 with the scheduler opening re-verifications ÷ without).
pub async fn reverify_rows(report: &mut Report, env: &BenchEnv) -> anyhow::Result<(f64, f64)> {
    let (quiet, due, approvals) = sizes();
    let svc = env.spawn_service("reverify", &tick()).await?;
    let started = Instant::now();
    make_published(env, quiet).await?;
    sqlx::query("ANALYZE documents").execute(&env.pg).await?;
    let seeded = started.elapsed().as_secs_f64();
    let lasts = Arc::new(Mutex::new(Vec::new()));
    let noted = lasts.clone();
    let lag = rounds(|| {
        let noted = noted.clone();
        async move {
            let (f, last) = lag_round(env, due).await?;
            noted.lock().unwrap().push(last);
            Ok(f)
        }
    })
    .await?;
    let mut last: Vec<f64> = lasts.lock().unwrap().split_off(warm_ups());
    last.sort_by(|a, b| a.total_cmp(b));
    let last = last[last.len() / 2];
    let every = &tick()[0].1;
    let total = quiet + due;
    let what = format!(
        "re-verification: {due} of {total} published documents fall due, verify_by to document.reverification_due on a queue (scheduler every {every} ms)"
    );
    report.row(&what, 1, &lag, None);
    report.note(format!(
        "re-verification: all {due} document.reverification_due events out {last:.2} s after their verify_by (median of the rounds; {quiet} documents written in {seeded:.1} s)"
    ));
    let svc = &svc;
    let measures: Vec<Measure> = vec![
        Box::new(move || Box::pin(approve_round(env, svc, 0))),
        Box::new(move || Box::pin(approve_round(env, svc, due))),
    ];
    let f = interleaved(measures).await?;
    let ratio = f[1].p50_ms / f[0].p50_ms;
    report.row(
        &format!("approve over HTTP, {approvals} a round, nothing falling due"),
        16,
        &f[0],
        None,
    );
    let what = format!(
        "approve over HTTP, {approvals} a round, while {due} documents fell due as it started"
    );
    report.row(
        &what,
        16,
        &f[1],
        Some(("p50 vs nothing falling due", ratio)),
    );
    report.goal(
        &format!("re-verification: {due} of {total} published documents fall due, until the last document.reverification_due is out"),
        format!("{last:.2} s"),
        "≤ 10 s",
        last <= 10.0,
    );
    report.goal(
        &format!("approve p50 while {due} documents fall due ÷ while none do, concurrency 16"),
        format!("{ratio:.2}x"),
        "≤ 1.1x",
        ratio <= 1.1,
    );
    Ok((last, ratio))
}
