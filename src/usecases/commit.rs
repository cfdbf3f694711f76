//! The one seam where a write becomes visible: an uncommitted write, the lease it ran under and
//! the key the request holds go in; the write comes out committed, or rolled back with the
//! reason.

use crate::lock::lease::Lease;
use crate::store::{Committed, HeldKey, Uncommitted};

use super::error::Error;
use crate::usecases::idempotency::Recordable;

/// Records the write's result under the held key in the write's own transaction, checks
/// that the outer lock is still ours, and commits. A key taken over or a lease lost rolls
/// the write back.
pub(super) async fn commit<T: Recordable>(
    mut uncommitted: Uncommitted<T>,
    lease: Option<&Lease>,
    held: Option<&HeldKey>,
) -> Result<Committed<T>, Error> {
    if let Some(held) = held {
        let record = uncommitted.value().to_record();
        if !uncommitted.save_result(held, &record).await? {
            // This request ran past its in-flight time and a retry owns the key now: the
            // change happens once, under whoever owns the key.
            uncommitted.rollback().await?;
            return Err(Error::KeyTakenOver);
        }
    }
    if lease.is_some_and(|l| l.check().is_err()) {
        uncommitted.rollback().await?;
        return Err(Error::LockLost);
    }
    Ok(uncommitted.commit().await?)
}
