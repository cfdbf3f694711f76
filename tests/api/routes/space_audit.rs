//! The audit of spaces: a space's settings and memberships changes are linked in a chain
//! of the space's own (its head on the space's row), its creation in the admin chain; `audit
//! verify` (the API and the command) checks them all, and a row changed, removed (in the
//! middle, or the tail) or inserted by SQL is found, named by its space; a checkpoint holds
//! every space's chain, so a chain rewound with its head is found against it.

use std::process::Command;
use std::time::Duration;

use kh_review::domain::audit::checkpoint::ChainId;
use kh_review::store::mongo::CheckpointStore;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::routes::audit::{chained_rows, holding, verify};
use crate::routes::spaces::{bare, create_space, put_member, send};
use crate::support::app::{expose, spawn_app, spawn_app_with, AppOptions, TestApp};
use crate::support::inspect::wait_for;

/// Space `key` with five changes in its chain: two memberships put, one replaced, a
/// settings write, one removed.
async fn five_changes(app: &TestApp, key: &str) {
    create_space(app, key).await;
    let admin = app.admin();
    put_member(app, &admin, key, "user:ada", &["space_admin"]).await;
    let ada = bare(app, "ada", &[]);
    put_member(app, &ada, key, "user:bo", &["author"]).await;
    put_member(app, &ada, key, "user:bo", &["author", "reviewer"]).await;
    let path = format!("/api/v1/spaces/{key}");
    let r = send(
        app,
        Method::PATCH,
        &path,
        &ada,
        Some(json!({"name": "Renamed"})),
    )
    .await;
    assert_eq!(r.status(), StatusCode::OK);
    let path = format!("/api/v1/spaces/{key}/members/user:bo");
    assert_eq!(app.delete(&path, &ada).await.status(), StatusCode::OK);
}

/// Every row the chains hold, the spaces' included.
async fn all_rows(app: &TestApp) -> i64 {
    chained_rows(app).await
        + app
            .count(
                "SELECT (SELECT count(*) FROM space_audit_log) \
                 + (SELECT count(*) FROM space_admin_actions)",
            )
            .await
}

async fn exec(app: &TestApp, statement: &str, key: &str, seq: i64) -> Vec<Value> {
    sqlx::query_scalar(sqlx::AssertSqlSafe(statement.to_owned()))
        .bind(key)
        .bind(seq)
        .fetch_all(&app.pg)
        .await
        .unwrap()
}

/// The row at `seq` of `key`'s chain, whole (to put it back).
async fn row_at(app: &TestApp, key: &str, seq: i64) -> Value {
    let q = "SELECT to_jsonb(r) FROM space_audit_log r WHERE space_id = $1 AND seq = $2";
    exec(app, q, key, seq).await.remove(0)
}

async fn put_back(app: &TestApp, row: &Value) {
    sqlx::query(
        "INSERT INTO space_audit_log \
         SELECT * FROM jsonb_populate_record(NULL::space_audit_log, $1)",
    )
    .bind(row)
    .execute(&app.pg)
    .await
    .unwrap();
}

/// What the check found broken, as (table, row id, space, position, found).
async fn broken(app: &TestApp) -> Value {
    let answer = verify(app, None).await;
    let b = &answer["broken_at"];
    json!([b["table"], b["id"], b["space"], b["position"], b["found"]])
}

fn id_of(row: &Value) -> Value {
    json!(row["id"].as_i64().unwrap().to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spaces_changes_are_chained_and_rows_changed_removed_or_inserted_are_found() {
    let app = spawn_app().await;
    five_changes(&app, "hr").await;
    let linked = "SELECT count(*) FROM space_audit_log WHERE space_id = 'hr' \
                  AND hash IS NOT NULL AND format = 2 AND seq BETWEEN 1 AND 5";
    assert_eq!(app.count(linked).await, 5);
    let head = "SELECT audit_count FROM spaces WHERE key = 'hr'";
    assert_eq!(app.count(head).await, 5);
    let actions = "SELECT count(*) FROM space_admin_actions \
                   WHERE space_id = 'hr' AND chain_seq IS NOT NULL AND chain_format = 2";
    assert_eq!(
        app.count(actions).await,
        1,
        "its creation in the admin chain"
    );
    let what = "SELECT count(*) FROM space_audit_log WHERE space_id = 'hr' AND seq = 3 \
                AND action = 'member.put' AND roles = '{author,reviewer}' \
                AND previous_roles = '{author}' AND actor_id = 'ada'";
    assert_eq!(app.count(what).await, 1, "who changed what, from what");
    assert_eq!(holding(&verify(&app, None).await), all_rows(&app).await);

    changed_and_removed(&app).await;
    inserted_and_unlinked(&app).await;

    // The space's creation, edited in the admin chain.
    sqlx::query("UPDATE space_admin_actions SET name = 'Mallory' WHERE space_id = 'hr'")
        .execute(&app.pg)
        .await
        .unwrap();
    let answer = verify(&app, None).await;
    let b = &answer["broken_at"];
    assert_eq!(
        (&b["table"], &b["found"]),
        (&json!("space_admin_actions"), &json!("changed")),
        "{answer}"
    );
    app.finish().await;
}

/// Row 2 of hr's chain changed, row 3 removed, then the tail: each found, then put back.
async fn changed_and_removed(app: &TestApp) {
    // A row changed: found, named; put back, the chain holds again.
    let row = row_at(app, "hr", 2).await;
    let q = "UPDATE space_audit_log SET roles = '{space_admin}' \
             WHERE space_id = $1 AND seq = $2 RETURNING to_jsonb(id)";
    exec(app, q, "hr", 2).await;
    let want = json!(["space_audit_log", id_of(&row), "hr", 2, "changed"]);
    assert_eq!(broken(app).await, want);
    let q = "UPDATE space_audit_log SET roles = '{author}' \
             WHERE space_id = $1 AND seq = $2 RETURNING to_jsonb(id)";
    exec(app, q, "hr", 2).await;
    assert_eq!(holding(&verify(app, None).await), all_rows(app).await);

    // A row removed from the middle: the position it leaves is missing.
    let delete = "DELETE FROM space_audit_log WHERE space_id = $1 AND seq = $2 \
                  RETURNING to_jsonb(id)";
    let row = row_at(app, "hr", 3).await;
    let after = row_at(app, "hr", 4).await;
    exec(app, delete, "hr", 3).await;
    let want = json!(["space_audit_log", id_of(&after), "hr", 3, "missing"]);
    assert_eq!(broken(app).await, want);
    put_back(app, &row).await;
    // The tail removed, its head left as it was.
    let row = row_at(app, "hr", 5).await;
    exec(app, delete, "hr", 5).await;
    let want = json!(["space_audit_log", Value::Null, "hr", 5, "tail_missing"]);
    assert_eq!(broken(app).await, want);
    put_back(app, &row).await;
    assert_eq!(holding(&verify(app, None).await), all_rows(app).await);
}

/// A row inserted past hr's head, and one with no link at all: each found, then removed.
async fn inserted_and_unlinked(app: &TestApp) {
    // A row inserted past the head, and one with no link at all.
    let copy = |seq: &str| {
        format!(
            "INSERT INTO space_audit_log (space_id, action, subject, roles, actor_id, at, \
                                          seq, hash) \
             SELECT space_id, action, subject, roles, actor_id, at, {seq}, hash \
             FROM space_audit_log WHERE space_id = $1 AND seq = $2 RETURNING to_jsonb(id)"
        )
    };
    let added = exec(app, &copy("seq + 1"), "hr", 5).await.remove(0);
    let want = json!(["space_audit_log", added.to_string(), "hr", 6, "inserted"]);
    assert_eq!(broken(app).await, want);
    exec(app, &copy("NULL"), "hr", 5).await;
    let q = "DELETE FROM space_audit_log WHERE space_id = $1 AND seq = $2 + 1 \
             RETURNING to_jsonb(id)";
    exec(app, q, "hr", 5).await;
    let answer = verify(app, None).await;
    let b = &answer["broken_at"];
    assert_eq!(
        (&b["table"], &b["space"], &b["found"]),
        (&json!("space_audit_log"), &json!("hr"), &json!("unchained")),
        "{answer}"
    );
    assert!(b.get("position").is_none_or(Value::is_null), "{answer}");
    let (code, out) = cli_verify(app);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("unchained at space_audit_log") && out.contains("space hr"),
        "{out}"
    );
    sqlx::query("DELETE FROM space_audit_log WHERE seq IS NULL")
        .execute(&app.pg)
        .await
        .unwrap();
    assert_eq!(holding(&verify(app, None).await), all_rows(app).await);
}

/// `kh-review audit verify` on the app's database: exit code, output.
fn cli_verify(app: &TestApp) -> (Option<i32>, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kh-review"));
    for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("APP_")) {
        cmd.env_remove(k);
    }
    let out = cmd
        .args(["audit", "verify"])
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checkpoint_holds_every_spaces_chain_and_one_rewound_with_its_head_is_found() {
    let app = spawn_app_with(AppOptions {
        configure: Some(Box::new(|s| {
            s.audit.checkpoint_every = Duration::from_secs(1);
        })),
        ..Default::default()
    })
    .await;
    five_changes(&app, "hr").await;
    let store = CheckpointStore::from_settings(&app.settings.mongo, &app.settings.audit)
        .await
        .expect("the checkpoint store's settings");
    let hr = ChainId::Space("hr".to_string());
    let entry = wait_for(
        "a checkpoint of hr's five rows",
        Duration::from_secs(20),
        || async {
            let h = store.latest().await.ok().flatten()?;
            let cp = store.load(&h).await.ok()?;
            let e = cp.chains.iter().find(|c| c.chain == hr && c.count == 5)?;
            let default = cp
                .chains
                .iter()
                .any(|c| c.chain == ChainId::Space("default".into()));
            default.then_some(e.clone())
        },
    )
    .await;
    let (head,): (Vec<u8>,) = sqlx::query_as("SELECT audit_head FROM spaces WHERE key = 'hr'")
        .fetch_one(&app.pg)
        .await
        .unwrap();
    assert_eq!(entry.head.map(|h| h.to_vec()), Some(head));
    let answer = verify(&app, None).await;
    assert!(answer.get("broken_at").is_none(), "{answer}");
    assert_eq!(answer["checkpoint"]["status"], "checked", "{answer}");

    // The tail removed and the head set back to the row before: the chain alone holds,
    // the checkpoint does not.
    sqlx::query(
        "WITH gone AS (DELETE FROM space_audit_log WHERE space_id = 'hr' AND seq = 5) \
         UPDATE spaces SET audit_count = 4, audit_head = \
           (SELECT hash FROM space_audit_log WHERE space_id = 'hr' AND seq = 4) \
         WHERE key = 'hr'",
    )
    .execute(&app.pg)
    .await
    .unwrap();
    let answer = verify(&app, None).await;
    let b = &answer["broken_at"];
    let got = json!([b["table"], b["space"], b["position"], b["found"]]);
    assert_eq!(
        got,
        json!(["space_audit_log", "hr", 5, "rewound"]),
        "{answer}"
    );
    assert_eq!(answer["checkpoint"]["status"], "checked", "{answer}");
    app.finish().await;
}
