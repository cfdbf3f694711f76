//! The audit chain, as the use cases serve it: the check operators run (`check`), against
//! the latest checkpoint (`report`), and the writer of the signed checkpoints
//! (`checkpoints`).

pub(super) mod check;
pub(super) mod checkpoints;
pub(super) mod report;
