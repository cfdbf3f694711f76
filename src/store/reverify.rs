//! The re-verification scheduler's statements: open the re-verifications that came due, and
//! expire the documents whose re-verification nobody decided by its deadline. Each pass is
//! one transaction: one statement finds and locks its rows, skipping those another
//! transaction holds (`FOR UPDATE SKIP LOCKED`, so instances never wait for each other nor
//! take the same row), at most `limit` of them; then each is planned by the rules
//! (`domain::reverify`) under its locks and written like any transition. What a pass
//! changes moves its rows out of what the next one finds (an opened re-verification clears
//! `verify_by`; an expiry decides the review), so each happens once, whichever instance
//! gets to it, and a pass that fails changes nothing.

use uuid::Uuid;

use super::documents::lock_document;
use super::error::{StoreError, WriteError};
use super::pg::{PgStore, Statement};
use super::policies::current_policy;
use super::reviews::rows::lock_review;
use super::tx::WriteContext;
use crate::domain::{reverify, Locked};

impl PgStore {
    /// Opens a re-verification on up to `limit` published documents past their `verify_by`,
    /// each with one `document.reverification_due` event; how many were opened.
    pub async fn open_due_reverifications(
        &self,
        limit: i64,
        ctx: &WriteContext<'_>,
    ) -> Result<u64, WriteError> {
        let mut tx = self.begin().await?;
        let due = sqlx::query_scalar!(
            "SELECT id FROM documents
             WHERE verify_by IS NOT NULL AND status <> 'PENDING_REVIEW' AND verify_by <= now()
             ORDER BY verify_by LIMIT $1
             FOR UPDATE SKIP LOCKED",
            limit
        )
        .fetch_all(&mut *tx)
        .await
        .map_err(StoreError::from)?;
        let mut opened = 0;
        for id in due {
            let Some((doc, head)) = lock_document(&mut tx, id).await? else {
                continue;
            };
            let Some(policy) = current_policy(&mut *tx, &doc.policy).await? else {
                continue;
            };
            let Some(plan) = reverify::plan_due(&doc, &policy, Uuid::now_v7(), head.now) else {
                continue;
            };
            let locked = Locked {
                now: head.now,
                document: Some(doc),
                ..Locked::default()
            };
            tx = self
                .write_planned(tx, locked, Some(head), plan, ctx)
                .await?
                .0;
            opened += 1;
        }
        tx.commit().await.map_err(StoreError::from)?;
        Ok(opened)
    }

    /// Expires up to `limit` documents whose open re-verification is past its deadline,
    /// each with one `document.expired` event; how many expired.
    pub async fn expire_lapsed_reverifications(
        &self,
        limit: i64,
        ctx: &WriteContext<'_>,
    ) -> Result<u64, WriteError> {
        let mut tx = self.begin().await?;
        let lapsed = sqlx::query!(
            r#"SELECT r.id, r.document_id FROM reviews r JOIN documents d ON d.id = r.document_id
               WHERE r.kind = 'reverify' AND r.status = 'PENDING' AND r.due_at <= now()
               ORDER BY r.due_at LIMIT $1
               FOR UPDATE OF d, r SKIP LOCKED"#,
            limit
        )
        .fetch_all(&mut *tx)
        .await
        .map_err(StoreError::from)?;
        let mut expired = 0;
        for row in lapsed {
            let Some((doc, head)) = lock_document(&mut tx, row.document_id).await? else {
                continue;
            };
            let (Some(review), now) = lock_review(&mut tx, row.id).await? else {
                continue;
            };
            let Some(plan) = reverify::plan_lapse(&doc, &review, now) else {
                continue;
            };
            let locked = Locked {
                document: Some(doc),
                review: Some(review),
                now,
                ..Locked::default()
            };
            tx = self
                .write_planned(tx, locked, Some(head), plan, ctx)
                .await?
                .0;
            expired += 1;
        }
        tx.commit().await.map_err(StoreError::from)?;
        Ok(expired)
    }

    /// Published documents past their `verify_by` with no re-verification opened yet, and
    /// how long the oldest has waited, in seconds (the scheduler's lag).
    pub async fn reverification_lag(&self) -> Result<(i64, f64), StoreError> {
        let row = sqlx::query!(
            r#"SELECT count(*) AS "rows!",
                      EXTRACT(EPOCH FROM now() - min(verify_by))::float8 AS lag
               FROM documents
               WHERE verify_by IS NOT NULL AND status <> 'PENDING_REVIEW' AND verify_by <= now()"#
        )
        .fetch_one(&mut *self.scoped().await?)
        .bounded(self)
        .await?;
        Ok((row.rows, row.lag.unwrap_or(0.0)))
    }
}
