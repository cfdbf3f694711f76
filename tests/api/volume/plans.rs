//! Every SQL statement of the service, planned on a database of a realistic size as the
//! service's own role, under row-level security with a few spaces declared: none may scan
//! a table (but the few tables that hold a handful of rows: `SMALL_TABLES`). The statements are
//! the ones the build checks (`.sqlx/`), so a new query is covered the day it is written.

use serde_json::Value;
use sqlx::{Connection, PgConnection, PgPool};

use crate::support::app::{expose, spawn_app_with, AppOptions};

const DOCUMENTS: i64 = 100_000;

/// The policies beside the built-in one: a two-stage policy in its second version, one for
/// the legal and compliance groups, and a fast one; each with a due date.
const POLICIES: [&str; 2] = [
    "INSERT INTO policies (name, version) VALUES ('two-step', 2), ('legal', 1), ('fast', 1)",
    r#"INSERT INTO policy_versions (name, version, stages, due_after_secs, claim_ttl_secs, created_by)
       VALUES ('two-step', 1, '[{"name": "review", "required_approvals": 2, "eligible_groups": []}]',
               86400, 1800, 'admin'),
              ('two-step', 2, '[{"name": "review", "required_approvals": 2, "eligible_groups": []},
                                {"name": "legal", "required_approvals": 1, "eligible_groups": ["legal"]}]',
               86400, 1800, 'admin'),
              ('legal', 1, '[{"name": "legal", "required_approvals": 1,
                              "eligible_groups": ["legal", "compliance"]}]', 172800, 3600, 'admin'),
              ('fast', 1, '[{"name": "review", "required_approvals": 1, "eligible_groups": []}]',
               3600, 600, 'admin')"#,
];

/// A document's policy, by its number `g` (one in seven of each of the three, the rest
/// the built-in one; pending documents, every 200th, get all four).
const POLICY_OF_G: &str = "CASE g % 7 WHEN 1 THEN 'two-step' WHEN 2 THEN 'legal' \
                           WHEN 3 THEN 'fast' ELSE 'default' END";

/// Votes and claims: one approval of every approved review (three of a two-step one: two
/// in its first stage, one in the second), one vote on each pending two-step review, a
/// live claim on every other pending review plus an expired one on every tenth, and
/// 20,000 more claims, as a backlog of that many pending reviews would hold: the claim
/// statements must find their rows by key, not by reading the table.
const VOTES_AND_CLAIMS: [&str; 5] = [
    "INSERT INTO review_votes (review_id, voter_id, stage, vote, at) \
     SELECT r, 'reviewer', 0, 'APPROVE', now() - g * interval '1 second' FROM ids \
     WHERE g % 200 <> 0 OR g % 7 = 1",
    "INSERT INTO review_votes (review_id, voter_id, stage, vote, at) \
     SELECT r, v.voter, v.stage, 'APPROVE', now() FROM ids \
     CROSS JOIN (VALUES ('reviewer-2', 0), ('legal-1', 1)) AS v(voter, stage) \
     WHERE g % 200 <> 0 AND g % 7 = 1",
    "INSERT INTO review_claims (review_id, reviewer_id, stage, claimed_at, expires_at) \
     SELECT r, 'reviewer-' || (g % 5), 0, now() - interval '10 minutes', \
            now() + interval '20 minutes' FROM ids WHERE g % 400 = 0",
    "INSERT INTO review_claims (review_id, reviewer_id, stage, claimed_at, expires_at) \
     SELECT r, 'reviewer-9', 0, now() - interval '2 hours', now() - interval '90 minutes' \
     FROM ids WHERE g % 2000 = 0",
    "INSERT INTO review_claims (review_id, reviewer_id, stage, claimed_at, expires_at) \
     SELECT r, 'reviewer-' || (g % 7), 0, now() - interval '2 hours', \
            now() - interval '90 minutes' FROM ids WHERE g % 5 = 1",
];

/// Every approved document of the fast policy due for re-verification, from ten hours ago
/// to a thousand hours on (so a few are past due).
const REVERIFICATION: &str = "UPDATE documents \
     SET verify_by = now() + (g % 1000 - 10) * interval '1 hour' \
     FROM ids WHERE documents.id = ids.d AND status = 'APPROVED' AND g % 7 = 3";

/// 20 webhook endpoints in each of the 100 spaces (a tenth disabled), and a delivery of
/// every event to its space's first endpoint: a few hundred pending, the rest delivered.
/// After the outbox's rows, so its trigger makes none.
const WEBHOOKS: [&str; 2] = [
    "INSERT INTO webhooks (id, space_id, url, event_types, secret, created_by, enabled) \
     SELECT gen_random_uuid(), 'space-' || (i % 100), 'https://hooks.example.com/' || i, \
            '{document.approved}', 'whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', 'root', i % 10 <> 0 \
     FROM generate_series(1, 2000) AS i",
    "INSERT INTO webhook_deliveries (webhook_id, space_id, event_id, event_type, payload, state, \
                                     attempts, next_attempt_at, delivered_at) \
     SELECT w.id, o.space_id, o.event_id, o.event_type, o.payload, \
            CASE WHEN o.id % 300 = 0 THEN 'pending' ELSE 'delivered' END, 1, \
            now() - o.id % 7 * interval '1 minute', now() \
     FROM outbox o CROSS JOIN LATERAL \
          (SELECT id FROM webhooks w WHERE w.space_id = o.space_id ORDER BY id LIMIT 1) w",
];

/// A busy queue: 10,000 more documents pending review in `space-1`, for the statements planned
/// again for `PENDING` (with few pending rows, no plan hashes a whole table).
const BUSY_QUEUE: [&str; 4] = [
    "CREATE TEMP TABLE busy AS SELECT gen_random_uuid() AS d, gen_random_uuid() AS r, g \
     FROM generate_series(1, 10000) AS g",
    "INSERT INTO documents (id, title, body, status, version, author_id, space_id) \
     SELECT d, 'Busy ' || g, 'Body', 'PENDING_REVIEW', 2, 'author-' || (g % 50), 'space-1' FROM busy",
    "INSERT INTO reviews (id, document_id, status, document_version, submitted_by, space_id) \
     SELECT r, d, 'PENDING', 2, 'author-' || (g % 50), 'space-1' FROM busy",
    "UPDATE documents SET current_review_id = busy.r FROM busy WHERE documents.id = busy.d",
];

/// 100 spaces beside `default`, with 10,000 memberships (users and groups): every request
/// reads its caller's by subject.
const SPACES: [&str; 4] = [
    "INSERT INTO spaces (key, name) SELECT 'space-' || i, 'Space ' || i \
     FROM generate_series(0, 99) AS i",
    "INSERT INTO space_members (space_id, subject, roles) \
     SELECT 'space-' || (i % 100), CASE WHEN i % 10 = 0 THEN 'group:g-' ELSE 'user:u-' END || i, \
            CASE i % 3 WHEN 0 THEN '{author}'::text[] WHEN 1 THEN '{reviewer}' \
                       ELSE '{author,reviewer,space_admin}' END \
     FROM generate_series(1, 10000) AS i",
    // Each membership's put in its space's chain, linked (the hash's value is no matter
    // here), and each space's head after its last row.
    "INSERT INTO space_audit_log (space_id, action, subject, roles, actor_id, seq, hash) \
     SELECT space_id, 'member.put', subject, roles, 'root', \
            row_number() OVER (PARTITION BY space_id ORDER BY subject), \
            decode(repeat('00', 32), 'hex') FROM space_members",
    "UPDATE spaces SET audit_count = c.n, audit_head = decode(repeat('00', 32), 'hex') \
     FROM (SELECT space_id, count(*) AS n FROM space_audit_log GROUP BY space_id) c \
     WHERE spaces.key = c.space_id",
];

/// `n` approved (and published) documents with their approved review, votes, audit row, delivered outbox
/// row (one a second, back from now) and replayable idempotency key; plus a few hundred
/// pending reviews (with votes, claims, due dates, some overdue and some of those marked)
/// and undelivered rows; spread over the 100 spaces of [`SPACES`]. Policies as in
/// [`POLICIES`].
async fn fill(pg: &PgPool, n: i64) {
    let documents = format!(
        "INSERT INTO documents (id, title, body, status, version, author_id, policy, audit_count, \
                                space_id) \
         SELECT d, 'Filled ' || g, 'Body', CASE WHEN g % 200 = 0 THEN 'PENDING_REVIEW' ELSE 'APPROVED' END, \
                3, 'author-' || (g % 50), {POLICY_OF_G}, 1, 'space-' || (g % 100) FROM ids"
    );
    // Submitted one a second back from now; due a policy's due_after_secs after the submit
    // (so the older pending ones are overdue), and two in three of those marked already.
    let reviews = format!(
        "INSERT INTO reviews (id, document_id, status, document_version, submitted_by, submitted_at, \
                              decided_by, decided_at, policy, policy_version, stage, due_at, \
                              overdue_notified_at) \
         SELECT r, d, status, 2, 'author-' || (g % 50), submitted_at, \
                CASE WHEN status = 'PENDING' THEN NULL ELSE 'reviewer' END, \
                CASE WHEN status = 'PENDING' THEN NULL ELSE now() END, \
                policy, pv.version, \
                CASE WHEN status = 'APPROVED' AND policy = 'two-step' THEN 1 ELSE 0 END, \
                submitted_at + pv.due_after_secs * interval '1 second', \
                CASE WHEN status = 'PENDING' AND g % 3 <> 0 \
                      AND submitted_at + pv.due_after_secs * interval '1 second' < now() \
                     THEN submitted_at + (pv.due_after_secs + 5) * interval '1 second' END \
         FROM (SELECT *, {POLICY_OF_G} AS policy, now() - g * interval '1 second' AS submitted_at, \
                      CASE WHEN g % 200 = 0 THEN 'PENDING' ELSE 'APPROVED' END AS status \
               FROM ids) AS t \
         JOIN policies p ON p.name = t.policy \
         JOIN policy_versions pv ON pv.name = p.name AND pv.version = p.version"
    );
    let ids = "CREATE TEMP TABLE ids AS SELECT gen_random_uuid() AS d, gen_random_uuid() AS r, g \
               FROM generate_series(1, $1) AS g";
    let mut statements: Vec<&str> = vec![ids];
    statements.extend(SPACES);
    statements.extend(POLICIES);
    statements.extend([documents.as_str(), reviews.as_str()]);
    statements.extend(VOTES_AND_CLAIMS);
    statements.extend([
        "UPDATE documents SET current_review_id = ids.r FROM ids WHERE documents.id = ids.d",
        // Every approved document published; three comments on every tenth document.
        "UPDATE documents SET published_version = 3, published_title = title, \
         published_body = body WHERE status = 'APPROVED'",
        "INSERT INTO comments (document_id, seq, id, review_id, author_id, body) \
         SELECT d, c, gen_random_uuid(), CASE WHEN c = 1 THEN r END, 'reviewer', 'A comment' \
         FROM ids CROSS JOIN generate_series(1, 3) AS c WHERE g % 10 = 0",
        "UPDATE documents SET comment_count = 3 FROM ids WHERE documents.id = ids.d AND g % 10 = 0",
        // Linked, as every row is after the migrate step: the first of its document's chain
        // (whose head says one row; the overdue sweep links its marks after it). The hash's
        // value is no matter here.
        "INSERT INTO audit_log (document_id, review_id, action, actor_id, to_status, document_version, \
                                lock_mode, seq, hash) \
         SELECT d, r, 'approve', 'reviewer', 'APPROVED', 3, 'redis', 1, \
                decode(repeat('00', 32), 'hex') FROM ids",
        "INSERT INTO outbox (event_id, document_id, document_version, event_type, routing_key, payload, \
                             projected_at, published_at, done_at) \
         SELECT gen_random_uuid(), d, 3, 'document.approved', 'document.approved', '{}', \
                now(), now(), CASE WHEN g % 200 = 0 THEN NULL ELSE now() - g * interval '1 second' END \
         FROM ids",
        // An edit lease was taken on every fifth document (its row stays, given back or
        // expired); every thousandth is held now.
        "INSERT INTO locks (key, owner_token, holder, fence, acquired_at, expires_at) \
         SELECT 'lease:doc:' || d, CASE WHEN g % 1000 = 0 THEN gen_random_uuid()::text END, \
                'author-' || (g % 50), 1 + g % 7, now() - interval '1 hour', \
                CASE WHEN g % 1000 = 0 THEN now() + interval '5 minutes' \
                     ELSE now() - interval '55 minutes' END \
         FROM ids WHERE g % 5 = 0",
        "INSERT INTO idempotency_keys (owner_id, key, fingerprint, state, locked_until, expires_at, \
                                       claim, response_status, response_body) \
         SELECT 'author-' || (g % 50), 'key-' || g, 'f', 'DONE', now(), now() + interval '1 day', \
                gen_random_uuid(), 200, '{}' FROM ids",
    ]);
    statements.push(REVERIFICATION);
    statements.extend(WEBHOOKS);
    statements.extend(BUSY_QUEUE);
    let mut conn = pg.acquire().await.unwrap();
    for sql in statements {
        let q = sqlx::query(sqlx::AssertSqlSafe(sql.to_owned()));
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
        "Bytea" => "'\\x00'::bytea",
        "ByteaArray" => "ARRAY['\\x00'::bytea]",
        "Int4Array" => "'{1,2,3}'",
        "TimestamptzArray" => "ARRAY[now()]",
        "Timestamptz" => "now()",
        "Int8Array" => "'{1,2,3}'",
        "UuidArray" => "'{0190a0a0-0000-7000-8000-000000000001}'",
        "TextArray" => "'{legal}'",
        other => panic!("no literal for parameter type {other}: add one"),
    }
}

/// Tables that hold a handful of rows by design (an admin writes a policy's versions, acts
/// on a parked row, asks for a replay and creates a space by hand; one chain head per chain
/// that is not a document's): scanning them is what the planner should do, and no index
/// would be used.
const SMALL_TABLES: [&str; 7] = [
    "spaces",
    "space_admin_actions",
    "policies",
    "policy_versions",
    "outbox_admin_actions",
    "replays",
    "audit_chain_heads",
];

/// The lines of `plan` that can run: not those under a node whose `One-Time Filter` is
/// `false` (a branch its parameters switch off, e.g. the snapshot count of a history
/// replay), which the planner leaves unplanned in detail.
fn live_lines(plan: &[String]) -> impl Iterator<Item = &str> {
    let indent = |l: &str| l.len() - l.trim_start().len();
    let mut dead_below: Option<usize> = None;
    let mut node = 0;
    plan.iter().filter_map(move |line| {
        let at = indent(line);
        if dead_below.is_some_and(|d| at > d) {
            return None;
        }
        dead_below = None;
        if line.trim_start().starts_with("One-Time Filter: false") {
            dead_below = Some(node);
            return None;
        }
        if line.contains("(cost=") {
            node = at;
        }
        Some(line.as_str())
    })
}

/// A plan line that scans a table other than the small ones.
fn scans_big_table(line: &str) -> bool {
    let Some((_, rest)) = line.split_once("Seq Scan on ") else {
        return false;
    };
    let table = rest.split_whitespace().next().unwrap_or_default();
    // The system catalogs (the start-up check of the service's role reads pg_authid).
    !SMALL_TABLES.contains(&table) && !table.starts_with("pg_")
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

#[test]
fn a_branch_switched_off_is_not_a_scan() {
    let plan: Vec<String> = [
        "Nested Loop  (cost=1..2 rows=1 width=4)",
        "  ->  Result  (cost=0.00..9380.00 rows=1 width=0)",
        "        One-Time Filter: false",
        "        ->  Seq Scan on documents d  (cost=0.00..9380.00 rows=1 width=0)",
        "  ->  Seq Scan on reviews r  (cost=0.00..1.00 rows=1 width=0)",
    ]
    .map(String::from)
    .to_vec();
    let live: Vec<&str> = live_lines(&plan).collect();
    assert_eq!(live.len(), 3, "{live:?}");
    assert!(!live.iter().any(|l| l.contains("documents")));
    assert!(
        live.iter().any(|l| scans_big_table(l)),
        "the live scan of reviews"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_statement_scans_a_table_at_100k_documents() {
    let app = spawn_app_with(AppOptions {
        run_dispatcher: false,
        ..Default::default()
    })
    .await;
    fill(&app.pg, DOCUMENTS).await;
    // Planned as the service runs them: as its own role, under row-level security, in a
    // session that declared a few spaces (a policy's condition comes before every condition
    // of the query that is not leakproof, which can cost a statement its index).
    let mut conn = PgConnection::connect(expose(&app.settings.database.url))
        .await
        .unwrap();
    sqlx::query("SELECT set_config('kh.spaces', 'default,space-1,space-2', false)")
        .execute(&mut conn)
        .await
        .unwrap();
    let all = statements();
    assert!(
        all.len() >= 25,
        "only {} statements found in .sqlx/",
        all.len()
    );
    let mut scans = Vec::new();
    for (query, params) in &all {
        let mut args: Vec<&str> = params.iter().map(|p| literal(p)).collect();
        let mut plans = vec![explain(&mut conn, query, &args).await];
        // PostgreSQL plans with the values while that plan looks cheaper than the generic
        // one: a status filter is planned once more for the status with rows and no flag on
        // (the review queue, not only its overdue part), where hashing a whole table may
        // look cheaper than a lookup per row.
        if query.contains("status = $1") && args.first() == Some(&literal("Text")) {
            args[0] = "'PENDING'";
            for (arg, ty) in args.iter_mut().zip(params) {
                if ty == "Bool" {
                    *arg = "false";
                }
            }
            plans.push(explain(&mut conn, query, &args).await);
        }
        for plan in plans {
            if live_lines(&plan).any(scans_big_table) {
                scans.push(format!("{query}\n{}", plan.join("\n")));
            }
        }
    }
    assert!(
        scans.is_empty(),
        "statements that scan a table:\n\n{}",
        scans.join("\n\n")
    );
    conn.close().await.unwrap();
    app.stop().await;
}

/// The plan of `query` executed with `args` (literals), as a prepared statement.
async fn explain(conn: &mut PgConnection, query: &str, args: &[&str]) -> Vec<String> {
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("PREPARE planned AS {query}")))
        .execute(&mut *conn)
        .await
        .unwrap();
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
    plan
}
