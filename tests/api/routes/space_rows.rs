//! Every row of a document is in its document's space, whoever writes it: the rows the
//! service's writes name a space for (a transition's audit and outbox rows, a comment, a
//! vote, a claim: the space read with the document locked) and the rows that name none
//! (every row the previous release writes), which the space triggers fill from the document
//! or review (migration 20261219000001 fires them only for those).

use reqwest::StatusCode;
use serde_json::json;

use crate::support::app::{spawn_app, TestApp};

/// The spaces the rows of `doc` (and of its review) are in, with how many rows each table
/// holds: `[table, rows, spaces]`, as the tables' owner sees them.
async fn spaces_of_rows(app: &TestApp, doc: &str) -> Vec<(String, i64, Vec<String>)> {
    sqlx::query_as(
        "WITH r AS (SELECT id FROM reviews WHERE document_id = $1::uuid), \
              rows AS ( \
                SELECT 'audit_log' AS t, space_id FROM audit_log WHERE document_id = $1::uuid \
                UNION ALL SELECT 'outbox', space_id FROM outbox WHERE document_id = $1::uuid \
                UNION ALL SELECT 'comments', space_id FROM comments WHERE document_id = $1::uuid \
                UNION ALL SELECT 'review_votes', space_id FROM review_votes \
                          WHERE review_id IN (SELECT id FROM r) \
                UNION ALL SELECT 'review_claims', space_id FROM review_claims \
                          WHERE review_id IN (SELECT id FROM r)) \
         SELECT t, count(*), array_agg(DISTINCT COALESCE(space_id, 'NULL')) \
         FROM rows GROUP BY t ORDER BY t",
    )
    .bind(doc)
    .fetch_all(&app.pg)
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_documents_rows_are_in_its_space_named_or_filled() {
    let app = spawn_app().await;
    app.space("hr").await;
    app.grant("hr", "user:ann", &["author"]).await;
    app.grant("hr", "user:rex", &["reviewer"]).await;
    let (ann, rex) = (app.member("ann"), app.member("rex"));
    let (doc, review) = app.pending_in("hr", &ann, "Leave policy").await;
    let path = format!("/api/v1/documents/{doc}/comments");
    let r = app.post(&path, &ann, json!({"body": "Ready."})).await;
    assert_eq!(
        r.status(),
        StatusCode::CREATED,
        "{}",
        r.text().await.unwrap()
    );
    let r = app.claim(&review, &rex).await;
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap());
    let rows = |t: &str, n: i64| (t.to_string(), n, vec!["hr".to_string()]);
    // The claim's row, and its audit row, in the document's space.
    let claimed = spaces_of_rows(&app, &doc).await;
    assert!(claimed.contains(&rows("review_claims", 1)), "{claimed:?}");
    let r = app.approve(&review, &rex).await;
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap());
    // created, submitted, commented, claimed, approved; the claim's row ended by the vote.
    let expected = vec![
        rows("audit_log", 5),
        rows("comments", 1),
        rows("outbox", 4),
        rows("review_votes", 1),
    ];
    assert_eq!(spaces_of_rows(&app, &doc).await, expected);
    // A row written as the previous release writes them, naming no space, is in its
    // document's space all the same.
    sqlx::query(
        "INSERT INTO comments (document_id, seq, id, review_id, author_id, body) \
         VALUES ($1::uuid, 2, gen_random_uuid(), NULL, 'ann', 'Old writer.')",
    )
    .bind(&doc)
    .execute(&app.pg)
    .await
    .unwrap();
    let after = spaces_of_rows(&app, &doc).await;
    assert!(after.contains(&rows("comments", 2)), "{after:?}");
    app.finish().await;
}
