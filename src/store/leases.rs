//! A document's edit lease as the store sees it: read under the document's row lock by an
//! edit (the rules judge it), and broken by a space admin with its audit row and event, in
//! one transaction. The lease rows themselves are taken, renewed and given back by the
//! database lock provider (`lock::postgres`); both read the `locks` table by
//! `domain::leases::lease_key`.

use uuid::Uuid;

use super::documents::lock_document;
use super::error::WriteError;
use super::lease_row::read_lease;
use super::pg::PgStore;
use super::tx::{write_audit_and_event, Uncommitted, WriteContext};
use crate::domain::leases::{lease_key, plan_lease_break};
use crate::domain::{Document, Refusal};

/// What breaking a lease did: whose it was, and the document.
#[derive(Debug, Clone, PartialEq)]
pub struct BrokenLease {
    pub holder: String,
    pub document: Document,
}

impl PgStore {
    /// Breaks the live edit lease on the document (a space admin's or the admin's), with its
    /// audit row and its `document.lease_broken` event; uncommitted. Not found when nobody
    /// holds one.
    #[tracing::instrument(level = "debug", skip_all, fields(document_id = %document_id))]
    pub async fn write_lease_break(
        &self,
        document_id: Uuid,
        ctx: &WriteContext<'_>,
    ) -> Result<Uncommitted<BrokenLease>, WriteError> {
        let mut tx = self.begin().await?;
        let (document, head) = lock_document(&mut tx, document_id).await?.unzip();
        let doc = document.ok_or(Refusal::NotFound)?;
        let lease = read_lease(&mut tx, document_id).await?.filter(|l| l.live);
        let holder = lease.and_then(|l| l.holder).unwrap_or_default();
        let plan = plan_lease_break(&doc, ctx.reader(), &holder)?;
        let broken = sqlx::query!(
            "UPDATE locks SET owner_token = NULL WHERE key = $1 AND owner_token IS NOT NULL \
             AND expires_at > clock_timestamp()",
            lease_key(document_id)
        )
        .execute(&mut *tx)
        .await?;
        if broken.rows_affected() == 0 {
            return Err(Refusal::NoLease.into());
        }
        let head = head.ok_or_else(|| anyhow::anyhow!("a lease break without a chain head"))?;
        let link = self
            .audit
            .at(head)
            .link(doc.id, &plan.audit, doc.version, ctx);
        let at = link.at;
        let owned =
            write_audit_and_event(&mut tx, &doc, &plan.audit, &plan.outbox, ctx, at, &link).await?;
        let value = BrokenLease {
            holder,
            document: doc,
        };
        Ok(Uncommitted::new(tx, value, owned).in_space(|b| b.document.space.clone()))
    }
}
