//! Rows (space lists): the review queue of a reviewer in 1 of 100 spaces, and the title
//! search of one space, at 1,000 documents in the 100 spaces and again at 100,000; each
//! 100,000 row with its p50 over the same row's at 1,000. The member (a reviewer and an
//! author of its one space, by membership) has 30 pending documents of its own space at
//! both sizes, titled "Review policy n", so that each list it reads is a full page at
//! either size; what grows is every space, its own included (10 then 1,000 documents
//! each: drafts, pending and approved). The documents are written by SQL, ten thousand a
//! statement. The two sizes are measured one after the other (the 99,000 more documents
//! cannot be set aside between rounds as the queue rows' reviews are): the rows of one size
//! in turns.
//!
//! The last search (`q=zz`: no trigram, and no title holds it) is the worst case of a short
//! query: the member's space read newest first to its end.

use std::sync::Arc;

use kh_review::web::auth::sign;
use uuid::Uuid;

use super::{drive, interleaved, sized, BenchEnv, Figures, Measure, Report, Service};

/// The spaces, and the member's own.
const SPACES: usize = 100;
const HOME: &str = "bench-space-7";
const MEMBER: &str = "bench-space-member";
/// The member's space's pending documents that both sizes hold.
const HOME_PENDING: usize = 30;

/// The words titles are made of: three of them and a number.
const WORDS: [&str; 40] = [
    "policy",
    "handbook",
    "onboarding",
    "travel",
    "expenses",
    "security",
    "incident",
    "runbook",
    "release",
    "notes",
    "quarterly",
    "report",
    "roadmap",
    "design",
    "review",
    "hiring",
    "benefits",
    "leave",
    "contract",
    "template",
    "guideline",
    "architecture",
    "database",
    "network",
    "budget",
    "forecast",
    "meeting",
    "minutes",
    "customer",
    "support",
    "legal",
    "compliance",
    "privacy",
    "retention",
    "backup",
    "deploy",
    "pipeline",
    "testing",
    "metrics",
    "dashboard",
];

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

/// Documents in the spaces at the small size and the large one, and the calls a round.
fn sizes() -> (usize, usize, usize) {
    sized((1_000, 100_000, 200), (100, 300, 10))
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
    insert_reviews(&mut tx, &reviews, &docs, None).await?;
    tx.commit().await?;
    Ok(())
}

/// Documents `from..to` of the spaces (their number decides their space, title and
/// status: one in twenty a draft, one in twenty pending, the rest approved).
async fn grow(env: &BenchEnv, from: usize, to: usize) -> anyhow::Result<()> {
    let words: Vec<String> = WORDS.iter().map(|w| w.to_string()).collect();
    for chunk in (from..to).collect::<Vec<_>>().chunks(10_000) {
        let nums: Vec<i64> = chunk.iter().map(|g| *g as i64).collect();
        let docs: Vec<Uuid> = chunk.iter().map(|_| Uuid::now_v7()).collect();
        let mut tx = env.pg.begin().await?;
        sqlx::query(
            "INSERT INTO documents (id, title, body, status, version, author_id, space_id) \
             SELECT d, initcap(w[1 + (g * 7) % 40] || ' ' || w[1 + (g * 13 + g / 40) % 40] || ' ' \
                               || w[1 + (g * 31 + g / 1600) % 40]) || ' ' || g, \
                    'Body', CASE (g / 100) % 20 WHEN 0 THEN 'DRAFT' WHEN 1 THEN 'PENDING_REVIEW' \
                                 ELSE 'APPROVED' END, 2, \
                    'bench-space-author-' || g % 50, 'bench-space-' || g % $3 \
             FROM unnest($1::uuid[], $2::int8[]) AS t(d, g), (SELECT $4::text[] AS w) AS v",
        )
        .bind(&docs)
        .bind(&nums)
        .bind(SPACES as i64)
        .bind(&words)
        .execute(&mut *tx)
        .await?;
        // Every document but the drafts submitted: pending, or approved.
        let submitted: Vec<(Uuid, i64)> = docs
            .iter()
            .zip(&nums)
            .filter(|(_, g)| (*g / 100) % 20 != 0)
            .map(|(d, g)| (*d, *g))
            .collect();
        let (docs, nums): (Vec<Uuid>, Vec<i64>) = submitted.into_iter().unzip();
        let reviews: Vec<Uuid> = docs.iter().map(|_| Uuid::now_v7()).collect();
        insert_reviews(&mut tx, &reviews, &docs, Some(&nums)).await?;
        tx.commit().await?;
    }
    sqlx::query("VACUUM ANALYZE documents")
        .execute(&env.pg)
        .await?;
    sqlx::query("VACUUM ANALYZE reviews")
        .execute(&env.pg)
        .await?;
    Ok(())
}

/// A review of each document, its current one: pending when its number says so (or
/// without numbers), else approved; two in three due within a few days.
async fn insert_reviews(
    tx: &mut sqlx::PgConnection,
    reviews: &[Uuid],
    docs: &[Uuid],
    nums: Option<&[i64]>,
) -> anyhow::Result<()> {
    let nums: Vec<i64> = match nums {
        Some(n) => n.to_vec(),
        None => (0..docs.len() as i64).map(|i| 100 + i).collect(),
    };
    sqlx::query(
        "INSERT INTO reviews (id, document_id, status, document_version, submitted_by, \
                              decided_by, decided_at, due_at) \
         SELECT r, d, CASE WHEN (g / 100) % 20 = 1 THEN 'PENDING' ELSE 'APPROVED' END, 2, \
                'bench-space-author', \
                CASE WHEN (g / 100) % 20 = 1 THEN NULL ELSE 'bench-reviewer' END, \
                CASE WHEN (g / 100) % 20 = 1 THEN NULL ELSE now() END, \
                CASE WHEN g % 3 <> 0 THEN now() + (g % 5000) * interval '1 minute' END \
         FROM unnest($1::uuid[], $2::uuid[], $3::int8[]) AS t(r, d, g)",
    )
    .bind(reviews)
    .bind(docs)
    .bind(&nums)
    .execute(&mut *tx)
    .await?;
    sqlx::query(
        "UPDATE documents d SET current_review_id = t.r \
         FROM unnest($1::uuid[], $2::uuid[]) AS t(r, id) WHERE d.id = t.id",
    )
    .bind(reviews)
    .bind(docs)
    .execute(&mut *tx)
    .await?;
    Ok(())
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
        Box::pin(drive(1, sizes().2, move |_| {
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

/// The lists at one size, in turns.
async fn at_size(env: &BenchEnv, svc: &Service, token: &str) -> anyhow::Result<Vec<Figures>> {
    let measures = LISTS
        .iter()
        .map(|(_, path)| measure(env, svc, token, path))
        .collect();
    interleaved(measures).await
}

/// The rows, and their goals: the queue flat (the worse of its two orders), and the
/// trigram search's p50 at the large size.
pub async fn space_list_rows(report: &mut Report, env: &BenchEnv) -> anyhow::Result<()> {
    let (small, large, _) = sizes();
    spaces(env).await?;
    grow(env, HOME_PENDING, small).await?;
    let svc = env.spawn_service("space-lists", &[]).await?;
    let token = sign(&env.settings.auth.jwt_secret, MEMBER, &[], 3600);
    let at_small = at_size(env, &svc, &token).await?;
    grow(env, small, large).await?;
    let at_large = at_size(env, &svc, &token).await?;
    let (mut queue, mut search) = (0.0f64, 0.0f64);
    for (i, ((what, _), (s, l))) in LISTS.iter().zip(at_small.iter().zip(&at_large)).enumerate() {
        anyhow::ensure!(s.errors == 0 && l.errors == 0, "{what}: a call failed");
        report.row(&format!("{what}, {small} documents"), 1, s, None);
        let ratio = l.p50_ms / s.p50_ms;
        let vs = format!("p50 vs {small} documents");
        report.row(
            &format!("{what}, {large} documents"),
            1,
            l,
            Some((&vs, ratio)),
        );
        match i {
            0 | 1 => queue = queue.max(ratio),
            2 => search = ratio,
            _ => {}
        }
    }
    let x = |v: f64| format!("{v:.2}x");
    report.goal(
        &format!("review queue of a reviewer in 1 of {SPACES} spaces, p50 at {large} documents ÷ at {small}, the worse of its two orders"),
        x(queue),
        "≤ 1.2x",
        queue <= 1.2,
    );
    let p50 = at_large[2].p50_ms;
    report.goal(
        &format!("title search of a space (trigrams), p50 at {large} documents in {SPACES} spaces"),
        format!("{p50:.2} ms ({} at {small})", x(search)),
        "≤ 10 ms",
        p50 <= 10.0,
    );
    Ok(())
}
