//! The audit chain, end to end: after a realistic mix of writes (create, submit, claim,
//! 2-of-2 approvals, comment, archive, an overdue mark, policy writes, an outbox retry and
//! skip) every chain verifies clean; a row changed, removed (in the middle, or the tail) or
//! inserted by SQL is found, with the row named, each on a document of its own; the
//! `kh-review audit verify` command exits non-zero on a broken chain, and when it could not
//! check against a checkpoint. Checks against checkpoints: `audit_checkpoints`.

use std::process::Command;
use std::time::Duration;

use kh_review::web::auth::Role;
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::faults::parked::{act, parked_submission, ADMIN};
use crate::support::app::{expose, spawn_app, spawn_app_with, AppOptions, TestApp};
use crate::support::inspect::{expect_error, wait_for};

/// `GET /api/v1/admin/audit/verify`, as an admin, expecting 200.
pub(crate) async fn verify(app: &TestApp, document: Option<&str>) -> Value {
    let query = document.map_or_else(String::new, |d| format!("?document_id={d}"));
    let admin = app.token(ADMIN, &[Role::Admin]);
    let r = app
        .get(&format!("/api/v1/admin/audit/verify{query}"), &admin)
        .await;
    let status = r.status();
    let body: Value = r.json().await.unwrap();
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

/// The rows a check found holding (it found no break), asserting it had no checkpoint to
/// check against and said so.
pub(crate) fn holding(answer: &Value) -> i64 {
    assert!(answer.get("broken_at").is_none(), "{answer}");
    let checkpoint = &answer["checkpoint"];
    assert_eq!(checkpoint["status"], "none_yet", "{answer}");
    let unchecked = checkpoint["unchecked"].as_str().unwrap_or_default();
    assert!(unchecked.contains("were not looked for"), "{answer}");
    answer["checked"].as_i64().expect("a count")
}

/// The rows every chain holds: what a clean check counts.
pub(crate) async fn chained_rows(app: &TestApp) -> i64 {
    app.count(
        "SELECT (SELECT count(*) FROM audit_log) + (SELECT count(*) FROM policy_versions) \
         + (SELECT count(*) FROM outbox_admin_actions)",
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untouched_database_verifies_clean_after_a_realistic_mix() {
    let app = spawn_app_with(AppOptions {
        configure: Some(Box::new(|s| {
            s.outbox.max_attempts = 1;
            s.review.overdue_sweep = Duration::from_millis(100);
        })),
        ..Default::default()
    })
    .await;
    // Two approvals of two, a claim before each, a comment, then an archive.
    app.n_of_m("two", 2).await;
    let (doc, review) = app.pending_under("two").await;
    for who in ["rita", "ron"] {
        let token = app.token(who, &[Role::Reviewer]);
        assert_eq!(app.claim(&review, &token).await.status(), StatusCode::OK);
        assert_eq!(app.approve(&review, &token).await.status(), StatusCode::OK);
    }
    let path = format!("/api/v1/documents/{doc}/comments");
    let r = app
        .post(&path, &app.author(), json!({"body": "Thanks."}))
        .await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let path = format!("/api/v1/documents/{doc}/archive");
    assert_eq!(
        app.post(&path, &app.admin(), json!({})).await.status(),
        StatusCode::OK
    );
    // A review past its due date, marked by the sweeper.
    app.due_after("due", 1).await;
    let (_, late) = app.pending_under("due").await;
    wait_for("the overdue mark", Duration::from_secs(15), || async {
        (app.events_of(&late, "review.overdue").await > 0).then_some(())
    })
    .await;
    app.outbox_drained(Duration::from_secs(15)).await;
    retried_and_skipped(&app).await;
    let clean = verify(&app, None).await;
    assert_eq!(holding(&clean), chained_rows(&app).await, "{clean}");
    assert_eq!(
        app.count("SELECT count(*) FROM outbox_admin_actions").await,
        2
    );
    assert_eq!(
        holding(&verify(&app, Some(&doc)).await),
        app.count(&format!(
            "SELECT count(*) FROM audit_log WHERE document_id = '{doc}'"
        ))
        .await
    );

    // The admin chain: a policy version edited by SQL is found, named by its key.
    sqlx::query("UPDATE policy_versions SET created_by = 'mallory' WHERE name = 'due'")
        .execute(&app.pg)
        .await
        .unwrap();
    let broken = verify(&app, None).await;
    let at = &broken["broken_at"];
    assert_eq!(
        (&at["table"], &at["id"], &at["found"]),
        (
            &json!("policy_versions"),
            &json!("due/1"),
            &json!("changed")
        ),
        "{broken}"
    );
    app.finish().await;
}

/// A parked row retried (and parked again), then skipped: two admin actions.
async fn retried_and_skipped(app: &TestApp) {
    let (_, id) = parked_submission(app, 1).await;
    let admin = app.token(ADMIN, &[Role::Admin]);
    assert_eq!(act(app, id, "retry", &admin).await.status(), StatusCode::OK);
    let parked = format!("SELECT count(*) FROM outbox WHERE id = {id} AND parked_at IS NOT NULL");
    wait_for("the row parked again", Duration::from_secs(15), || async {
        (app.count(&parked).await == 1).then_some(())
    })
    .await;
    assert_eq!(act(app, id, "skip", &admin).await.status(), StatusCode::OK);
    app.outbox_drained(Duration::from_secs(15)).await;
}

/// A document with four audit rows (create, submit, approve, comment): its id.
pub(crate) async fn four_rows(app: &TestApp) -> String {
    let (doc, _) = app.approved_review().await;
    let path = format!("/api/v1/documents/{doc}/comments");
    let r = app
        .post(&path, &app.author(), json!({"body": "Noted."}))
        .await;
    assert_eq!(r.status(), StatusCode::CREATED);
    doc
}

/// The id of the row at `seq` in `doc`'s chain.
pub(crate) async fn row_at(app: &TestApp, doc: &str, seq: i64) -> i64 {
    sqlx::query_scalar("SELECT id FROM audit_log WHERE document_id = $1::uuid AND seq = $2")
        .bind(doc)
        .bind(seq)
        .fetch_one(&app.pg)
        .await
        .unwrap()
}

async fn sql(app: &TestApp, statement: &'static str, id: i64) {
    sqlx::query(statement)
        .bind(id)
        .execute(&app.pg)
        .await
        .unwrap();
}

/// A copy of row $1 at the next position, its hash copied too: an insert by hand.
const COPY_AFTER: &str = "INSERT INTO audit_log (document_id, review_id, action, actor_id, \
    from_status, to_status, document_version, request_id, lock_mode, fence_token, seq, hash, at) \
    SELECT document_id, review_id, action, actor_id, from_status, to_status, document_version, \
           request_id, lock_mode, fence_token, seq + 1, hash, at \
    FROM audit_log WHERE id = $1 RETURNING id";

/// A copy of row $1 with no position and no link.
const COPY_UNLINKED: &str = "INSERT INTO audit_log (document_id, review_id, action, actor_id, \
    from_status, to_status, document_version, request_id, lock_mode, fence_token, at) \
    SELECT document_id, review_id, action, actor_id, from_status, to_status, document_version, \
           request_id, lock_mode, fence_token, at \
    FROM audit_log WHERE id = $1 RETURNING id";

/// `kh-review audit verify --document <doc>` on the app's database: exit code, output.
fn cli_verify(app: &TestApp, doc: &str) -> (Option<i32>, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kh-review"));
    for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("APP_")) {
        cmd.env_remove(k);
    }
    let out = cmd
        .args(["audit", "verify", "--document", doc])
        .env(
            "APP_CONFIG_DIR",
            concat!(env!("CARGO_MANIFEST_DIR"), "/config"),
        )
        .env("APP__ENVIRONMENT", "development")
        .env("APP__DATABASE__URL", expose(&app.settings.database.url))
        .env("APP__MONGO__URL", expose(&app.settings.mongo.url))
        .env("APP__MONGO__DATABASE", &app.settings.mongo.database)
        .env("APP__LOG__LEVEL", "warn")
        .output()
        .expect("the kh-review binary runs");
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code(), text)
}

/// With no checkpoint yet, the command checks the chain of `doc` (four rows, intact), says
/// what it could not check, and does not pass.
fn cli_holds_but_not_against_a_checkpoint(app: &TestApp, doc: &str) {
    let (code, out) = cli_verify(app, doc);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("checked 4 rows"), "{out}");
    assert!(
        out.contains("NOT CHECKED") && out.contains("no checkpoint was written yet"),
        "{out}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_changed_removed_or_inserted_by_sql_are_found_with_the_row_named() {
    let app = spawn_app().await;
    let mut docs = Vec::new();
    for _ in 0..6 {
        docs.push(four_rows(&app).await);
    }
    app.outbox_drained(Duration::from_secs(15)).await;
    let [changed, middle, tail, inserted, unlinked, intact] = &docs[..] else {
        unreachable!("six documents")
    };
    assert_eq!(holding(&verify(&app, None).await), chained_rows(&app).await);
    cli_holds_but_not_against_a_checkpoint(&app, changed);

    let row = row_at(&app, changed, 2).await;
    sql(
        &app,
        "UPDATE audit_log SET actor_id = 'mallory' WHERE id = $1",
        row,
    )
    .await;
    let gone = row_at(&app, middle, 2).await;
    sql(&app, "DELETE FROM audit_log WHERE id = $1", gone).await;
    let last = row_at(&app, tail, 4).await;
    sql(&app, "DELETE FROM audit_log WHERE id = $1", last).await;
    let source = row_at(&app, inserted, 4).await;
    let added: i64 = sqlx::query_scalar(COPY_AFTER)
        .bind(source)
        .fetch_one(&app.pg)
        .await
        .unwrap();
    let source = row_at(&app, unlinked, 4).await;
    let loose: i64 = sqlx::query_scalar(COPY_UNLINKED)
        .bind(source)
        .fetch_one(&app.pg)
        .await
        .unwrap();

    let expect = |doc: &str, id: Option<i64>, position: Option<i64>, found: &str| {
        json!({"table": "audit_log", "id": id.map(|i| i.to_string()), "document_id": doc,
               "position": position, "found": found})
    };
    for (doc, want) in [
        (changed, expect(changed, Some(row), Some(2), "changed")),
        (
            middle,
            expect(
                middle,
                Some(row_at(&app, middle, 3).await),
                Some(2),
                "missing",
            ),
        ),
        (tail, expect(tail, None, Some(4), "tail_missing")),
        (inserted, expect(inserted, Some(added), Some(5), "inserted")),
        (unlinked, expect(unlinked, Some(loose), None, "unchained")),
    ] {
        let found = verify(&app, Some(doc)).await;
        assert_eq!(found["broken_at"], want, "{doc}: {found}");
    }
    let whole = verify(&app, None).await;
    assert!(
        whole["broken_at"].is_object(),
        "the whole check stops at a break: {whole}"
    );
    assert_eq!(holding(&verify(&app, Some(intact)).await), 4);

    let (code, out) = cli_verify(&app, changed);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains(&format!("broken: changed at audit_log row {row}")),
        "{out}"
    );
    app.finish().await;
}

#[tokio::test]
async fn only_admins_verify_and_bad_queries_are_refused() {
    let app = spawn_app().await;
    let path = "/api/v1/admin/audit/verify";
    let r = app.get(path, &app.reviewer()).await;
    expect_error(r, StatusCode::FORBIDDEN, "FORBIDDEN").await;
    let admin = app.token(ADMIN, &[Role::Admin]);
    let r = app.get(&format!("{path}?document_id=nope"), &admin).await;
    expect_error(r, StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED").await;
    let unknown = uuid::Uuid::now_v7();
    let r = app
        .get(&format!("{path}?document_id={unknown}"), &admin)
        .await;
    expect_error(r, StatusCode::NOT_FOUND, "NOT_FOUND").await;
    app.finish().await;
}
