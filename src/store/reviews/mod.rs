//! Reviews and their votes: the transitions (`transitions`: submit, vote, withdraw), a document's review history (`history`), a review
//! read with its stages, votes and claims (`rows`), what a vote makes of the review row
//! (`votes`), a vote's or a withdrawal's rows in one statement (`combined`,
//! `sql/review_write.sql`), a review and its document locked in one statement (`locking`,
//! `sql/lock_review.sql`) and the review queue (`queue`; of some spaces, `queue_spaces`).

pub(super) mod combined;
pub(super) mod history;
pub(super) mod locking;
pub(super) mod queue;
pub(super) mod queue_spaces;
pub(super) mod rows;
pub(super) mod transitions;
pub(super) mod votes;
