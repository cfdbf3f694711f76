//! A document's edit-lease row as a transaction reads it, under the document's row lock: an
//! edit's (the rules judge it) and a lease break's. The rows are kept by the database lock
//! provider (`lock::postgres`) under `domain::leases::lease_key`.

use sqlx::{Postgres, Transaction};
use uuid::Uuid;

use super::error::StoreError;
use crate::domain::leases::{lease_key, EditLease};

/// The document's lease row, as this transaction reads it (`None`: it never had one).
pub(super) async fn read_lease(
    tx: &mut Transaction<'static, Postgres>,
    document_id: Uuid,
) -> Result<Option<EditLease>, StoreError> {
    let row = sqlx::query!(
        r#"SELECT holder, owner_token, expires_at,
                  owner_token IS NOT NULL AND expires_at > clock_timestamp() AS "live!",
                  GREATEST(ceil(extract(epoch FROM expires_at - clock_timestamp())), 0)::int8
                    AS "secs!"
           FROM locks WHERE key = $1"#,
        lease_key(document_id)
    )
    .fetch_optional(&mut **tx)
    .await?;
    Ok(row.map(|r| EditLease {
        holder: r.holder,
        token: r.owner_token,
        expires_at: r.expires_at,
        live: r.live,
        retry_after_secs: r.secs.max(0) as u64,
    }))
}
