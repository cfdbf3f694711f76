//! Whether a caller may see a document or a review at all, read on the access pool (where
//! the caller's memberships are read): a storm of requests refused for contention checks
//! what they named there, never holding a connection the transactions need.

use uuid::Uuid;

use crate::domain::{readable, Reader};
use crate::store::error::StoreError;
use crate::store::pg::{PgStore, Statement};

impl PgStore {
    /// Whether `reader` may see the document `id` (`None`: no such document).
    pub async fn document_visible(
        &self,
        id: Uuid,
        reader: Reader<'_>,
    ) -> Result<Option<bool>, StoreError> {
        let row = sqlx::query!(
            r#"SELECT author_id, space_id, current_review_id IS NOT NULL AS "submitted!"
               FROM documents WHERE id = $1"#,
            id
        )
        .fetch_optional(&mut *self.scoped_access().await?)
        .bounded(self)
        .await?;
        Ok(row.map(|r| readable(&r.author_id, r.submitted, &r.space_id, reader)))
    }

    /// Whether `reader` may see the review `id`, as it may see its document (`None`: no
    /// such review).
    pub async fn review_visible(
        &self,
        id: Uuid,
        reader: Reader<'_>,
    ) -> Result<Option<bool>, StoreError> {
        let row = sqlx::query!(
            r#"SELECT d.author_id, d.space_id, d.current_review_id IS NOT NULL AS "submitted!"
               FROM reviews r JOIN documents d ON d.id = r.document_id WHERE r.id = $1"#,
            id
        )
        .fetch_optional(&mut *self.scoped_access().await?)
        .bounded(self)
        .await?;
        Ok(row.map(|r| readable(&r.author_id, r.submitted, &r.space_id, reader)))
    }
}
