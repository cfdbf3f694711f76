//! Edit leases: a person's check-out of a document (`POST /documents/{id}/lease`), kept by
//! the database lock provider under [`lease_key`]. While a live lease is held, an edit by
//! anyone else is refused (`DocumentLeased`); the holder's edits carry its token, and a token
//! whose lease expired or was broken is refused (`LeaseLost`). Both are judged under the
//! document's row lock, on the lease row as it then is: a holder paused past its lease never
//! overwrites the next holder's edit. A space admin (or the admin) breaks anyone's lease;
//! that is audited and announced (`document.lease_broken`).

use uuid::Uuid;

use super::events::{EventData, OutboxEntry};
pub use super::model::EditLease;
use super::model::{Document, Guard, Reader};
use super::plan::{AuditEntry, Refusal};

/// The key of a document's edit lease.
pub fn lease_key(document_id: Uuid) -> String {
    format!("lease:doc:{document_id}")
}

/// What a write presents of an edit lease: the `Lease-Token` it carries, if any.
pub fn check_lease(
    lease: Option<&EditLease>,
    actor: &str,
    presented: Option<&str>,
) -> Result<(), Refusal> {
    let live = lease.filter(|l| l.live);
    match (presented, live) {
        (Some(token), Some(l)) if l.token.as_deref() == Some(token) => Ok(()),
        (Some(_), _) => Err(Refusal::LeaseLost),
        (None, Some(l)) if l.holder.as_deref() != Some(actor) => Err(Refusal::DocumentLeased {
            holder: l.holder.clone().unwrap_or_default(),
            until: l.expires_at,
            retry_after_secs: l.retry_after_secs.max(1),
        }),
        (None, _) => Ok(()),
    }
}

/// What breaking a lease writes: its audit row and its event, at the document's version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseBreak {
    pub audit: AuditEntry,
    pub outbox: OutboxEntry,
}

/// The break of `holder`'s lease on `doc` by `actor`: a space admin's or the admin's.
pub fn plan_lease_break(
    doc: &Document,
    actor: Reader<'_>,
    holder: &str,
) -> Result<LeaseBreak, Refusal> {
    if !doc.readable_by(actor) {
        return Err(Refusal::NotFound);
    }
    if !actor.administers(&doc.space) {
        return Err(Refusal::Forbidden(
            "only a space admin or an admin breaks another's edit lease",
        ));
    }
    Ok(LeaseBreak {
        audit: AuditEntry {
            action: "break_lease",
            review_id: None,
            from_status: Some(doc.status),
            to_status: doc.status,
            version: doc.version,
            lock_mode: Guard::Unlocked.lock_mode(),
            fence_token: None,
        },
        outbox: OutboxEntry::from(EventData::LeaseBroken {
            title: doc.title.clone(),
            holder: holder.to_string(),
            broken_by: actor.id.as_str().to_string(),
        })
        .about(doc),
    })
}

#[cfg(test)]
mod tests;
