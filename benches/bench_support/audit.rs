//! The audit chain's rows (`KH_BENCH_ONLY=audit`): `audit verify` over 1,000,000 rows
//! (goal: under 10 s), after the service's own link step chained them (timed right after
//! it and again once the table is vacuumed); and approvals with
//! the chain against without it (`audit.chain = false`, a development-only baseline; goal:
//! p50 within 1.05x), measured in turns.

use std::time::Instant;

use kh_review::store::PgStore;

use super::{approve_load, interleaved, sized, BenchEnv, Measure, Report};

/// Documents of the verify row, and audit rows of each.
fn sizes() -> (i64, i64) {
    sized((1_000, 1_000), (10, 10))
}

pub async fn audit_rows(report: &mut Report, env: &BenchEnv) -> anyhow::Result<()> {
    verify_row(report, env).await?;
    chain_cost_row(report, env).await
}

/// A store on the benchmark's database with the service's key, as the service builds it.
fn store(env: &BenchEnv) -> anyhow::Result<PgStore> {
    Ok(PgStore::from_settings(&env.settings.database)?.with_audit(&env.settings.audit))
}

/// 1,000,000 audit rows written by SQL (unlinked, as before the chain existed); the seconds
/// it took.
async fn fill(env: &BenchEnv) -> anyhow::Result<f64> {
    let (docs, rows_per_doc) = sizes();
    let started = Instant::now();
    sqlx::query(
        "INSERT INTO documents (id, title, body, status, version, author_id) \
         SELECT gen_random_uuid(), 'Audit ' || g, 'Body.', 'DRAFT', 1, 'bench-author' \
         FROM generate_series(1, $1) g",
    )
    .bind(docs)
    .execute(&env.pg)
    .await?;
    sqlx::query(
        "INSERT INTO audit_log (document_id, action, actor_id, from_status, to_status, \
                                document_version, request_id, lock_mode, at) \
         SELECT d.id, 'edit', 'bench-author', 'DRAFT', 'DRAFT', g, 'bench-' || g, 'none', \
                now() + g * interval '1 millisecond' \
         FROM documents d CROSS JOIN generate_series(1, $1) g \
         WHERE d.title LIKE 'Audit %'",
    )
    .bind(rows_per_doc)
    .execute(&env.pg)
    .await?;
    sqlx::query("VACUUM ANALYZE audit_log, documents")
        .execute(&env.pg)
        .await?;
    Ok(started.elapsed().as_secs_f64())
}

/// Those rows linked by the migrate step, then verified.
async fn verify_row(report: &mut Report, env: &BenchEnv) -> anyhow::Result<()> {
    let filled = fill(env).await?;
    let store = store(env)?;
    let linking = Instant::now();
    store.migrate().await?;
    let linked = linking.elapsed().as_secs_f64();
    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM audit_log")
        .fetch_one(&env.pg)
        .await?;
    // Right after the link step every row has a dead version beside it; the first verify
    // reads through them. Then as an operator meets the table: vacuumed, as autovacuum
    // leaves it.
    let verifying = Instant::now();
    let first = store.verify_audit(None, None).await?;
    let cold = verifying.elapsed().as_secs_f64();
    anyhow::ensure!(
        first.broken_at.is_none(),
        "the chains do not verify: {first:?}"
    );
    let vacuuming = Instant::now();
    sqlx::query("VACUUM ANALYZE audit_log, documents")
        .execute(&env.pg)
        .await?;
    let vacuumed = vacuuming.elapsed().as_secs_f64();
    let verifying = Instant::now();
    let verified = store.verify_audit(None, None).await?;
    let took = verifying.elapsed().as_secs_f64();
    store.close().await;
    anyhow::ensure!(
        verified.broken_at.is_none(),
        "the benchmark's chains do not verify: {:?}",
        verified.broken_at
    );
    anyhow::ensure!(
        verified.checked >= rows as u64,
        "verify checked {} of {rows} rows",
        verified.checked
    );
    report.note(format!(
        "audit rows: {rows} filled by SQL in {filled:.1} s, linked by the migrate step in \
         {linked:.1} s ({:.0} rows/s)",
        rows as f64 / linked
    ));
    report.note(format!(
        "audit verify: {} rows in {took:.2} s ({:.0} rows/s) on the vacuumed table; \
         {cold:.2} s right after the link step, before its VACUUM ({vacuumed:.1} s)",
        verified.checked,
        verified.checked as f64 / took
    ));
    report.goal(
        "audit verify of 1,000,000 rows",
        format!("{took:.2} s"),
        "under 10 s",
        took < 10.0,
    );
    Ok(())
}

/// Approvals one at a time on an instance that links its audit rows and on one that does
/// not (`audit.chain = false`), in turns.
async fn chain_cost_row(report: &mut Report, env: &BenchEnv) -> anyhow::Result<()> {
    let chained = env.spawn_service("audit-chain", &[]).await?;
    let off = [("APP__AUDIT__CHAIN", "false".to_string())];
    let unchained = env.spawn_service("audit-chain-off", &off).await?;
    // 400 a round: at 150 the p50 of one instance against another moved by 15% between
    // runs on this machine, more than the difference measured.
    let n = sized(400, 10);
    let with: Measure = Box::new(|| Box::pin(approve_load(env, &chained, 1, n)));
    let without: Measure = Box::new(|| Box::pin(approve_load(env, &unchained, 1, n)));
    let [with, without] = interleaved(vec![with, without])
        .await?
        .try_into()
        .expect("two rows");
    report.row("approve, audit chain off (baseline)", 1, &without, None);
    let ratio = with.p50_ms / without.p50_ms;
    report.row(
        "approve, audit chain on",
        1,
        &with,
        Some(("p50 vs chain off", ratio)),
    );
    report.goal(
        "approve p50 with the audit chain / without",
        format!("{ratio:.3}x"),
        "at most 1.05x",
        ratio <= 1.05,
    );
    Ok(())
}
