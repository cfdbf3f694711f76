//! The admin chain's formats on the real database: the policy versions the service linked
//! (in the format it links in while no field is added: 1, what every release reads) still verify once the policy
//! has a field more (a type of the test's standing for a later release's, its column added
//! to the table); a version linked after the field arrived covers it (the next format); a
//! row changed by SQL, old or new, is still found; and a release that does not know that
//! format does not take a row in it for good. A row linked in format 1 (by a release
//! before formats, its columns listed by hand) verifies as it did, beside the others.

use std::time::Duration;

use kh_review::domain::audit::audited::{current, latest, Audited, Format};
use kh_review::domain::audit::format::AdminKind;
use kh_review::domain::audit::walk::Found;
use kh_review::domain::audit::{admin_canonical, as_hash, GENESIS};
use kh_review::domain::policy::PolicyRecord;
use kh_review::store::{PgStore, Verified};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::routes::audit::{chained_rows, holding, verify};
use crate::support::app::{spawn_app, TestApp};

/// The format after the latest one the policy can be read in.
const LATER: Format = latest::<PolicyRecord>() + 1;

/// The policy as a later release has it: one field more, arrived in the next format.
#[derive(Serialize, Deserialize)]
struct PolicyPlus {
    #[serde(flatten)]
    policy: PolicyRecord,
    #[serde(default)]
    min_comment_chars: Option<i32>,
}

impl Audited for PolicyPlus {
    const KIND: &'static str = "policy";
    const ADDED: &'static [(&'static str, Format)] = &[("min_comment_chars", LATER)];
}

/// The store of the later release, on the app's database with the app's key.
fn later_release(app: &TestApp) -> PgStore {
    PgStore::new(app.pg.clone(), Duration::from_secs(10))
        .with_audit(&app.settings.audit)
        .with_admin_kind(AdminKind::of::<PolicyPlus>())
}

async fn sql(app: &TestApp, statement: &str) {
    let statement = sqlx::AssertSqlSafe(statement.to_owned());
    sqlx::query(statement).execute(&app.pg).await.unwrap();
}

/// What a check of every chain by `store` found broken: (table, row, what), if anything.
async fn broken(store: &PgStore) -> Option<(&'static str, Option<String>, Found)> {
    let Verified { broken_at, .. } = store.verify_audit(None, None).await.unwrap();
    broken_at.map(|b| (b.table, b.id, b.found))
}

fn changed(id: &str) -> Option<(&'static str, Option<String>, Found)> {
    Some(("policy_versions", Some(id.to_string()), Found::Changed))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_field_added_to_the_policy_leaves_the_linked_rows_verifying() {
    let app = spawn_app().await;
    app.n_of_m("two", 2).await;
    app.n_of_m("two", 3).await;
    let rows = chained_rows(&app).await;
    assert_eq!(holding(&verify(&app, None).await), rows);
    let formats = format!(
        "SELECT count(*) FROM policy_versions WHERE name = 'two' AND chain_format = {}",
        current::<PolicyRecord>()
    );
    assert_eq!(app.count(&formats).await, 2, "linked in the current format");

    // The later release: the column, and the policy's type with its field.
    sql(
        &app,
        "ALTER TABLE policy_versions ADD COLUMN min_comment_chars integer",
    )
    .await;
    let later = later_release(&app);
    let found = later.verify_audit(None, None).await.unwrap();
    assert_eq!((found.checked as i64, found.broken_at), (rows, None));

    // A version it writes and links covers the field, in the later format.
    sql(
        &app,
        r#"WITH head AS (UPDATE policies SET version = version + 1 WHERE name = 'two'
                         RETURNING version)
           INSERT INTO policy_versions (name, version, stages, claim_ttl_secs, created_by,
                                        min_comment_chars)
           SELECT 'two', version, '[{"name": "review", "required_approvals": 1}]', 1800,
                  'ada', 20 FROM head"#,
    )
    .await;
    later.migrate().await.unwrap();
    let format =
        "SELECT chain_format::int8 FROM policy_versions WHERE name = 'two' AND version = 3";
    assert_eq!(app.count(format).await, i64::from(LATER));
    let found = later.verify_audit(None, None).await.unwrap();
    assert_eq!((found.checked as i64, found.broken_at), (rows + 1, None));

    // The field is covered: changed by SQL, the row is found; put back, it holds again.
    let set =
        |v: i32| format!("UPDATE policy_versions SET min_comment_chars = {v} WHERE version = 3");
    sql(&app, &set(21)).await;
    assert_eq!(broken(&later).await, changed("two/3"));
    sql(&app, &set(20)).await;
    assert_eq!(broken(&later).await, None);

    // The service as it is knows no later format: it cannot vouch for that row.
    let answer = verify(&app, None).await;
    assert_eq!(
        (&answer["broken_at"]["id"], &answer["broken_at"]["found"]),
        (&json!("two/3"), &json!("changed")),
        "{answer}"
    );

    // A row the service linked today, changed by SQL, is found by the later release too.
    sql(
        &app,
        "UPDATE policy_versions SET claim_ttl_secs = 61 WHERE name = 'two' AND version = 1",
    )
    .await;
    assert_eq!(broken(&later).await, changed("two/1"));
    app.finish().await;
}

/// Links the unlinked version `version` of `name` as a release before formats did: format
/// 1, over its columns listed in one text form.
async fn link_in_format_1(app: &TestApp, name: &str, version: i32) {
    let fields: Vec<Option<String>> = sqlx::query_scalar(
        "SELECT ARRAY[name, version::text, stages::text, due_after_secs::text,
                      claim_ttl_secs::text, created_by,
                      (extract(epoch FROM created_at) * 1000000)::int8::text]
         FROM policy_versions WHERE name = $1 AND version = $2",
    )
    .bind(name)
    .bind(version)
    .fetch_one(&app.pg)
    .await
    .unwrap();
    let (count, head): (i64, Option<Vec<u8>>) =
        sqlx::query_as("SELECT count, hash FROM audit_chain_heads WHERE chain = 'admin'")
            .fetch_one(&app.pg)
            .await
            .unwrap();
    let prev = head.as_deref().and_then(as_hash).unwrap_or(GENESIS);
    let mut buf = Vec::new();
    admin_canonical(&mut buf, "policy", count + 1, &fields);
    let link = later_release(app).audit_key().link(&prev, &buf);
    sqlx::query(
        "UPDATE policy_versions SET chain_seq = $3, chain_hash = $4 WHERE name = $1 AND version = $2",
    )
    .bind(name)
    .bind(version)
    .bind(count + 1)
    .bind(link.as_slice())
    .execute(&app.pg)
    .await
    .unwrap();
    sqlx::query("UPDATE audit_chain_heads SET count = $1, hash = $2 WHERE chain = 'admin'")
        .bind(count + 1)
        .bind(link.as_slice())
        .execute(&app.pg)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_linked_in_format_1_still_verifies_and_a_change_is_found() {
    let app = spawn_app().await;
    app.n_of_m("old", 2).await;
    // A version written and linked by a release before formats.
    sql(
        &app,
        r#"WITH head AS (UPDATE policies SET version = version + 1 WHERE name = 'old'
                         RETURNING version)
           INSERT INTO policy_versions (name, version, stages, due_after_secs, claim_ttl_secs,
                                        created_by)
           SELECT 'old', version, '[{"name": "review", "required_approvals": 1}]', 3600,
                  1800, 'ada' FROM head"#,
    )
    .await;
    link_in_format_1(&app, "old", 2).await;
    // And one more version written by this release, linked after it.
    app.n_of_m("old", 3).await;
    let format =
        "SELECT chain_format::int8 FROM policy_versions WHERE name = 'old' AND version = 2";
    assert_eq!(app.count(format).await, 1);
    assert_eq!(holding(&verify(&app, None).await), chained_rows(&app).await);
    assert_eq!(broken(&later_release(&app)).await, None);

    sql(
        &app,
        "UPDATE policy_versions SET created_by = 'mallory' WHERE name = 'old' AND version = 2",
    )
    .await;
    let answer = verify(&app, None).await;
    assert_eq!(
        (&answer["broken_at"]["id"], &answer["broken_at"]["found"]),
        (&json!("old/2"), &json!("changed")),
        "{answer}"
    );
    app.finish().await;
}
