//! Reviews: the `ReviewService` (the transitions under the outer lock, the queue and
//! claims: `service`), what a review's current stage needs, as this instance last saw it
//! (`stage_needs`), the overdue sweeper with `[review]` (`overdue`), and the
//! re-verification scheduler (`reverify`).

pub(super) mod overdue;
pub(super) mod reverify;
pub(super) mod service;
pub(super) mod stage_needs;
