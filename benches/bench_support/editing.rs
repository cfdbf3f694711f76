//! Editing together's rows, on an instance of their own: (d) an edit that carries
//! `If-Match` and the `Lease-Token` of its author's lease against a plain edit, each of a
//! draft of its own, at concurrency 1 and 16 (the lease is taken beforehand, untimed; the
//! edit reads the lease row under the document's row lock); (e) `GET /documents/{id}/diff`
//! of a revision whose body is of the largest size (200,000 characters, 1% of its lines
//! changed) against `GET /documents/{id}` of the same document; (f) the line diff itself
//! (`domain::diff::lines`, in this process) of two 2 MiB texts with 1% of their lines
//! changed, against two equal ones.

use std::sync::{Arc, Mutex};

use kh_review::domain::diff;
use reqwest::{Method, StatusCode};
use serde_json::json;
use uuid::Uuid;

use super::caller::Caller;
use super::revise::Writer;
use super::{drive, interleaved, sized, BenchEnv, Figures, Measure, Report, Service};

/// The editing rows' ratios, for the goals.
#[derive(Debug, Clone, Copy, Default)]
pub struct EditingFigures {
    /// p50 of an edit with If-Match and a lease ÷ p50 of a plain edit, at 1 and 16.
    pub conditional_c1: f64,
    pub conditional_c16: f64,
    /// p50 of the diff of a largest body, in ms, and its ratio to a GET of it.
    pub diff_http_p50: f64,
    pub diff_http_vs_get: f64,
    /// p50 of the line diff of 2 MiB texts with 1% changed, in ms.
    pub diff_2mib_p50: f64,
}

pub async fn editing_rows(report: &mut Report, env: &BenchEnv) -> anyhow::Result<EditingFigures> {
    let mut out = EditingFigures::default();
    let svc = env.spawn_service("editing", &[]).await?;
    let w = env.writer(&svc);
    let a = &w.author;
    for (conc, n) in [(1, sized(200, 4)), (16, sized(480, 16))] {
        let plain: Measure = Box::new(move || Box::pin(edits(env, a, false, conc, n)));
        let held: Measure = Box::new(move || Box::pin(edits(env, a, true, conc, n)));
        let [plain, held] = interleaved(vec![plain, held])
            .await?
            .try_into()
            .expect("two rows");
        report.row(
            "PUT /api/v1/documents/{id}, a plain edit of a draft",
            conc,
            &plain,
            None,
        );
        let ratio = held.p50_ms / plain.p50_ms;
        let what =
            "PUT /api/v1/documents/{id} with If-Match and the Lease-Token of the author's lease";
        report.row(what, conc, &held, Some(("p50 vs a plain edit", ratio)));
        match conc {
            1 => out.conditional_c1 = ratio,
            _ => out.conditional_c16 = ratio,
        }
    }
    diff_over_http(report, env, &svc, &w, &mut out).await?;
    diff_in_process(report, &mut out).await?;
    Ok(out)
}

/// `n` drafts of the author, made 16 at a time (untimed; with `held`, each leased by the
/// author: (document, lease token)).
async fn drafts(a: &Caller, held: bool, n: usize) -> anyhow::Result<Vec<(Uuid, Option<String>)>> {
    let made = Arc::new(Mutex::new(Vec::with_capacity(n)));
    let (a, out) = (a.clone(), made.clone());
    let f = drive(16, n, move |_| {
        let (a, out) = (a.clone(), out.clone());
        async move {
            let body = json!({"title": "Edited together", "body": "First words."});
            let (status, doc) = a.send(Method::POST, "/api/v1/documents", &body).await?;
            anyhow::ensure!(status == StatusCode::CREATED, "create: {status}");
            let id: Uuid = doc["id"].as_str().unwrap_or_default().parse()?;
            let token = match held {
                true => {
                    let path = format!("/api/v1/documents/{id}/lease");
                    let (s, l) = a.send(Method::POST, &path, &json!(null)).await?;
                    anyhow::ensure!(s == StatusCode::OK, "lease: {s} {l}");
                    l["token"].as_str().map(str::to_string)
                }
                false => None,
            };
            out.lock().unwrap().push((id, token));
            anyhow::Ok(true)
        }
    })
    .await?;
    anyhow::ensure!(f.errors == 0, "{} drafts not made", f.errors);
    let made = made.lock().unwrap().clone();
    Ok(made)
}

/// `n` drafts (untimed, see [`drafts`]), then each edited once, `conc` at a time, with
/// `If-Match` and its lease's token when `held`; each edit must answer 200 at version 2.
async fn edits(
    env: &BenchEnv,
    a: &Caller,
    held: bool,
    conc: usize,
    n: usize,
) -> anyhow::Result<Figures> {
    let docs = Arc::new(drafts(a, held, n).await?);
    sqlx::query("VACUUM ANALYZE documents, outbox, audit_log, locks")
        .execute(&env.pg)
        .await?;
    let a = a.clone();
    let f = drive(conc, n, move |i| {
        let (a, docs) = (a.clone(), docs.clone());
        async move {
            let (id, token) = &docs[i];
            let mut headers = Vec::new();
            if let Some(t) = token {
                headers.push(("If-Match", "\"1\"".to_string()));
                headers.push(("Lease-Token", t.clone()));
            }
            let path = format!("/api/v1/documents/{id}");
            let body = json!({"body": "Second words."});
            let (status, doc) = a.send_with(Method::PUT, &path, &body, &headers).await?;
            anyhow::Ok(status == StatusCode::OK && doc["version"] == 2)
        }
    })
    .await?;
    anyhow::ensure!(f.errors == 0, "{} edits failed (held: {held})", f.errors);
    Ok(f)
}

/// A body of about `chars` characters in lines of about 50, and the same with every
/// hundredth line changed.
fn bodies(chars: usize) -> (String, String) {
    let lines: Vec<String> = (0..chars / 50)
        .map(|i| format!("{i:>8} lorem ipsum dolor sit amet, consectetur."))
        .collect();
    let mut changed = lines.clone();
    for line in changed.iter_mut().step_by(100) {
        line.push_str(" Changed.");
    }
    (lines.join("\n"), changed.join("\n"))
}

/// A document of `body`, submitted and approved: published at version 3.
async fn published(env: &BenchEnv, w: &Writer, body: &str) -> anyhow::Result<Uuid> {
    let created = json!({"title": "A long runbook", "body": body});
    let (status, doc) = w
        .author
        .send(Method::POST, "/api/v1/documents", &created)
        .await?;
    anyhow::ensure!(status == StatusCode::CREATED, "create: {status} {doc}");
    let id: Uuid = doc["id"].as_str().unwrap_or_default().parse()?;
    let path = format!("/api/v1/documents/{id}/submit");
    let (status, sub) = w.author.send(Method::POST, &path, &json!({})).await?;
    anyhow::ensure!(status == StatusCode::CREATED, "submit: {status} {sub}");
    let review: Uuid = sub["review"]["id"].as_str().unwrap_or_default().parse()?;
    anyhow::ensure!(w.reviewer.approve(review).await?, "approve");
    env.expect_delivered(2).await?;
    Ok(id)
}

/// Row (e): the diff of a revision of the largest body (published, then edited: 1% of its
/// lines changed) against a GET of the same document, by a reviewer, at concurrency 1.
async fn diff_over_http(
    report: &mut Report,
    env: &BenchEnv,
    svc: &Service,
    w: &Writer,
    out: &mut EditingFigures,
) -> anyhow::Result<()> {
    let (old, new) = bodies(sized(199_000, 5_000));
    let doc = published(env, w, &old).await?;
    let path = format!("/api/v1/documents/{doc}");
    let (status, edited) = w
        .author
        .send(Method::PUT, &path, &json!({"body": new}))
        .await?;
    anyhow::ensure!(status == StatusCode::OK, "edit: {status} {edited}");
    let calls = sized(60, 3);
    let reader = env.caller(svc, "bench-reader", kh_review::web::auth::Role::Reviewer);
    let (r1, r2) = (reader.clone(), reader);
    let (p1, p2) = (path.clone(), format!("{path}/diff"));
    let get: Measure = Box::new(move || {
        let (r, p) = (r1.clone(), p1.clone());
        Box::pin(drive(1, calls, move |_| {
            let (r, p) = (r.clone(), p.clone());
            async move { Ok(r.get(&p).await?.0 == StatusCode::OK) }
        }))
    });
    let diff: Measure = Box::new(move || {
        let (r, p) = (r2.clone(), p2.clone());
        Box::pin(drive(1, calls, move |_| {
            let (r, p) = (r.clone(), p.clone());
            async move {
                let (status, d) = r.get(&p).await?;
                Ok(status == StatusCode::OK
                    && d["removed"].as_u64() == Some(d["added"].as_u64().unwrap_or(0))
                    && d["added"].as_u64() > Some(0))
            }
        }))
    });
    let [get, diff] = interleaved(vec![get, diff])
        .await?
        .try_into()
        .expect("two rows");
    let what = format!(
        "GET /api/v1/documents/{{id}}, a body of {} characters",
        new.chars().count()
    );
    report.row(&what, 1, &get, None);
    let ratio = diff.p50_ms / get.p50_ms;
    let what = "GET /api/v1/documents/{id}/diff of that body's revision (1% of its lines changed)";
    report.row(what, 1, &diff, Some(("p50 vs GET of the document", ratio)));
    out.diff_http_p50 = diff.p50_ms;
    out.diff_http_vs_get = ratio;
    Ok(())
}

/// Row (f): the line diff (with the word marks of its changed lines) of two 2 MiB texts, 1%
/// of their lines changed, against two equal 2 MiB texts, in this process.
async fn diff_in_process(report: &mut Report, out: &mut EditingFigures) -> anyhow::Result<()> {
    let (old, new) = bodies(sized(2 << 20, 20_000));
    let texts = Arc::new((old.clone(), new, old));
    let calls = sized(30, 2);
    let measure = |changed: bool| -> Measure<'static> {
        let texts = texts.clone();
        Box::new(move || {
            let texts = texts.clone();
            Box::pin(drive(1, calls, move |_| {
                let texts = texts.clone();
                async move {
                    let (a, b) = if changed {
                        (&texts.0, &texts.1)
                    } else {
                        (&texts.0, &texts.2)
                    };
                    let lines = diff::lines(a, b);
                    let (removed, added) = diff::counts(&lines);
                    Ok(if changed {
                        removed > 0 && removed == added
                    } else {
                        removed == 0 && added == 0
                    })
                }
            }))
        })
    };
    let [same, changed] = interleaved(vec![measure(false), measure(true)])
        .await?
        .try_into()
        .expect("two rows");
    let mib = texts.0.len() as f64 / (1 << 20) as f64;
    report.row(
        &format!("line diff of two equal texts of {mib:.1} MiB, in process"),
        1,
        &same,
        None,
    );
    let ratio = changed.p50_ms / same.p50_ms;
    let what =
        format!("line diff of two texts of {mib:.1} MiB, 1% of the lines changed, in process");
    report.row(&what, 1, &changed, Some(("p50 vs two equal texts", ratio)));
    out.diff_2mib_p50 = changed.p50_ms;
    Ok(())
}
