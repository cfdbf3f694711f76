//! Documents and reviews written straight into PostgreSQL, for tests that need many of them
//! or a state the API would take long to reach: no audit rows, no outbox rows, no events.
//! One function per fixture; a test that needs more rows of its own (a backlog's outbox
//! rows, expired records) writes them beside these.

use uuid::Uuid;

use super::app::{TestApp, AUTHOR};

impl TestApp {
    /// `n` documents of the author's at `status` and `version`, each titled `Seeded`; an
    /// APPROVED one is published at its version, as the service keeps it. Their ids, in
    /// the order written (time-ordered).
    pub async fn documents_in_db(&self, n: usize, status: &str, version: i64) -> Vec<Uuid> {
        let ids: Vec<Uuid> = (0..n).map(|_| Uuid::now_v7()).collect();
        sqlx::query(
            "INSERT INTO documents (id, title, body, status, version, author_id, \
                                    published_version, published_title, published_body) \
             SELECT d, 'Seeded', 'Body', $2, $3, $4, p.version, p.title, p.body \
             FROM unnest($1::uuid[]) AS d \
             LEFT JOIN (VALUES ($3::int8, 'Seeded', 'Body')) AS p (version, title, body) \
               ON $2 = 'APPROVED'",
        )
        .bind(&ids)
        .bind(status)
        .bind(version)
        .bind(AUTHOR)
        .execute(&self.pg)
        .await
        .unwrap();
        ids
    }

    /// `n` pending reviews, each of a document of its own at version 2: the reviews' ids.
    pub async fn pending_reviews_in_db(&self, n: usize) -> Vec<String> {
        let docs = self.documents_in_db(n, "PENDING_REVIEW", 2).await;
        let reviews: Vec<Uuid> = (0..n).map(|_| Uuid::now_v7()).collect();
        sqlx::query(
            "INSERT INTO reviews (id, document_id, status, document_version, submitted_by) \
             SELECT r, d, 'PENDING', 2, $3 FROM unnest($1::uuid[], $2::uuid[]) AS x (r, d)",
        )
        .bind(&reviews)
        .bind(&docs)
        .bind(AUTHOR)
        .execute(&self.pg)
        .await
        .unwrap();
        sqlx::query(
            "UPDATE documents SET current_review_id = x.r \
             FROM unnest($1::uuid[], $2::uuid[]) AS x (r, d) WHERE documents.id = x.d",
        )
        .bind(&reviews)
        .bind(&docs)
        .execute(&self.pg)
        .await
        .unwrap();
        reviews.iter().map(Uuid::to_string).collect()
    }
}
