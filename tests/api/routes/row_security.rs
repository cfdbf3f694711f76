//! The second wall alone: PostgreSQL's row-level security, tried as the service's own role
//! (kh_app, which owns nothing and lacks BYPASSRLS) with no application code in the way. A
//! transaction that declared space A neither sees nor changes a row of space B, in every
//! table that holds a space's rows, whatever its statements ask; one that declared nothing
//! sees nothing; background work's marker sees everything; the role may not switch the
//! wall off. And the store itself, asked by a request of space A for a document of space B
//! (a route that forgot its check), gets nothing back.

use std::sync::Arc;

use kh_review::domain::{Access, SpaceRole, SpaceRoles, TokenRoles};
use kh_review::store::{scope, PgStore};
use reqwest::StatusCode;
use serde_json::json;
use sqlx::{Connection, PgConnection};
use uuid::Uuid;

use crate::support::app::{expose, keyed, spawn_app, TestApp};

/// Every table that holds a space's rows.
const TABLES: [&str; 8] = [
    "documents",
    "reviews",
    "review_votes",
    "review_claims",
    "comments",
    "audit_log",
    "outbox",
    "idempotency_keys",
];

/// The space `key` with a row in every table of [`TABLES`]: a document submitted with an
/// Idempotency-Key, commented, claimed and approved, and another submitted and claimed (a
/// claim ends with its review's decision). The first document's id.
async fn space_with_rows(app: &TestApp, key: &str) -> String {
    app.space(key).await;
    app.grant(key, "user:ann", &["author"]).await;
    app.grant(key, "user:rob", &["reviewer"]).await;
    let (ann, rob) = (app.member("ann"), app.member("rob"));
    let doc = app
        .document_in(key, &ann, &format!("Handbook of {key}"))
        .await;
    let submit = format!("/api/v1/documents/{doc}/submit");
    let r = keyed(app, &submit, &ann, &format!("submit-{key}"), json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::CREATED);
    let review = r.json::<serde_json::Value>().await.unwrap()["review"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let comment = json!({"body": "One remark."});
    let r = app
        .post(&format!("/api/v1/documents/{doc}/comments"), &ann, comment)
        .await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let r = app
        .post(&format!("/api/v1/reviews/{review}/claim"), &rob, json!({}))
        .await;
    assert!(r.status().is_success(), "claim: {}", r.status());
    let r = app.approve(&review, &rob).await;
    assert_eq!(r.status(), StatusCode::OK);
    let (_, open) = app.pending_in(key, &ann, "Open question").await;
    let r = app
        .post(&format!("/api/v1/reviews/{open}/claim"), &rob, json!({}))
        .await;
    assert!(r.status().is_success(), "claim: {}", r.status());
    doc
}

/// A session of the service's role, in a transaction that declared `declare` (a statement
/// of `set_config`, or none).
async fn service_session(app: &TestApp, declare: Option<&'static str>) -> PgConnection {
    let mut c = PgConnection::connect(expose(&app.settings.database.url))
        .await
        .unwrap();
    sqlx::query("BEGIN").execute(&mut c).await.unwrap();
    if let Some(statement) = declare {
        sqlx::query(statement).execute(&mut c).await.unwrap();
    }
    c
}

async fn rows_of(c: &mut PgConnection, table: &str, space: &str) -> i64 {
    let sql = format!("SELECT count(*) FROM {table} WHERE space_id = $1");
    sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
        .bind(space)
        .fetch_one(c)
        .await
        .unwrap()
}

/// Each table's rows of `space`, as the owner (whom the wall does not hold) counts them.
async fn owner_counts(app: &TestApp, space: &str) -> Vec<i64> {
    let mut c = PgConnection::connect(app.owner_url()).await.unwrap();
    let mut counts = Vec::new();
    for table in TABLES {
        counts.push(rows_of(&mut c, table, space).await);
    }
    counts
}

#[tokio::test]
async fn a_transaction_of_space_a_neither_sees_nor_changes_a_row_of_space_b() {
    let app = spawn_app().await;
    space_with_rows(&app, "hr").await;
    let eng_doc = space_with_rows(&app, "eng").await;
    let before = owner_counts(&app, "eng").await;
    for (table, n) in TABLES.iter().zip(&before) {
        assert!(*n >= 1, "the fixture left no row of eng in {table}");
    }

    let mut hr = service_session(&app, Some("SELECT set_config('kh.spaces', 'hr', true)")).await;
    for table in TABLES {
        assert!(
            rows_of(&mut hr, table, "hr").await >= 1,
            "hr sees its own {table}"
        );
        assert_eq!(
            rows_of(&mut hr, table, "eng").await,
            0,
            "hr sees eng's {table}"
        );
        let sql = format!("SELECT count(*) FROM {table}");
        let all: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
            .fetch_one(&mut hr)
            .await
            .unwrap();
        assert_eq!(
            all,
            rows_of(&mut hr, table, "hr").await,
            "{table} unfiltered"
        );
    }
    titles_of_declared_spaces_only(&mut hr).await;
    // Changes aimed at eng's rows, by id and by space, change nothing.
    let updated = sqlx::query("UPDATE documents SET title = 'taken' WHERE id = $1::uuid")
        .bind(&eng_doc)
        .execute(&mut hr)
        .await
        .unwrap();
    assert_eq!(updated.rows_affected(), 0);
    for table in TABLES {
        let sql = format!("DELETE FROM {table} WHERE space_id = 'eng'");
        let deleted = sqlx::query(sqlx::AssertSqlSafe(sql))
            .execute(&mut hr)
            .await
            .unwrap();
        assert_eq!(deleted.rows_affected(), 0, "hr deleted eng's {table}");
    }
    // A row written into eng from hr's transaction is refused.
    let planted = sqlx::query(
        "INSERT INTO documents (id, title, body, status, version, author_id, space_id) \
         VALUES ($1, 'planted', 'x', 'DRAFT', 1, 'mallory', 'eng')",
    )
    .bind(Uuid::now_v7())
    .execute(&mut hr)
    .await
    .unwrap_err();
    let code = planted.as_database_error().and_then(|e| e.code());
    assert_eq!(code.as_deref(), Some("42501"), "{planted}");
    drop(hr);

    assert_eq!(
        owner_counts(&app, "eng").await,
        before,
        "eng's rows unchanged"
    );
    let title: String = sqlx::query_scalar("SELECT title FROM documents WHERE id = $1::uuid")
        .bind(&eng_doc)
        .fetch_one(&app.pg)
        .await
        .unwrap();
    assert_eq!(title, "Handbook of eng");
    app.finish().await;
}

/// The title search's functions (they run as the owner) answer for declared spaces only,
/// by their index (a pattern with a trigram) and by the space's rows (one without):
/// `kh_title_page`, and `kh_title_matches`, which the previous release calls.
async fn titles_of_declared_spaces_only(hr: &mut PgConnection) {
    let page =
        "SELECT kh_title_page($1, $2, 'ffffffff-ffff-ffff-ffff-ffffffffffff', true, '', NULL, 50)";
    for search in [page, "SELECT kh_title_matches($1, $2)"] {
        for pattern in ["%handbook%", "%of%"] {
            for (space, found) in [("eng", 0), ("hr", 1)] {
                let ids: Vec<Uuid> = sqlx::query_scalar(search)
                    .bind(space)
                    .bind(pattern)
                    .fetch_all(&mut *hr)
                    .await
                    .unwrap();
                let what = format!("{space}'s titles for {pattern} by {search}");
                assert_eq!(ids.len(), found, "hr's transaction searched {what}");
            }
        }
    }
}

#[tokio::test]
async fn nothing_declared_sees_nothing_and_only_the_background_marker_sees_all() {
    let app = spawn_app().await;
    space_with_rows(&app, "hr").await;
    let mut none = service_session(&app, None).await;
    let mut background =
        service_session(&app, Some("SELECT set_config('kh.background', 'on', true)")).await;
    for table in TABLES {
        let sql = format!("SELECT count(*) FROM {table} WHERE space_id IS NOT NULL");
        let seen: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(sql.clone()))
            .fetch_one(&mut none)
            .await
            .unwrap();
        assert_eq!(seen, 0, "{table} seen with no space declared");
        let seen: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
            .fetch_one(&mut background)
            .await
            .unwrap();
        assert!(seen >= 1, "{table} not seen by background work");
    }
    // The declaration ends with its transaction.
    sqlx::query("COMMIT")
        .execute(&mut background)
        .await
        .unwrap();
    assert_eq!(rows_of(&mut background, "documents", "hr").await, 0);
    app.finish().await;
}

#[tokio::test]
async fn the_service_role_cannot_switch_the_wall_off() {
    let app = spawn_app().await;
    space_with_rows(&app, "hr").await;
    let mut c = PgConnection::connect(expose(&app.settings.database.url))
        .await
        .unwrap();
    let facts: (bool, bool, bool) = sqlx::query_as(
        "SELECT r.rolsuper, r.rolbypassrls, \
                EXISTS (SELECT 1 FROM pg_tables WHERE tableowner = current_user) \
         FROM pg_roles r WHERE r.rolname = current_user",
    )
    .fetch_one(&mut c)
    .await
    .unwrap();
    assert_eq!(
        facts,
        (false, false, false),
        "superuser, BYPASSRLS, owns a table"
    );
    for statement in [
        "ALTER TABLE documents DISABLE ROW LEVEL SECURITY",
        "ALTER TABLE documents NO FORCE ROW LEVEL SECURITY",
        "DROP POLICY space_rows ON documents",
        // The titles' copy has no policy: only the title search's functions read it.
        "SELECT id FROM document_titles",
        "UPDATE document_titles SET title = ''",
    ] {
        let refused = sqlx::query(statement).execute(&mut c).await.unwrap_err();
        let code = refused.as_database_error().and_then(|e| e.code());
        assert_eq!(code.as_deref(), Some("42501"), "{statement}: {refused}");
    }
    // With row_security off, a query the policies would filter fails instead of
    // returning everything.
    sqlx::query("SET row_security = off")
        .execute(&mut c)
        .await
        .unwrap();
    let refused = sqlx::query("SELECT count(*) FROM documents")
        .execute(&mut c)
        .await
        .unwrap_err();
    let code = refused.as_database_error().and_then(|e| e.code());
    assert_eq!(code.as_deref(), Some("42501"), "{refused}");
    app.finish().await;
}

/// The access of a member of `space` with `role` there.
fn member_of(space: &str, role: SpaceRole) -> Access {
    let roles = SpaceRoles::NONE.with(role);
    Access::new(TokenRoles::default(), [(space.to_string(), roles)])
}

#[tokio::test]
async fn the_store_asked_from_a_request_of_another_space_finds_nothing() {
    let app = spawn_app().await;
    space_with_rows(&app, "hr").await;
    let eng_doc = space_with_rows(&app, "eng").await;
    let id: Uuid = eng_doc.parse().unwrap();
    // The service's store, as a request's handler holds it; no check of the caller's
    // roles runs here: only the wall.
    let store = PgStore::from_settings(&app.settings.database).unwrap();
    let as_member = |space: &'static str| {
        let (store, access) = (
            store.clone(),
            Arc::new(member_of(space, SpaceRole::Reviewer)),
        );
        scope::serve(async move {
            scope::grant(&access);
            let doc = store.document(id).await.unwrap();
            let history = store.reviews_page(id, 0, 10).await.unwrap();
            (doc.is_some(), history.len())
        })
    };
    let (seen, history) = as_member("hr").await;
    assert!(!seen, "a request of hr read eng's document");
    assert_eq!(history, 0, "a request of hr read eng's reviews");
    let (seen, history) = as_member("eng").await;
    assert!(
        seen && history == 1,
        "a request of eng reads its own document"
    );
    // Outside any request (no scope at all), the request's store sees nothing either.
    assert!(store.document(id).await.unwrap().is_none());
    assert!(store.background().document(id).await.unwrap().is_some());
    store.close().await;
    app.finish().await;
}

#[tokio::test]
async fn a_key_of_a_space_the_caller_left_repeats_nothing() {
    let app = spawn_app().await;
    app.space("hr").await;
    app.grant("hr", "user:ann", &["author"]).await;
    let ann = app.member("ann");
    let body = json!({"title": "Salary bands", "body": "Confidential.", "space": "hr"});
    let send = || {
        keyed(
            &app,
            "/api/v1/documents",
            &ann,
            "create-bands",
            body.clone(),
        )
    };
    let first = send().send().await.unwrap();
    assert_eq!(first.status(), StatusCode::CREATED);
    let again = send().send().await.unwrap();
    assert_eq!(
        again.status(),
        StatusCode::CREATED,
        "a member gets its answer again"
    );
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    app.revoke("hr", "user:ann").await;
    app.grant("default", "user:ann", &["author"]).await; // still someone, elsewhere
    let after = send().send().await.unwrap();
    let status = after.status();
    let text = after.text().await.unwrap();
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{text}");
    assert!(text.contains("IDEMPOTENCY_KEY_REUSED"), "{text}");
    assert!(
        !text.contains("Salary"),
        "the earlier answer leaked: {text}"
    );
    app.finish().await;
}
