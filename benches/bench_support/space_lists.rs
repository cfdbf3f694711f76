//! Rows (space lists): the review queue of a reviewer in 1 of 100 spaces, the title search
//! of one space, and approvals, at 1,000 documents in the 100 spaces, again at 100,000 and
//! at 1,000,000; each larger row with its p50 over the same row's at 1,000. The member (a
//! reviewer and an author of its one space, by membership) has 30 pending documents of its
//! own space at every size, titled "Review policy n", so that each list it reads is a full
//! page at any size; what grows is every space, its own included (10, 1,000 then 10,000
//! documents each: drafts, pending and approved). The documents are loaded by `COPY`
//! (`copy_load.rs`). The sizes are measured one after the other (the documents cannot be
//! set aside between rounds as the queue rows' reviews are): the rows of one size in turns.
//! The approvals are of the default space's pending reviews: what grows for them is the
//! tables and their indexes.
//!
//! The last search (`q=zz`: no trigram, and no title holds it) is the worst case of a short
//! query: the member's space read newest first to its end.

use std::sync::Arc;
use std::time::Instant;

use kh_review::web::auth::sign;
use uuid::Uuid;

use super::copy_load::load_documents;
use super::data::set_current_reviews;
use super::{approve_load, drive, interleaved, sized, BenchEnv, Figures, Measure, Report, Service};

/// The spaces, and the member's own.
const SPACES: usize = 100;
const HOME: &str = "bench-space-7";
const MEMBER: &str = "bench-space-member";
/// The member's space's pending documents that both sizes hold.
const HOME_PENDING: usize = 30;

/// The lists measured: (what, path).
const LISTS: [(&str, &str); 4] = [
    (
        "queue GET /api/v1/reviews, a reviewer in 1 of 100 spaces",
        "/api/v1/reviews",
    ),
    (
        "queue GET /api/v1/reviews?order=due, a reviewer in 1 of 100 spaces",
        "/api/v1/reviews?order=due",
    ),
    (
        "title search GET /api/v1/documents?space=&q=policy (trigrams)",
        "/api/v1/documents?space=bench-space-7&q=policy",
    ),
    (
        "title search GET /api/v1/documents?space=&q=zz (no trigram, no match: the space read to its end)",
        "/api/v1/documents?space=bench-space-7&q=zz",
    ),
];

/// Documents in the spaces at the three sizes, and the calls a round.
fn sizes() -> ([usize; 3], usize) {
    sized(([1_000, 100_000, 1_000_000], 200), ([100, 300, 600], 10))
}

/// The 100 spaces, the member's roles in its own, and its pending documents there.
async fn spaces(env: &BenchEnv) -> anyhow::Result<()> {
    let mut tx = env.pg.begin().await?;
    sqlx::query(
        "INSERT INTO spaces (key, name) SELECT 'bench-space-' || i, 'Space ' || i \
         FROM generate_series(0, $1 - 1) AS i",
    )
    .bind(SPACES as i64)
    .execute(&mut *tx)
    .await?;
    sqlx::query(
        "INSERT INTO space_members (space_id, subject, roles) \
         VALUES ($1, 'user:' || $2, '{author,reviewer}')",
    )
    .bind(HOME)
    .bind(MEMBER)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    let docs: Vec<Uuid> = (0..HOME_PENDING).map(|_| Uuid::now_v7()).collect();
    let reviews: Vec<Uuid> = (0..HOME_PENDING).map(|_| Uuid::now_v7()).collect();
    let mut tx = env.pg.begin().await?;
    sqlx::query(
        "INSERT INTO documents (id, title, body, status, version, author_id, space_id) \
         SELECT d, 'Review policy ' || n, 'Body', 'PENDING_REVIEW', 2, 'bench-space-author', $2 \
         FROM unnest($1::uuid[]) WITH ORDINALITY AS t(d, n)",
    )
    .bind(&docs)
    .bind(HOME)
    .execute(&mut *tx)
    .await?;
    insert_reviews(&mut tx, &reviews, &docs).await?;
    tx.commit().await?;
    Ok(())
}

/// A pending review of each document, its current one, two in three due within a few days.
async fn insert_reviews(
    tx: &mut sqlx::PgConnection,
    reviews: &[Uuid],
    docs: &[Uuid],
) -> anyhow::Result<()> {
    sqlx::query(
        "INSERT INTO reviews (id, document_id, status, document_version, submitted_by, due_at) \
         SELECT r, d, 'PENDING', 2, 'bench-space-author', \
                CASE WHEN g % 3 <> 0 THEN now() + g * interval '1 minute' END \
         FROM unnest($1::uuid[], $2::uuid[]) WITH ORDINALITY AS t(r, d, g)",
    )
    .bind(reviews)
    .bind(docs)
    .execute(&mut *tx)
    .await?;
    set_current_reviews(tx, reviews, docs).await
}

/// GETs `path` as the member: a full page (at least `HOME_PENDING`'s worth of items is
/// there at either size) or, for the search that matches nothing, an empty one.
fn measure<'a>(env: &'a BenchEnv, svc: &'a Service, token: &'a str, path: &'a str) -> Measure<'a> {
    let full = !path.ends_with("q=zz");
    Box::new(move || {
        let (client, url, token) = (
            env.http.clone(),
            Arc::new(format!("{}{path}", svc.base)),
            token.to_string(),
        );
        Box::pin(drive(1, sizes().1, move |_| {
            let (client, url, token) = (client.clone(), url.clone(), token.clone());
            async move {
                let r = client.get(url.as_str()).bearer_auth(&token).send().await?;
                let ok = r.status() == reqwest::StatusCode::OK;
                let body: serde_json::Value = r.json().await?;
                let items = body["items"].as_array().map_or(0, Vec::len);
                anyhow::Ok(ok && (items == 20) == full)
            }
        }))
    })
}

/// The lists at one size, and approvals at 1 at once (of reviews of the default space,
/// whose tables hold every space's rows), in turns.
async fn at_size(env: &BenchEnv, svc: &Service, token: &str) -> anyhow::Result<Vec<Figures>> {
    let mut measures: Vec<Measure> = LISTS
        .iter()
        .map(|(_, path)| measure(env, svc, token, path))
        .collect();
    measures.push(Box::new(move || {
        Box::pin(approve_load(env, svc, 1, sizes().1))
    }));
    interleaved(measures).await
}

/// The rows, and their goals: at the largest size over the smallest, the queue (the worse
/// of its two orders), the trigram search and the approval flat; the trigram search's p50
/// at 100,000 documents.
pub async fn space_list_rows(report: &mut Report, env: &BenchEnv) -> anyhow::Result<()> {
    let (sizes, _) = sizes();
    spaces(env).await?;
    load_documents(env, HOME_PENDING, sizes[0], SPACES).await?;
    let svc = env.spawn_service("space-lists", &[]).await?;
    let token = sign(&env.settings.auth.jwt_secret, MEMBER, &[], 3600);
    let mut at = vec![at_size(env, &svc, &token).await?];
    for pair in sizes.windows(2) {
        let started = Instant::now();
        load_documents(env, pair[0], pair[1], SPACES).await?;
        report.note(format!(
            "space lists: {} more documents loaded (COPY) in {:.1} s",
            pair[1] - pair[0],
            started.elapsed().as_secs_f64()
        ));
        at.push(at_size(env, &svc, &token).await?);
    }
    let what = |i: usize| {
        LISTS
            .get(i)
            .map_or("approve over HTTP, the default space", |l| l.0)
    };
    for (k, figures) in at.iter().enumerate() {
        for (i, f) in figures.iter().enumerate() {
            anyhow::ensure!(f.errors == 0, "{}: a call failed", what(i));
            let vs = format!("p50 vs {} documents", sizes[0]);
            let ratio = (k > 0).then(|| (vs.as_str(), f.p50_ms / at[0][i].p50_ms));
            report.row(&format!("{}, {} documents", what(i), sizes[k]), 1, f, ratio);
        }
    }
    let (first, last) = (&at[0], &at[2]);
    let ratio = |i: usize| last[i].p50_ms / first[i].p50_ms;
    let (small, large) = (sizes[0], sizes[2]);
    let x = |v: f64| format!("{v:.2}x");
    for (what, v) in [
        (
            format!(
                "review queue of a reviewer in 1 of {SPACES} spaces, the worse of its two orders"
            ),
            ratio(0).max(ratio(1)),
        ),
        ("title search of a space (trigrams)".to_string(), ratio(2)),
        ("approve at 1 at once".to_string(), ratio(4)),
    ] {
        report.goal(
            &format!("{what}, p50 at {large} documents ÷ at {small}"),
            x(v),
            "≤ 1.2x",
            v <= 1.2,
        );
    }
    let p50 = at[1][2].p50_ms;
    report.goal(
        &format!(
            "title search of a space (trigrams), p50 at {} documents in {SPACES} spaces",
            sizes[1]
        ),
        format!("{p50:.2} ms"),
        "≤ 10 ms",
        p50 <= 10.0,
    );
    Ok(())
}
