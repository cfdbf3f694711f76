//! Why a use case did not complete: the rules refused it, the outer lock was contended or
//! lost, an idempotency key moved on, or a store failed. `web::error` maps each to the
//! error envelope.

use crate::domain::Refusal;
use crate::lock::gate::LockBusy;
use crate::store::{StoreError, StoreFailure, WriteError};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The rules refused the change; nothing was written.
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// Another request holds the outer lock.
    #[error(transparent)]
    LockBusy(#[from] LockBusy),
    /// The outer lock was lost before COMMIT; the change was rolled back.
    #[error("the outer lock was lost before commit")]
    LockLost,
    /// A retry with the same idempotency key took it over; the change was rolled back.
    #[error("the idempotency key was taken over by a retry")]
    KeyTakenOver,
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The database lock provider (edit leases) failed.
    #[error(transparent)]
    Locks(#[from] crate::lock::LockError),
}

impl From<WriteError> for Error {
    fn from(e: WriteError) -> Self {
        match e {
            WriteError::Refused(r) => Error::Refused(r),
            WriteError::Store(s) => Error::Store(s),
        }
    }
}

impl StoreFailure for Error {
    fn read_only(&self) -> bool {
        matches!(self, Error::Store(e) if e.read_only())
    }
}
