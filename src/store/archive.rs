//! Archiving a document: a transition under the document's outer lock, withdrawing a
//! pending review.

use chrono::Utc;
use uuid::Uuid;

use super::documents::lock_document;
use super::error::WriteError;
use super::pg::PgStore;
use super::reviews::rows::lock_review;
use super::tx::{Uncommitted, WriteContext};
use crate::domain::rules;
use crate::domain::{ArchiveReason, Archived, Command, DocumentStatus, Locked};

impl PgStore {
    /// Any status but ARCHIVED -> ARCHIVED, a pending review withdrawn; uncommitted.
    #[tracing::instrument(level = "debug", skip_all, fields(document_id = %document_id))]
    pub async fn write_archive(
        &self,
        document_id: Uuid,
        reason: Option<ArchiveReason>,
        expected_version: Option<i64>,
        ctx: &WriteContext<'_>,
    ) -> Result<Uncommitted<Archived>, WriteError> {
        let mut tx = self.begin().await?;
        let (document, head) = lock_document(&mut tx, document_id).await?.unzip();
        let pending = document
            .as_ref()
            .filter(|d| d.status == DocumentStatus::PendingReview)
            .and_then(|d| d.current_review_id);
        let (review, now) = match pending {
            Some(id) => lock_review(&mut tx, id).await?,
            None => (None, Utc::now()),
        };
        let locked = Locked {
            document,
            review,
            policy: None,
            lease: None,
            now,
        };
        let command = Command::Archive {
            reason,
            expected_version,
        };
        let plan =
            rules::plan_conditional(&locked, ctx.reader(), command, ctx.guard, ctx.conditions)?;
        let (tx, document, review, owned) = self.write_planned(tx, locked, head, plan, ctx).await?;
        let archived = Archived { document, review };
        Ok(Uncommitted::new(tx, archived, owned).in_space(|a| a.document.space.clone()))
    }
}
