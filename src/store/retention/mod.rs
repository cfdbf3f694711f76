//! Retention: the purges, in batches (`purges`), on a session that holds an advisory lock
//! (`session_lock`, also the checkpoint writer's).

pub(super) mod purges;
pub(super) mod session_lock;
