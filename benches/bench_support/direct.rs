//! The floor: the review path's statements, MongoDB write and confirmed publish, issued by
//! the benchmark itself with no service in between.

use std::sync::Arc;

use lapin::options::ConfirmSelectOptions;
use lapin::{BasicProperties, Channel, Connection};
use serde_json::json;
use sqlx::PgPool;
use uuid::Uuid;

use super::cost::cpu_seconds;
use super::publish::publish_confirmed;
use super::{connect_amqp, drive, BenchEnv, Figures, DB};

/// (document, version before, event id, event body, outbox row id)
type Approval = (Uuid, i64, Uuid, serde_json::Value, i64);

impl BenchEnv {
    /// The floor at `conc`: `n` pending reviews approved through [`Direct`], every event
    /// checked on the queue. Also returns the CPU seconds this process spent driving them
    /// (the store clients' own work, with no service in between).
    pub async fn floor(&self, conc: usize, n: usize) -> anyhow::Result<(Figures, f64)> {
        let reviews = Arc::new(self.make_pending(n).await?);
        self.purge_queue().await?;
        let direct = Arc::new(self.direct().await?);
        let cpu_before = cpu_seconds("self");
        let figures = drive(conc, n, move |i| {
            let (direct, reviews) = (direct.clone(), reviews.clone());
            async move {
                direct.approve(reviews[i]).await?;
                anyhow::Ok(true)
            }
        })
        .await?;
        let cpu = cpu_seconds("self") - cpu_before;
        self.expect_queue(n).await?;
        Ok((figures, cpu))
    }

    pub async fn direct(&self) -> anyhow::Result<Direct> {
        let conn = connect_amqp(&self.amqp_url).await?;
        let ch = conn.create_channel().await?;
        ch.confirm_select(ConfirmSelectOptions::default()).await?;
        let mongo = mongodb::Client::with_uri_str(&self.mongo_url).await?;
        Ok(Direct {
            pg: self.pg.clone(),
            mongo: mongo.database(DB).collection("documents"),
            ch,
            _conn: conn,
        })
    }
}

/// The review path's statements, MongoDB update and confirmed publish, without the service.
pub struct Direct {
    pg: PgPool,
    mongo: mongodb::Collection<mongodb::bson::Document>,
    ch: Channel,
    _conn: Connection,
}

impl Direct {
    /// The floor of one approval: the service's statements, MongoDB write and confirmed
    /// publish, issued directly.
    pub async fn approve(&self, review_id: Uuid) -> anyhow::Result<()> {
        let (doc, version, event_id, payload, outbox_id) = self.commit_approval(review_id).await?;
        self.project_and_publish(doc, version, event_id, &payload, outbox_id)
            .await
    }

    /// The transaction: row locks, the two updates, the audit row and the outbox row, in
    /// the service's statements.
    async fn commit_approval(&self, review_id: Uuid) -> anyhow::Result<Approval> {
        // lock_timeout is a session setting in the service too: no statement for it here.
        let mut tx = self.pg.begin().await?;
        let (doc, version, status): (Uuid, i64, String) = sqlx::query_as(
            "SELECT id, version, status FROM documents \
             WHERE id = (SELECT document_id FROM reviews WHERE id = $1) FOR UPDATE",
        )
        .bind(review_id)
        .fetch_one(&mut *tx)
        .await?;
        let rstatus: String =
            sqlx::query_scalar("SELECT status FROM reviews WHERE id = $1 FOR UPDATE")
                .bind(review_id)
                .fetch_one(&mut *tx)
                .await?;
        anyhow::ensure!(
            status == "PENDING_REVIEW" && rstatus == "PENDING",
            "not pending"
        );
        sqlx::query("UPDATE reviews SET status = 'APPROVED', decided_by = 'floor', decided_at = now() WHERE id = $1")
            .bind(review_id)
            .execute(&mut *tx)
            .await?;
        sqlx::query("UPDATE documents SET status = 'APPROVED', version = version + 1, updated_at = now() WHERE id = $1")
            .bind(doc)
            .execute(&mut *tx)
            .await?;
        let event_id = Uuid::now_v7();
        let payload = json!({"event_id": event_id, "event_type": "document.approved", "document_id": doc,
                             "review_id": review_id, "document_version": version + 1, "actor_id": "floor", "data": {}});
        let outbox_id: i64 = sqlx::query_scalar(
            // The service's one statement for the audit row and the outbox row: the outbox
            // row is owned by the committing request unless an earlier row of the document
            // is undelivered; here for an hour, so that the service instances running on
            // this database never deliver the floor's rows.
            "WITH audit AS (INSERT INTO audit_log (document_id, review_id, action, actor_id, from_status, to_status, document_version, lock_mode) \
                            VALUES ($2, $5, 'approve', 'floor', 'PENDING_REVIEW', 'APPROVED', $3, 'none')), \
                  earlier AS (SELECT EXISTS (SELECT 1 FROM outbox WHERE document_id = $2 AND done_at IS NULL) AS waiting) \
             INSERT INTO outbox (event_id, document_id, document_version, event_type, routing_key, payload, claimed_until, claim_token) \
             SELECT $1, $2, $3, 'document.approved', 'document.approved', $4, \
                    CASE WHEN waiting THEN NULL ELSE now() + interval '1 hour' END, \
                    CASE WHEN waiting THEN NULL ELSE gen_random_uuid() END \
             FROM earlier RETURNING id",
        )
        .bind(event_id)
        .bind(doc)
        .bind(version + 1)
        .bind(&payload)
        .bind(review_id)
        .fetch_one(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok((doc, version, event_id, payload, outbox_id))
    }

    /// After COMMIT: the MongoDB write, the confirmed publish, and the outbox row marked.
    async fn project_and_publish(
        &self,
        doc: Uuid,
        version: i64,
        event_id: Uuid,
        payload: &serde_json::Value,
        outbox_id: i64,
    ) -> anyhow::Result<()> {
        // The same MongoDB write the service makes: the guarded update, or an insert when
        // nothing matched.
        let fields = mongodb::bson::doc! {"status": "APPROVED", "version": version + 1, "body": "Body of a benchmark document."};
        let updated = self
            .mongo
            .update_one(
                mongodb::bson::doc! {"_id": doc.to_string(), "version": {"$lt": version + 1}},
                mongodb::bson::doc! {"$set": fields.clone()},
            )
            .await?;
        if updated.matched_count == 0 {
            let mut full = fields;
            full.insert("_id", doc.to_string());
            self.mongo.insert_one(full).await?;
        }
        let props = BasicProperties::default()
            .with_delivery_mode(2)
            .with_message_id(event_id.to_string().into());
        publish_confirmed(&self.ch, &serde_json::to_vec(payload)?, props).await?;
        sqlx::query("UPDATE outbox SET projected_at = now(), published_at = now(), done_at = now() WHERE id = $1")
            .bind(outbox_id)
            .execute(&self.pg)
            .await?;
        Ok(())
    }
}
