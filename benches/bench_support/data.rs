//! Data the benchmark writes straight into the stores: pending reviews to approve, a backlog
//! of other documents' undelivered events, and a knowledge base of a realistic size.

use std::time::Instant;

use kh_review::domain::preview_of;
use kh_review::lock::LockKeys;
use mongodb::bson::doc;
use uuid::Uuid;

use super::{names, BenchEnv};

const TITLE: &str = "Benchmark document";
const BODY: &str = "Body of a benchmark document. It is long enough to have a preview, and \
                    short enough that the benchmark measures the review path, not the body.";

impl BenchEnv {
    /// `n` documents in PENDING_REVIEW with a pending review each, written directly.
    pub async fn make_pending(&self, n: usize) -> anyhow::Result<Vec<Uuid>> {
        self.make_pending_under(n, "default", 1).await
    }

    /// `n` pending reviews under version `version` of the policy `policy` (the documents
    /// projected to MongoDB, as a submit does).
    pub async fn make_pending_under(
        &self,
        n: usize,
        policy: &str,
        version: i32,
    ) -> anyhow::Result<Vec<Uuid>> {
        let (docs, reviews) = self.make_pending_pg(n, policy, version).await?;
        let pending: Vec<_> = docs
            .iter()
            .zip(&reviews)
            .map(|(d, r)| projection(*d, *r, "PENDING_REVIEW", 2))
            .collect();
        self.insert_projections(pending).await?;
        Ok(reviews)
    }

    /// `n` pending reviews under `policy` in PostgreSQL alone: (documents, reviews).
    pub async fn make_pending_pg(
        &self,
        n: usize,
        policy: &str,
        version: i32,
    ) -> anyhow::Result<(Vec<Uuid>, Vec<Uuid>)> {
        let docs: Vec<Uuid> = (0..n).map(|_| Uuid::now_v7()).collect();
        let reviews: Vec<Uuid> = (0..n).map(|_| Uuid::now_v7()).collect();
        let mut tx = self.pg.begin().await?;
        insert_documents(&mut tx, &docs, "PENDING_REVIEW", 2).await?;
        if policy != "default" {
            sqlx::query("UPDATE documents SET policy = $2 WHERE id = ANY($1)")
                .bind(&docs)
                .bind(policy)
                .execute(&mut *tx)
                .await?;
        }
        sqlx::query(
            "INSERT INTO reviews (id, document_id, status, document_version, submitted_by, policy, policy_version) \
             SELECT r, d, 'PENDING', 2, 'bench-author', $3, $4 FROM unnest($1::uuid[], $2::uuid[]) AS t(r, d)",
        )
        .bind(&reviews)
        .bind(&docs)
        .bind(policy)
        .bind(version)
        .execute(&mut *tx)
        .await?;
        set_current_reviews(&mut tx, &reviews, &docs).await?;
        tx.commit().await?;
        Ok((docs, reviews))
    }

    /// `n` documents, each with one undelivered `document.approved` outbox row (due now,
    /// claimed by no one): the backlog an outage leaves behind.
    pub async fn make_backlog(&self, n: usize) -> anyhow::Result<()> {
        let docs: Vec<Uuid> = (0..n).map(|_| Uuid::now_v7()).collect();
        let mut tx = self.pg.begin().await?;
        insert_documents(&mut tx, &docs, "APPROVED", 3).await?;
        sqlx::query(
            "INSERT INTO outbox (event_id, document_id, document_version, event_type, routing_key, payload) \
             SELECT gen_random_uuid(), d, 3, 'document.approved', 'document.approved', \
                    jsonb_build_object('document_id', d, 'event_type', 'document.approved', 'document_version', 3) \
             FROM unnest($1::uuid[]) AS t(d)",
        )
        .bind(&docs)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    /// A knowledge base of `n` approved documents in every store: PostgreSQL (document, its
    /// approved review, audit row and delivered outbox row), MongoDB (its projection, in the
    /// shape the service writes) and Redis (its fence counter). Returns the seconds it took.
    pub async fn preload(&self, n: usize) -> anyhow::Result<f64> {
        let started = Instant::now();
        let keys = LockKeys::new(names().redis_prefix.as_str());
        for chunk in (0..n).collect::<Vec<_>>().chunks(10_000) {
            let docs: Vec<Uuid> = chunk.iter().map(|_| Uuid::now_v7()).collect();
            let reviews: Vec<Uuid> = chunk.iter().map(|_| Uuid::now_v7()).collect();
            self.preload_pg(&docs, &reviews).await?;
            self.preload_mongo(&docs, &reviews).await?;
            let mut redis = self.redis()?.get_multiplexed_async_connection().await?;
            let mut pipe = redis::pipe();
            for r in &reviews {
                let fence = format!("{}:fence", keys.for_review(*r));
                pipe.cmd("SET")
                    .arg(fence)
                    .arg(1)
                    .arg("EX")
                    .arg(86_400)
                    .ignore();
            }
            let () = pipe.query_async(&mut redis).await?;
        }
        sqlx::query("ANALYZE").execute(&self.pg).await?;
        Ok(started.elapsed().as_secs_f64())
    }

    async fn preload_pg(&self, docs: &[Uuid], reviews: &[Uuid]) -> anyhow::Result<()> {
        let mut tx = self.pg.begin().await?;
        insert_documents(&mut tx, docs, "APPROVED", 3).await?;
        sqlx::query(
            "INSERT INTO reviews (id, document_id, status, document_version, submitted_by, decided_by, decided_at) \
             SELECT r, d, 'APPROVED', 2, 'bench-author', 'bench-reviewer', now() \
             FROM unnest($1::uuid[], $2::uuid[]) AS t(r, d)",
        )
        .bind(reviews)
        .bind(docs)
        .execute(&mut *tx)
        .await?;
        set_current_reviews(&mut tx, reviews, docs).await?;
        sqlx::query(
            "INSERT INTO audit_log (document_id, review_id, action, actor_id, from_status, to_status, document_version, lock_mode) \
             SELECT d, r, 'approve', 'bench-reviewer', 'PENDING_REVIEW', 'APPROVED', 3, 'redis' \
             FROM unnest($1::uuid[], $2::uuid[]) AS t(r, d)",
        )
        .bind(reviews)
        .bind(docs)
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "INSERT INTO outbox (event_id, document_id, document_version, event_type, routing_key, payload, projected_at, published_at, done_at) \
             SELECT gen_random_uuid(), d, 3, 'document.approved', 'document.approved', '{}'::jsonb, now(), now(), now() \
             FROM unnest($1::uuid[]) AS t(d)",
        )
        .bind(docs)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    async fn preload_mongo(&self, docs: &[Uuid], reviews: &[Uuid]) -> anyhow::Result<()> {
        let projections = docs
            .iter()
            .zip(reviews)
            .map(|(d, r)| projection(*d, *r, "APPROVED", 3))
            .collect();
        self.insert_projections(projections).await
    }

    async fn insert_projections(&self, docs: Vec<mongodb::bson::Document>) -> anyhow::Result<()> {
        let client = mongodb::Client::with_uri_str(&self.mongo_url).await?;
        let coll = client
            .database(&names().db)
            .collection::<mongodb::bson::Document>("documents");
        for batch in docs.chunks(1000) {
            coll.insert_many(batch.to_vec()).await?;
        }
        Ok(())
    }
}

/// Inserts the documents `ids`, all in `status` at `version`.
async fn insert_documents(
    tx: &mut sqlx::PgConnection,
    ids: &[Uuid],
    status: &str,
    version: i64,
) -> anyhow::Result<()> {
    sqlx::query(
        "INSERT INTO documents (id, title, body, status, version, author_id) \
         SELECT unnest($1::uuid[]), $2, $3, $4, $5, 'bench-author'",
    )
    .bind(ids)
    .bind(TITLE)
    .bind(BODY)
    .bind(status)
    .bind(version)
    .execute(tx)
    .await?;
    Ok(())
}

/// Makes each review its document's current one.
/// Points each of `docs` at its review in `reviews` (its current one).
pub(super) async fn set_current_reviews(
    tx: &mut sqlx::PgConnection,
    reviews: &[Uuid],
    docs: &[Uuid],
) -> anyhow::Result<()> {
    sqlx::query(
        "UPDATE documents d SET current_review_id = t.r \
         FROM unnest($1::uuid[], $2::uuid[]) AS t(r, id) WHERE d.id = t.id",
    )
    .bind(reviews)
    .bind(docs)
    .execute(tx)
    .await?;
    Ok(())
}

/// A document's projection, in the shape the service writes.
fn projection(id: Uuid, review: Uuid, status: &str, version: i64) -> mongodb::bson::Document {
    doc! {
        "_id": id.to_string(), "title": TITLE, "body": BODY, "preview": preview_of(BODY),
        "status": status, "version": version, "author_id": "bench-author",
        "current_review_id": review.to_string(), "updated_at": chrono::Utc::now().to_rfc3339(),
    }
}
