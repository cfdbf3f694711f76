//! The document lifecycle's rows, on an instance of their own, each against the plain
//! operation it extends, in turns: (a) the approval of a revision (a document approved,
//! edited and submitted again) against a first approval; (b) the published revision of a
//! document whose next revision is in progress against a plain read of an approved
//! document; (c) a comment against an approval. The documents are made through the API
//! beforehand (`revise.rs`); only the approvals, reads and comments are timed.

use std::sync::Arc;

use reqwest::{Method, StatusCode};
use serde_json::json;
use uuid::Uuid;

use super::revise::{Stage, Writer};
use super::{approve_each, drive, interleaved, sized, BenchEnv, Figures, Measure, Report, Service};

/// The lifecycle rows' figures the goals use (0 for a row that did not run).
#[derive(Debug, Clone, Copy, Default)]
pub struct LifecycleFigures {
    /// p50 of a revision's approval ÷ p50 of a first approval.
    pub revision_c1: f64,
    pub revision_c16: f64,
    /// p50 of `GET /documents/{id}/published` (a revision in progress) ÷ p50 of
    /// `GET /documents/{id}` (an approved document).
    pub published_c1: f64,
    pub published_c16: f64,
    /// p50 of a comment ÷ p50 of an approval, at concurrency 1.
    pub comment_c1: f64,
    /// Approvals per second ÷ comments per second, at concurrency 16: what a comment costs
    /// the service under load, as a share of an approval.
    pub comment_cost_c16: f64,
}

/// The lifecycle rows, or the one `only` names (`revision`, `published`, `comment`).
pub async fn lifecycle_rows(
    report: &mut Report,
    env: &BenchEnv,
    only: Option<&str>,
) -> anyhow::Result<LifecycleFigures> {
    let mut out = LifecycleFigures::default();
    let runs = |row: &str| only.is_none_or(|o| o == row);
    let svc = env.spawn_service("lifecycle", &[]).await?;
    let w = env.writer(&svc);
    if runs("revision") {
        revision_rows(report, env, &svc, &w, &mut out).await?;
    }
    if runs("published") {
        published_rows(report, env, &w, &mut out).await?;
    }
    if runs("comment") {
        comment_rows(report, env, &svc, &w, &mut out).await?;
    }
    Ok(out)
}

/// Row (a): approvals of revisions (version 5 pending, 3 published) against first
/// approvals (version 2 pending), at concurrency 1 and 16.
async fn revision_rows(
    report: &mut Report,
    env: &BenchEnv,
    svc: &Service,
    w: &Writer,
    out: &mut LifecycleFigures,
) -> anyhow::Result<()> {
    for (conc, n) in sizes() {
        let first: Measure =
            Box::new(move || Box::pin(approvals(env, svc, w, Stage::Pending, conc, n)));
        let revision: Measure =
            Box::new(move || Box::pin(approvals(env, svc, w, Stage::RevisionPending, conc, n)));
        let [first, revision] = interleaved(vec![first, revision])
            .await?
            .try_into()
            .expect("two rows");
        report.row(
            "approve over HTTP, a first approval (version 2 pending)",
            conc,
            &first,
            None,
        );
        let ratio = revision.p50_ms / first.p50_ms;
        report.row(
            "approve over HTTP, a revision (approved, edited, submitted: version 5 pending, 3 published)",
            conc,
            &revision,
            Some(("p50 vs a first approval", ratio)),
        );
        match conc {
            1 => out.revision_c1 = ratio,
            _ => out.revision_c16 = ratio,
        }
    }
    Ok(())
}

/// `n` documents made at `stage` (untimed), then each one's review approved, `conc` at a
/// time; checks that each approval published its version and sent one event.
async fn approvals(
    env: &BenchEnv,
    svc: &Service,
    w: &Writer,
    stage: Stage,
    conc: usize,
    n: usize,
) -> anyhow::Result<Figures> {
    let made = env.documents_at(w, stage, n).await?;
    let (docs, reviews): (Vec<Uuid>, Vec<Uuid>) = made.into_iter().unzip();
    let f = approve_each(env, svc, conc, reviews).await?;
    anyhow::ensure!(f.errors == 0, "{} approvals failed ({stage:?})", f.errors);
    env.expect_delivered(n).await?;
    let version: i64 = if stage == Stage::Pending { 3 } else { 6 };
    let published: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM documents WHERE id = ANY($1) AND status = 'APPROVED' \
         AND version = $2 AND published_version = $2",
    )
    .bind(&docs)
    .bind(version)
    .fetch_one(&env.pg)
    .await?;
    anyhow::ensure!(
        published == n as i64,
        "{published} of {n} documents published at version {version} ({stage:?})"
    );
    Ok(f)
}

/// The concurrencies of the approval and comment rows, and the operations of a round.
fn sizes() -> [(usize, usize); 2] {
    [(1, sized(150, 4)), (16, sized(320, 16))]
}

/// The documents each read row reads.
fn readers() -> usize {
    sized(100, 4)
}

/// Row (b): `GET /documents/{id}/published` of documents whose revision is in progress
/// (version 4 in `DRAFT`, 3 published) against `GET /documents/{id}` of approved ones
/// (version 3), by a reviewer, over 100 documents of each, at concurrency 1 and 16.
async fn published_rows(
    report: &mut Report,
    env: &BenchEnv,
    w: &Writer,
    out: &mut LifecycleFigures,
) -> anyhow::Result<()> {
    let approved = env.documents_at(w, Stage::Approved, readers()).await?;
    let revising = env.documents_at(w, Stage::Revising, readers()).await?;
    let plain: Arc<Vec<String>> = Arc::new(
        approved
            .iter()
            .map(|(d, _)| format!("/api/v1/documents/{d}"))
            .collect(),
    );
    let published: Arc<Vec<String>> = Arc::new(
        revising
            .iter()
            .map(|(d, _)| format!("/api/v1/documents/{d}/published"))
            .collect(),
    );
    for (conc, calls) in [(1, sized(300, 10)), (16, sized(1_600, 32))] {
        let (p, q) = (plain.clone(), published.clone());
        let get: Measure = Box::new(move || Box::pin(reads(w, p.clone(), false, conc, calls)));
        let publ: Measure = Box::new(move || Box::pin(reads(w, q.clone(), true, conc, calls)));
        let [get, publ] = interleaved(vec![get, publ])
            .await?
            .try_into()
            .expect("two rows");
        report.row(
            "GET /api/v1/documents/{id}, approved (version 3)",
            conc,
            &get,
            None,
        );
        let ratio = publ.p50_ms / get.p50_ms;
        report.row(
            "GET /api/v1/documents/{id}/published, a revision in progress (version 4 draft, 3 published)",
            conc,
            &publ,
            Some(("p50 vs GET of an approved document", ratio)),
        );
        match conc {
            1 => out.published_c1 = ratio,
            _ => out.published_c16 = ratio,
        }
    }
    Ok(())
}

/// `calls` GETs over `paths` in turn; each must answer 200 with version 3 (and, for the
/// published revision, the working copy at version 4).
async fn reads(
    w: &Writer,
    paths: Arc<Vec<String>>,
    published: bool,
    conc: usize,
    calls: usize,
) -> anyhow::Result<Figures> {
    let who = w.reviewer.clone();
    let f = drive(conc, calls, move |i| {
        let (who, paths) = (who.clone(), paths.clone());
        async move {
            let (status, body) = who.get(&paths[i % paths.len()]).await?;
            let working = !published || body["working_version"] == 4;
            anyhow::Ok(status == StatusCode::OK && body["version"] == 3 && working)
        }
    })
    .await?;
    anyhow::ensure!(
        f.errors == 0,
        "{} reads failed (published: {published})",
        f.errors
    );
    Ok(f)
}

/// Row (c): a reviewer's comment on a pending review's document against an approval of a
/// pending review, at concurrency 1 and 16. Both on documents pending a first review.
async fn comment_rows(
    report: &mut Report,
    env: &BenchEnv,
    svc: &Service,
    w: &Writer,
    out: &mut LifecycleFigures,
) -> anyhow::Result<()> {
    for (conc, n) in sizes() {
        let approve: Measure =
            Box::new(move || Box::pin(approvals(env, svc, w, Stage::Pending, conc, n)));
        let comment: Measure = Box::new(move || Box::pin(comments(env, svc, w, conc, n)));
        let [approve, comment] = interleaved(vec![approve, comment])
            .await?
            .try_into()
            .expect("two rows");
        report.row(
            "approve over HTTP (the comment rows' baseline)",
            conc,
            &approve,
            None,
        );
        let ratio = comment.p50_ms / approve.p50_ms;
        report.row(
            "POST /api/v1/documents/{id}/comments on a pending review",
            conc,
            &comment,
            Some(("p50 vs approve", ratio)),
        );
        match conc {
            1 => out.comment_c1 = ratio,
            _ => {
                let cost = approve.ops_per_sec / comment.ops_per_sec;
                report.ratio("approvals per second ÷ comments per second at 16", cost);
                out.comment_cost_c16 = cost;
            }
        }
    }
    Ok(())
}

/// `n` pending documents (untimed), each commented on once, on its review, `conc` at a
/// time; the reviews are approved afterwards, untimed, so that none stays pending.
async fn comments(
    env: &BenchEnv,
    svc: &Service,
    w: &Writer,
    conc: usize,
    n: usize,
) -> anyhow::Result<Figures> {
    let made = Arc::new(env.documents_at(w, Stage::Pending, n).await?);
    let (who, list) = (w.reviewer.clone(), made.clone());
    let f = drive(conc, n, move |i| {
        let (who, list) = (who.clone(), list.clone());
        async move {
            let (doc, review) = list[i];
            let body = json!({"body": "Checked the figures: they add up.", "review_id": review});
            let path = format!("/api/v1/documents/{doc}/comments");
            let (status, reply) = who.send(Method::POST, &path, &body).await?;
            anyhow::Ok(status == StatusCode::CREATED && reply["seq"] == 1)
        }
    })
    .await?;
    anyhow::ensure!(f.errors == 0, "{} comments failed", f.errors);
    let reviews = made.iter().map(|(_, r)| *r).collect();
    let rest = approve_each(env, svc, 16, reviews).await?;
    anyhow::ensure!(
        rest.errors == 0,
        "{} approvals of commented reviews failed",
        rest.errors
    );
    // One document.commented and one document.approved each.
    env.expect_delivered(2 * n).await?;
    Ok(f)
}
