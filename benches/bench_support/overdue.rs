//! Row (d): the overdue sweeper at 100,000 pending reviews, 1,000 of them due: the time
//! from their due date to each one's `review.overdue` event on a queue, and until the last.
//! The 99,000 others are due in a day (in PostgreSQL only: nothing reads their projection);
//! each round's 1,000 fall due a second after they are written, on an instance of its own
//! that sweeps as configured (`review.overdue_sweep_ms`), and are parked (withdrawn)
//! after it, so every round sweeps the same queue.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kh_review::web::auth::Role;
use serde_json::json;
use uuid::Uuid;

use super::{rounds, sized, warm_ups, BenchEnv, Figures, Report};

/// The pending reviews, and those of them that fall due in a round.
fn sizes() -> (usize, usize) {
    sized((100_000, 1_000), (100, 10))
}

/// The overdue sweep at its default interval, 5 s (the other instances run it once an
/// hour); every half second in the smoke run.
pub fn sweep() -> [(&'static str, String); 1] {
    let every = sized("5000", "500");
    [("APP__REVIEW__OVERDUE_SWEEP_MS", every.to_string())]
}

/// The row; returns the seconds from the due date to the last event (median round).
pub async fn overdue_row(report: &mut Report, env: &BenchEnv) -> anyhow::Result<f64> {
    let (pending, due) = sizes();
    let svc = env.spawn_service("overdue", &sweep()).await?;
    let admin = env.caller(&svc, "bench-admin", Role::Admin);
    let policy =
        json!({"stages": [{"name": "review", "required_approvals": 1}], "due_after_secs": 86400});
    let version = admin.put_policy("bench-due", &policy).await?;
    let started = Instant::now();
    let (_, later) = env
        .make_pending_pg(pending - due, "bench-due", version)
        .await?;
    sqlx::query("UPDATE reviews SET due_at = now() + interval '1 day' WHERE id = ANY($1)")
        .bind(&later)
        .execute(&env.pg)
        .await?;
    sqlx::query("ANALYZE").execute(&env.pg).await?;
    let seeded = started.elapsed().as_secs_f64();
    let all_out = Arc::new(Mutex::new(Vec::new()));
    let noted = all_out.clone();
    let f = rounds(|| {
        let noted = noted.clone();
        async move {
            let (f, last) = sweep_round(env, version, due).await?;
            noted.lock().unwrap().push(last);
            Ok(f)
        }
    })
    .await?;
    drop(svc);
    park(env, &later).await?;
    // The warm-up round's figure is left out, as in the figures themselves.
    let mut last: Vec<f64> = all_out.lock().unwrap().split_off(warm_ups());
    last.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let last_out = last[last.len() / 2];
    let every = &sweep()[0].1;
    report.row(
        &format!(
            "overdue sweep: {due} of {pending} pending reviews fall due, due date to review.overdue on a queue (sweep every {every} ms)"
        ),
        1,
        &f,
        None,
    );
    report.note(format!(
        "overdue sweep: all {due} review.overdue events out {:.2} s after their due date \
         (median of the rounds; {} pending reviews written in {seeded:.1} s)",
        last_out, pending
    ));
    Ok(last_out)
}

/// `n` reviews (1,000) due a second from now; waits for their events. Returns the figures of
/// each event's time from the due date, and the seconds until the last.
async fn sweep_round(env: &BenchEnv, version: i32, n: usize) -> anyhow::Result<(Figures, f64)> {
    let arrivals = env.listen_to("review.overdue").await?;
    let reviews = env.make_pending_under(n, "bench-due", version).await?;
    env.purge_queue().await?;
    // Taken before the statement that sets the due date: a round is timed from no later.
    let due = Instant::now() + Duration::from_secs(1);
    sqlx::query("UPDATE reviews SET due_at = now() + interval '1 second' WHERE id = ANY($1)")
        .bind(&reviews)
        .execute(&env.pg)
        .await?;
    arrivals.await_count(n, "review.overdue").await?;
    let (f, last) = arrivals.lags(&reviews, due, "review.overdue")?;
    arrivals.close().await?;
    // Exactly one event each on the benchmark's queue, and the outbox drained.
    env.expect_delivered(n).await?;
    park(env, &reviews).await?;
    Ok((f, last.as_secs_f64()))
}

async fn park(env: &BenchEnv, reviews: &[Uuid]) -> anyhow::Result<()> {
    sqlx::query(
        "UPDATE reviews SET status = 'WITHDRAWN', decided_by = 'bench-park', decided_at = now() \
         WHERE id = ANY($1)",
    )
    .bind(reviews)
    .execute(&env.pg)
    .await?;
    Ok(())
}
