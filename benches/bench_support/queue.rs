//! Row (c): the review queue (its three forms: commit order, `eligible=me`, `order=due`)
//! with 10,000 pending reviews, against the same with 100. One in ten is claimed by
//! another reviewer (through the API), one in ten is overdue (already notified) and one in
//! ten due later. Both sizes live in one database: the 9,900 reviews beyond the first 100
//! are parked (withdrawn, then vacuumed) while the small queue is measured, and pending
//! again for the large one, so that the rows can be measured in turns.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use kh_review::web::auth::Role;
use uuid::Uuid;

use super::caller::Caller;
use super::{drive, interleaved, sized, BenchEnv, Figures, Measure, Report, Service};

/// The pending reviews of the small queue and of the large one, and the calls a round.
fn sizes() -> (usize, usize, usize) {
    sized((100, 10_000, 200), (10, 40, 10))
}
const FORMS: [(&str, &str); 3] = [
    ("commit order", "/api/v1/reviews"),
    ("eligible=me", "/api/v1/reviews?eligible=me"),
    ("order=due", "/api/v1/reviews?order=due"),
];

/// The reviews beyond the small queue, pending or parked.
struct Extra {
    ids: Vec<Uuid>,
    parked: AtomicBool,
}

impl Extra {
    async fn set_parked(&self, env: &BenchEnv, park: bool) -> anyhow::Result<()> {
        if self.parked.load(Ordering::Relaxed) == park {
            return Ok(());
        }
        let sql = if park {
            "UPDATE reviews SET status = 'WITHDRAWN', decided_by = 'bench-park', decided_at = now() \
             WHERE id = ANY($1)"
        } else {
            "UPDATE reviews SET status = 'PENDING', decided_by = NULL, decided_at = NULL \
             WHERE id = ANY($1)"
        };
        sqlx::query(sql).bind(&self.ids).execute(&env.pg).await?;
        // The dead versions would otherwise be walked past by every read of the small queue.
        sqlx::query("VACUUM ANALYZE reviews")
            .execute(&env.pg)
            .await?;
        self.parked.store(park, Ordering::Relaxed);
        Ok(())
    }
}

/// One in ten claimed by `claimer`, one in ten overdue (notified), one in ten due in a day.
async fn shape(env: &BenchEnv, claimer: &Caller, reviews: &[Uuid]) -> anyhow::Result<()> {
    let pick = |k: usize| -> Vec<Uuid> {
        reviews
            .iter()
            .enumerate()
            .filter(|(i, _)| i % 10 == k)
            .map(|(_, r)| *r)
            .collect()
    };
    let claimed = Arc::new(pick(3));
    let (c, list) = (claimer.clone(), claimed.clone());
    let f = drive(16, claimed.len(), move |i| {
        let (c, list) = (c.clone(), list.clone());
        async move { c.claim(list[i]).await }
    })
    .await?;
    anyhow::ensure!(f.errors == 0, "{} claims failed", f.errors);
    sqlx::query(
        "UPDATE reviews SET due_at = now() - interval '1 hour', \
                            overdue_notified_at = now() - interval '59 minutes' \
         WHERE id = ANY($1)",
    )
    .bind(pick(5))
    .execute(&env.pg)
    .await?;
    sqlx::query("UPDATE reviews SET due_at = now() + interval '1 day' WHERE id = ANY($1)")
        .bind(pick(7))
        .execute(&env.pg)
        .await?;
    Ok(())
}

fn measure<'a>(
    env: &'a BenchEnv,
    extra: &'a Extra,
    who: &'a Caller,
    path: &'static str,
    large: bool,
) -> Measure<'a> {
    Box::new(move || {
        Box::pin(async move {
            extra.set_parked(env, !large).await?;
            let who = who.clone();
            drive(1, sizes().2, move |_| {
                let who = who.clone();
                async move {
                    let (status, body) = who.get(path).await?;
                    let items = body["items"].as_array().map_or(0, |a| a.len());
                    anyhow::Ok(status == reqwest::StatusCode::OK && items > 0)
                }
            })
            .await
        })
    })
}

/// The rows; returns the largest p50 ratio of a form, 10,000 pending against 100.
pub async fn queue_rows(report: &mut Report, env: &BenchEnv, svc: &Service) -> anyhow::Result<f64> {
    // The earlier rows leave reviews pending (tens of thousands in a whole `make bench`):
    // they are set aside, as the large queue's extra reviews are, so that the small queue
    // holds the small queue's reviews alone.
    sqlx::query(
        "UPDATE reviews SET status = 'WITHDRAWN', decided_by = 'bench-earlier-rows', \
         decided_at = now() WHERE status = 'PENDING'",
    )
    .execute(&env.pg)
    .await?;
    sqlx::query("VACUUM ANALYZE reviews")
        .execute(&env.pg)
        .await?;
    let (small_n, large_n, _) = sizes();
    let small = env.make_pending(small_n).await?;
    let large = env.make_pending(large_n - small_n).await?;
    let claimer = env.caller(svc, "bench-claimer", Role::Reviewer);
    shape(env, &claimer, &small).await?;
    shape(env, &claimer, &large).await?;
    let extra = Extra {
        ids: large,
        parked: AtomicBool::new(false),
    };
    let who = env.caller(svc, "bench-reviewer", Role::Reviewer);
    let mut measures = Vec::new();
    for large in [false, true] {
        for (_, path) in FORMS {
            measures.push(measure(env, &extra, &who, path, large));
        }
    }
    let figures: Vec<Figures> = interleaved(measures).await?;
    let (at_small, at_large) = figures.split_at(FORMS.len());
    let mut worst: f64 = 0.0;
    for (((what, path), s), l) in FORMS.iter().zip(at_small).zip(at_large) {
        anyhow::ensure!(
            s.errors == 0 && l.errors == 0,
            "queue {what}: a call failed"
        );
        report.row(&format!("queue GET {path}, {small_n} pending"), 1, s, None);
        let ratio = l.p50_ms / s.p50_ms;
        report.row(
            &format!("queue GET {path}, {large_n} pending (1 in 10 claimed, 1 in 10 overdue)"),
            1,
            l,
            Some((&format!("p50 vs {small_n} pending"), ratio)),
        );
        worst = worst.max(ratio);
    }
    // The rows after this one find the queue as it was: park the reviews made here.
    extra.set_parked(env, true).await?;
    let small = Extra {
        ids: small,
        parked: AtomicBool::new(false),
    };
    small.set_parked(env, true).await?;
    Ok(worst)
}
