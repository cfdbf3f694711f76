//! Whether a space exists: what the platform admin, who holds every role in every space,
//! is told about a key no space has (404, as anyone else is).

use crate::store::error::StoreError;
use crate::store::pg::{PgStore, Statement};

impl PgStore {
    /// A space of this key exists.
    pub async fn space_exists(&self, key: &str) -> Result<bool, StoreError> {
        sqlx::query_scalar!(
            r#"SELECT EXISTS (SELECT 1 FROM spaces WHERE key = $1) AS "exists!""#,
            key
        )
        .fetch_one(&self.pool)
        .bounded(self)
        .await
    }
}
