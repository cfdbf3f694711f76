//! The audit chain's check, as operators run it (`GET /api/v1/admin/audit/verify`, and the
//! `kh-review audit verify` command): every chain, or one document's.

use uuid::Uuid;

use crate::store::{PgStore, StoreError, Verified};

/// Why a check did not run.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    #[error("no document {0}")]
    NoSuchDocument(Uuid),
    #[error(transparent)]
    Store(#[from] StoreError),
}

pub struct AuditService {
    store: PgStore,
}

impl AuditService {
    pub fn new(store: PgStore) -> Self {
        Self { store }
    }

    /// Checks the chain of `document` (which must exist), or every chain.
    pub async fn verify(&self, document: Option<Uuid>) -> Result<Verified, AuditError> {
        if let Some(id) = document {
            if self.store.document(id).await?.is_none() {
                return Err(AuditError::NoSuchDocument(id));
            }
        }
        Ok(self.store.verify_audit(document).await?)
    }
}
