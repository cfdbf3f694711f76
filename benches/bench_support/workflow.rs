//! The review workflow's rows: an approval under a policy of two approvals against two of
//! the built-in policy, and a claim (with its approval, and alone) against an approval.
//! Policies and claims are written through the service's HTTP API, as an admin and a
//! reviewer would.

use std::sync::Arc;

use kh_review::web::auth::Role;
use serde_json::json;

use super::caller::Caller;
use super::overdue::{overdue_row, sweep};
use super::queue::queue_rows;
use super::{approve_each, drive, interleaved, sized, BenchEnv, Figures, Measure, Report, Service};

/// The workflow rows' figures the goals use.
#[derive(Debug, Clone, Copy, Default)]
pub struct WorkflowFigures {
    /// p50 of a review's two votes under a 2-approval policy ÷ p50 of two default approvals.
    pub two_votes_c1: f64,
    pub two_votes_c16: f64,
    /// p50 of a claim and its approval ÷ p50 of an approval.
    pub claim_and_approve: f64,
    /// p50 of a claim ÷ p50 of an approval.
    pub claim_alone: f64,
    /// The largest p50 of a queue form at 10,000 pending ÷ the same at 100.
    pub queue_worst: f64,
    /// Seconds from the due date to the last of 1,000 review.overdue events (median round).
    pub overdue_all_secs: f64,
}

/// The workflow rows, or the one `only` names (`two`, `claim`, `queue`, `overdue`), each
/// on instances of their own.
pub async fn workflow_rows(
    report: &mut Report,
    env: &BenchEnv,
    only: Option<&str>,
) -> anyhow::Result<WorkflowFigures> {
    let mut out = WorkflowFigures::default();
    let runs = |row: &str| only.is_none_or(|o| o == row);
    let svc = env.spawn_service("workflow", &sweep()).await?;
    if runs("two") {
        two_approvals_rows(report, env, &svc, &mut out).await?;
    }
    if runs("claim") {
        claim_rows(report, env, &svc, &mut out).await?;
    }
    if runs("queue") {
        out.queue_worst = queue_rows(report, env, &svc).await?;
    }
    drop(svc);
    if runs("overdue") {
        out.overdue_all_secs = overdue_row(report, env).await?;
    }
    Ok(out)
}

/// Row (a): each review approved twice, by two reviewers, under a policy of two approvals,
/// against two reviews approved once each under the built-in policy.
pub async fn two_approvals_rows(
    report: &mut Report,
    env: &BenchEnv,
    svc: &Service,
    out: &mut WorkflowFigures,
) -> anyhow::Result<()> {
    let admin = env.caller(svc, "bench-admin", Role::Admin);
    let stages = json!({"stages": [{"name": "review", "required_approvals": 2}]});
    let version = admin.put_policy("bench-two", &stages).await?;
    let first = env.caller(svc, "bench-reviewer", Role::Reviewer);
    let second = env.caller(svc, "bench-reviewer-2", Role::Reviewer);
    for (conc, n) in [(1, sized(100, 4)), (16, sized(320, 16))] {
        let (a, b, f) = (&first, &second, &first);
        let default: Measure = Box::new(move || Box::pin(two_defaults(env, f, conc, n)));
        let two: Measure = Box::new(move || Box::pin(two_votes(env, a, b, version, conc, n)));
        let [default, two] = interleaved(vec![default, two])
            .await?
            .try_into()
            .expect("two rows");
        report.row(
            "two approvals of two reviews, built-in policy (1 approval)",
            conc,
            &default,
            None,
        );
        let ratio = two.p50_ms / default.p50_ms;
        report.row(
            "two approvals of one review by two reviewers, policy of 2 approvals",
            conc,
            &two,
            Some(("p50 vs two built-in approvals", ratio)),
        );
        match conc {
            1 => out.two_votes_c1 = ratio,
            _ => out.two_votes_c16 = ratio,
        }
    }
    Ok(())
}

async fn two_defaults(
    env: &BenchEnv,
    who: &Caller,
    conc: usize,
    n: usize,
) -> anyhow::Result<Figures> {
    let reviews = Arc::new(env.make_pending(2 * n).await?);
    env.purge_queue().await?;
    let who = who.clone();
    let f = drive(conc, n, move |i| {
        let (who, reviews) = (who.clone(), reviews.clone());
        async move {
            anyhow::Ok(who.approve(reviews[2 * i]).await? && who.approve(reviews[2 * i + 1]).await?)
        }
    })
    .await?;
    anyhow::ensure!(f.errors == 0, "{} pairs of approvals failed", f.errors);
    env.expect_delivered(2 * n).await?;
    Ok(f)
}

async fn two_votes(
    env: &BenchEnv,
    first: &Caller,
    second: &Caller,
    version: i32,
    conc: usize,
    n: usize,
) -> anyhow::Result<Figures> {
    let reviews = env.make_pending_under(n, "bench-two", version).await?;
    env.purge_queue().await?;
    let list = Arc::new(reviews.clone());
    let (a, b) = (first.clone(), second.clone());
    let f = drive(conc, n, move |i| {
        let (a, b, list) = (a.clone(), b.clone(), list.clone());
        async move { anyhow::Ok(a.approve(list[i]).await? && b.approve(list[i]).await?) }
    })
    .await?;
    anyhow::ensure!(f.errors == 0, "{} two-vote approvals failed", f.errors);
    // One vote, one event: the first records an approval, the second decides.
    env.expect_delivered(2 * n).await?;
    let approved: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM reviews WHERE id = ANY($1) AND status = 'APPROVED'",
    )
    .bind(&reviews)
    .fetch_one(&env.pg)
    .await?;
    anyhow::ensure!(
        approved == n as i64,
        "{approved} of {n} reviews approved after two votes each"
    );
    Ok(f)
}

/// Row (b): a claim and its approval, and a claim alone, against an approval alone.
pub async fn claim_rows(
    report: &mut Report,
    env: &BenchEnv,
    svc: &Service,
    out: &mut WorkflowFigures,
) -> anyhow::Result<()> {
    let who = env.caller(svc, "bench-reviewer", Role::Reviewer);
    let n = sized(150, 5);
    let w = &who;
    let approve: Measure = Box::new(move || Box::pin(claim_load(env, svc, w, n, false, true)));
    let both: Measure = Box::new(move || Box::pin(claim_load(env, svc, w, n, true, true)));
    let claim: Measure = Box::new(move || Box::pin(claim_load(env, svc, w, n, true, false)));
    let [approve, both, claim] = interleaved(vec![approve, both, claim])
        .await?
        .try_into()
        .expect("three rows");
    report.row(
        "approve over HTTP (the claim rows' baseline)",
        1,
        &approve,
        None,
    );
    out.claim_and_approve = both.p50_ms / approve.p50_ms;
    report.row(
        "claim, then approve, over HTTP",
        1,
        &both,
        Some(("p50 vs approve alone", out.claim_and_approve)),
    );
    out.claim_alone = claim.p50_ms / approve.p50_ms;
    report.row(
        "claim alone over HTTP",
        1,
        &claim,
        Some(("p50 vs approve alone", out.claim_alone)),
    );
    Ok(())
}

/// `n` pending reviews, each claimed and/or approved at concurrency 1; claimed reviews
/// left unapproved are approved afterwards, untimed, so that none stays pending.
async fn claim_load(
    env: &BenchEnv,
    svc: &Service,
    who: &Caller,
    n: usize,
    claim: bool,
    approve: bool,
) -> anyhow::Result<Figures> {
    let reviews = env.make_pending(n).await?;
    env.purge_queue().await?;
    let (list, who) = (Arc::new(reviews.clone()), who.clone());
    let f = drive(1, n, move |i| {
        let (who, list) = (who.clone(), list.clone());
        async move {
            let claimed = !claim || who.claim(list[i]).await?;
            anyhow::Ok(claimed && (!approve || who.approve(list[i]).await?))
        }
    })
    .await?;
    anyhow::ensure!(f.errors == 0, "{} claims or approvals failed", f.errors);
    if !approve {
        let rest = approve_each(env, svc, 16, reviews).await?;
        anyhow::ensure!(
            rest.errors == 0,
            "{} approvals of claimed reviews failed",
            rest.errors
        );
    }
    env.expect_delivered(n).await?;
    Ok(f)
}
