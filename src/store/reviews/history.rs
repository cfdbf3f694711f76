//! A document's review history, read page by page in commit order.

use uuid::Uuid;

use super::rows::ReviewRow;
use crate::domain::{FencingToken, Review, ReviewKind, ReviewStatus};
use crate::store::error::StoreError;
use crate::store::pg::{PgStore, Statement};

impl PgStore {
    /// The document's reviews after the one numbered `after` in commit order, oldest first,
    /// at most `limit`, each with its number (the page's cursor).
    pub async fn reviews_page(
        &self,
        document_id: Uuid,
        after: i64,
        limit: i64,
    ) -> Result<Vec<(i64, Review)>, StoreError> {
        let rows = sqlx::query!(
            r#"SELECT id, document_id, status AS "status: ReviewStatus", document_version,
                      submitted_by, submitted_at, decided_by, decided_at, comment, reason,
                      fence_token AS "fence_token: FencingToken", policy, policy_version,
                      stage, due_at, kind AS "kind: ReviewKind", queue_seq
               FROM reviews WHERE document_id = $1 AND queue_seq > $2
               ORDER BY queue_seq LIMIT $3"#,
            document_id,
            after,
            limit
        )
        .fetch_all(&mut *self.scoped().await?)
        .bounded(self)
        .await?;
        let seqs: Vec<i64> = rows.iter().map(|r| r.queue_seq).collect();
        let rows = rows
            .into_iter()
            .map(|r| ReviewRow {
                id: r.id,
                document_id: r.document_id,
                status: r.status,
                document_version: r.document_version,
                submitted_by: r.submitted_by,
                submitted_at: r.submitted_at,
                decided_by: r.decided_by,
                decided_at: r.decided_at,
                comment: r.comment,
                reason: r.reason,
                fence_token: r.fence_token,
                policy: r.policy,
                policy_version: r.policy_version,
                stage: r.stage,
                due_at: r.due_at,
                kind: r.kind,
            })
            .collect();
        let reviews = self.with_flows(rows).await?;
        Ok(seqs.into_iter().zip(reviews).collect())
    }
}
