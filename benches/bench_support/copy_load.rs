//! The fast loader of the space lists' documents: `COPY` of CSV made here into staging
//! tables, then one `INSERT ... SELECT` a table, a hundred thousand documents and their
//! reviews a transaction, then each document pointed at its review. A document's number decides its space, title and status: one in twenty a draft,
//! one in twenty pending, the rest approved; titles are three words of forty and the number.

use std::fmt::Write;

use chrono::{Duration, Utc};
use uuid::Uuid;

use super::data::set_current_reviews;
use super::BenchEnv;

/// The words titles are made of.
pub const WORDS: [&str; 40] = [
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

/// Documents a transaction.
const CHUNK: usize = 100_000;

/// The title of document `g`: three words, capitalised, and the number.
fn title(g: usize) -> String {
    let word = |i: usize| {
        let w = WORDS[i % 40];
        w[..1].to_uppercase() + &w[1..]
    };
    let (a, b, c) = (g * 7, g * 13 + g / 40, g * 31 + g / 1600);
    format!("{} {} {} {g}", word(a), word(b), word(c))
}

/// Documents `from..to` over `spaces` spaces (`bench-space-<g % spaces>`), each submitted
/// one (all but the drafts) with its review, pending or approved, two in three due within
/// a few days.
pub async fn load_documents(
    env: &BenchEnv,
    from: usize,
    to: usize,
    spaces: usize,
) -> anyhow::Result<()> {
    let now = Utc::now();
    for start in (from..to).step_by(CHUNK) {
        let (mut docs, mut reviews) = (String::new(), String::new());
        let (mut ids, mut current) = (Vec::new(), Vec::new());
        for g in start..(start + CHUNK).min(to) {
            let (d, r) = (Uuid::now_v7(), Uuid::now_v7());
            let status = match (g / 100) % 20 {
                0 => "DRAFT",
                1 => "PENDING_REVIEW",
                _ => "APPROVED",
            };
            let (author, space, title) = (g % 50, g % spaces, title(g));
            writeln!(
                docs,
                "{d},{title},Body,{status},2,bench-space-author-{author},bench-space-{space}"
            )?;
            if status == "DRAFT" {
                continue;
            }
            let decided = match status {
                "PENDING_REVIEW" => "PENDING,,".to_string(),
                _ => format!("APPROVED,bench-reviewer,{}", now.to_rfc3339()),
            };
            let due = match g % 3 {
                0 => String::new(),
                _ => (now + Duration::minutes((g % 5000) as i64)).to_rfc3339(),
            };
            writeln!(reviews, "{r},{d},{decided},2,bench-space-author,{due}")?;
            ids.push(d);
            current.push(r);
        }
        load_chunk(env, docs, reviews, &current, &ids).await?;
    }
    for table in ["documents", "reviews"] {
        let vacuum = format!("VACUUM ANALYZE {table}");
        sqlx::raw_sql(sqlx::AssertSqlSafe(vacuum))
            .execute(&env.pg)
            .await?;
    }
    Ok(())
}

/// One chunk in one transaction: `COPY` into tables of the transaction's own (row-level
/// security refuses `COPY` into the service's tables, even for their owner), one `INSERT`
/// each from there, and each document pointed at its review.
async fn load_chunk(
    env: &BenchEnv,
    docs: String,
    reviews: String,
    current: &[Uuid],
    ids: &[Uuid],
) -> anyhow::Result<()> {
    const DOCUMENTS: &str = "id, title, body, status, version, author_id, space_id";
    const REVIEWS: &str =
        "id, document_id, status, decided_by, decided_at, document_version, submitted_by, due_at";
    let mut tx = env.pg.begin().await?;
    sqlx::raw_sql(
        "CREATE TEMP TABLE staged_documents ON COMMIT DROP AS \
           SELECT id, title, body, status, version, author_id, space_id FROM documents LIMIT 0; \
         CREATE TEMP TABLE staged_reviews ON COMMIT DROP AS \
           SELECT id, document_id, status, decided_by, decided_at, document_version, \
                  submitted_by, due_at FROM reviews LIMIT 0",
    )
    .execute(&mut *tx)
    .await?;
    for (table, rows) in [("staged_documents", docs), ("staged_reviews", reviews)] {
        let statement = format!("COPY {table} FROM STDIN (FORMAT csv)");
        let mut copy = tx.copy_in_raw(&statement).await?;
        copy.send(rows.into_bytes()).await?;
        copy.finish().await?;
    }
    let insert = format!(
        "INSERT INTO documents ({DOCUMENTS}) SELECT {DOCUMENTS} FROM staged_documents; \
         INSERT INTO reviews ({REVIEWS}) SELECT {REVIEWS} FROM staged_reviews"
    );
    sqlx::raw_sql(sqlx::AssertSqlSafe(insert))
        .execute(&mut *tx)
        .await?;
    set_current_reviews(&mut tx, current, ids).await?;
    tx.commit().await?;
    Ok(())
}
