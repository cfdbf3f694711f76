//! Every SQL statement of the service, planned on a database of a realistic size: none may
//! scan a table. The statements are the ones the build checks (`.sqlx/`), so a new query is
//! covered the day it is written.

use serde_json::Value;
use sqlx::PgPool;

use crate::support::app::{spawn_app_with, AppOptions};

const DOCUMENTS: i64 = 100_000;

/// `n` approved documents with their approved review, audit row, delivered outbox row (one
/// a second, back from now) and
/// replayable idempotency key; plus a few hundred pending reviews and undelivered rows.
async fn fill(pg: &PgPool, n: i64) {
    let statements = [
        "CREATE TEMP TABLE ids AS SELECT gen_random_uuid() AS d, gen_random_uuid() AS r, g \
         FROM generate_series(1, $1) AS g",
        "INSERT INTO documents (id, title, body, status, version, author_id) \
         SELECT d, 'Filled', 'Body', CASE WHEN g % 200 = 0 THEN 'PENDING_REVIEW' ELSE 'APPROVED' END, \
                3, 'author-' || (g % 50) FROM ids",
        "INSERT INTO reviews (id, document_id, status, document_version, submitted_by, submitted_at, \
                              decided_by, decided_at) \
         SELECT r, d, CASE WHEN g % 200 = 0 THEN 'PENDING' ELSE 'APPROVED' END, 2, \
                'author-' || (g % 50), now() - g * interval '1 second', \
                CASE WHEN g % 200 = 0 THEN NULL ELSE 'reviewer' END, \
                CASE WHEN g % 200 = 0 THEN NULL ELSE now() END FROM ids",
        "UPDATE documents SET current_review_id = ids.r FROM ids WHERE documents.id = ids.d",
        "INSERT INTO audit_log (document_id, review_id, action, actor_id, to_status, document_version, lock_mode) \
         SELECT d, r, 'approve', 'reviewer', 'APPROVED', 3, 'redis' FROM ids",
        "INSERT INTO outbox (event_id, document_id, document_version, event_type, routing_key, payload, \
                             projected_at, published_at, done_at) \
         SELECT gen_random_uuid(), d, 3, 'document.approved', 'document.approved', '{}', \
                now(), now(), CASE WHEN g % 200 = 0 THEN NULL ELSE now() - g * interval '1 second' END \
         FROM ids",
        "INSERT INTO idempotency_keys (owner_id, key, fingerprint, state, locked_until, expires_at, \
                                       claim, response_status, response_body) \
         SELECT 'author-' || (g % 50), 'key-' || g, 'f', 'DONE', now(), now() + interval '1 day', \
                gen_random_uuid(), 200, '{}' FROM ids",
    ];
    let mut conn = pg.acquire().await.unwrap();
    for sql in statements {
        let q = sqlx::query(sql);
        let q = if sql.contains("$1") { q.bind(n) } else { q };
        q.execute(&mut *conn).await.unwrap();
    }
    sqlx::query("ANALYZE").execute(&mut *conn).await.unwrap();
}

/// A literal of each parameter type, as `.sqlx/` names them. Durations are a week, so that
/// "older than" filters select the few rows they would in production.
fn literal(ty: &str) -> &'static str {
    match ty {
        "Text" => "'author-1'",
        "Uuid" => "'0190a0a0-0000-7000-8000-000000000001'",
        "Int8" => "50",
        "Int2" => "200",
        "Int4" => "10",
        "Float8" => "604800",
        "Bool" => "true",
        "Jsonb" => "'{}'",
        "Timestamptz" => "now()",
        "Int8Array" => "'{1,2,3}'",
        "UuidArray" => "'{0190a0a0-0000-7000-8000-000000000001}'",
        other => panic!("no literal for parameter type {other}: add one"),
    }
}

/// (query, parameter types) of every statement in `.sqlx/` that can be planned.
fn statements() -> Vec<(String, Vec<String>)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(".sqlx");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let json: Value =
            serde_json::from_str(&std::fs::read_to_string(entry.unwrap().path()).unwrap()).unwrap();
        let query = json["query"].as_str().unwrap().to_string();
        let head = query.trim_start().to_ascii_uppercase();
        if !["SELECT", "INSERT", "UPDATE", "DELETE", "WITH"]
            .iter()
            .any(|k| head.starts_with(k))
        {
            continue; // RESET and the like: nothing to plan
        }
        let params = json["describe"]["parameters"]["Left"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p.as_str().unwrap().to_string())
            .collect();
        out.push((query, params));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_statement_scans_a_table_at_100k_documents() {
    let app = spawn_app_with(AppOptions {
        run_dispatcher: false,
        ..Default::default()
    })
    .await;
    fill(&app.pg, DOCUMENTS).await;
    let mut conn = app.pg.acquire().await.unwrap();
    let all = statements();
    assert!(
        all.len() >= 25,
        "only {} statements found in .sqlx/",
        all.len()
    );
    let mut scans = Vec::new();
    for (query, params) in &all {
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!("PREPARE planned AS {query}")))
            .execute(&mut *conn)
            .await
            .unwrap();
        let args: Vec<&str> = params.iter().map(|p| literal(p)).collect();
        let execute = if args.is_empty() {
            "EXPLAIN EXECUTE planned".to_string()
        } else {
            format!("EXPLAIN EXECUTE planned({})", args.join(", "))
        };
        let plan: Vec<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(execute))
            .fetch_all(&mut *conn)
            .await
            .unwrap();
        sqlx::raw_sql("DEALLOCATE planned")
            .execute(&mut *conn)
            .await
            .unwrap();
        if plan.iter().any(|line| line.contains("Seq Scan")) {
            scans.push(format!("{query}\n{}", plan.join("\n")));
        }
    }
    assert!(
        scans.is_empty(),
        "statements that scan a table:\n\n{}",
        scans.join("\n\n")
    );
    drop(conn);
    app.stop().await;
}
