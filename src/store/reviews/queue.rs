//! The review queue: reviews in one status, in the order their submits committed
//! (`queue_seq`, assigned at COMMIT: see the migration `review_queue_order`, so a reader
//! paging through never skips one) or by due date (no due date last, then commit order);
//! optionally only the overdue ones, or only those a reviewer may approve now.
//!
//! The statements are prepared, so their plan is the generic one, made without the values:
//! the current stage is read per review by a lateral lookup that cannot be flattened into a
//! join (`OFFSET 0`), and the cursor is a range the index serves (`queue_seq > COALESCE(..)`,
//! not `$2 IS NULL OR ..`). Either one alone let the planner read and sort every pending
//! review for each page (59 ms at 10,000 pending with `eligible=me`, against 0.3 ms for
//! the ordered index scan that stops at the page's end).
//!
//! The plan is not always the generic one: PostgreSQL plans the first executions with the
//! values, and keeps doing so while that plan looks cheaper. Such a plan may answer
//! `NOT EXISTS (author or contributor)` and `NOT EXISTS (voted)` by hashing every matching
//! row of the whole table once (a scan of every document: 4.9 ms at 10,000 pending against
//! 0.45 ms), a cost that grows with the data though a page reads 20 reviews. Their `OFFSET 0`
//! keeps them lookups by key, per review the page reads.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::rows::ReviewRow;
use crate::domain::{FencingToken, Review, ReviewKind, ReviewStatus};
use crate::store::error::StoreError;
use crate::store::pg::{PgStore, Statement};

/// The order of the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueOrder {
    /// Commit order of the submits.
    Queue,
    /// Due date, no due date last, then commit order.
    Due,
}

/// Where the page starts: the `queue_seq` and `due_at` of the last review a reader was shown.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct After {
    pub seq: Option<i64>,
    pub due: Option<DateTime<Utc>>,
}

/// Which reviews, in which order, after which one.
#[derive(Debug, Clone)]
pub struct QueueFilter {
    pub status: ReviewStatus,
    /// Only reviews still pending past their due date.
    pub overdue: bool,
    /// Only reviews this reviewer (in these groups) may approve now: not its own, not voted
    /// on yet, in the current stage's groups, and a seat free or held by it.
    pub eligible: Option<(String, Vec<String>)>,
    pub order: QueueOrder,
    /// The last review a reader was shown.
    pub after: Option<Uuid>,
    pub limit: i64,
}

impl PgStore {
    /// A page of the queue of the spaces `spaces` (`None`: every space, the platform admin's
    /// queue); `None` when `after` is no review.
    pub async fn list_reviews(
        &self,
        f: &QueueFilter,
        spaces: Option<&[String]>,
    ) -> Result<Option<Vec<Review>>, StoreError> {
        let at = match f.after {
            None => After::default(),
            Some(id) => {
                let at = sqlx::query!("SELECT queue_seq, due_at FROM reviews WHERE id = $1", id)
                    .fetch_optional(&mut *self.scoped().await?)
                    .bounded(self)
                    .await?;
                match at {
                    None => return Ok(None),
                    Some(r) => After {
                        seq: Some(r.queue_seq),
                        due: r.due_at,
                    },
                }
            }
        };
        let (voter, groups) = match &f.eligible {
            Some((v, g)) => (Some(v.as_str()), g.clone()),
            None => (None, Vec::new()),
        };
        // Every space: one ordered scan of the status. Some spaces: one per space, each
        // stopping at the page's end (`queue_spaces`).
        let rows = match (f.order, spaces) {
            (QueueOrder::Queue, None) => self.queue_page(f, at.seq, voter, &groups).await?,
            (QueueOrder::Due, None) => self.due_page(f, at.seq, at.due, voter, &groups).await?,
            (QueueOrder::Queue, Some([space])) => {
                self.space_queue_page(f, space, at.seq, voter, &groups)
                    .await?
            }
            (QueueOrder::Queue, Some(spaces)) => {
                self.spaces_queue_page(f, spaces, at, voter, &groups)
                    .await?
            }
            (QueueOrder::Due, Some(spaces)) => {
                self.spaces_due_page(f, spaces, at, voter, &groups).await?
            }
        };
        Ok(Some(self.with_flows(rows).await?))
    }

    async fn queue_page(
        &self,
        f: &QueueFilter,
        after_seq: Option<i64>,
        voter: Option<&str>,
        groups: &[String],
    ) -> Result<Vec<ReviewRow>, StoreError> {
        sqlx::query_as!(
            ReviewRow,
            r#"SELECT r.id, r.document_id, r.status AS "status: ReviewStatus", r.document_version,
                      r.submitted_by, r.submitted_at, r.decided_by, r.decided_at, r.comment,
                      r.reason, r.fence_token AS "fence_token: FencingToken", r.policy,
                      r.policy_version, r.stage, r.due_at, r.kind AS "kind: ReviewKind"
               FROM reviews r
               CROSS JOIN LATERAL (
                 SELECT v.stages -> r.stage AS st FROM policy_versions v
                 WHERE v.name = r.policy AND v.version = r.policy_version OFFSET 0) pv
               WHERE r.status = $1 AND r.queue_seq > COALESCE($2::int8, 0)
                 AND (NOT $3::bool OR r.due_at <= now())
                 AND ($4::text IS NULL OR (
                   NOT EXISTS (SELECT 1 FROM documents d WHERE d.id = r.document_id
                                     AND (d.author_id = $4 OR $4 = ANY(d.contributors)) OFFSET 0)
                   AND NOT EXISTS (SELECT 1 FROM review_votes v
                                   WHERE v.review_id = r.id AND v.voter_id = $4 OFFSET 0)
                   AND (jsonb_array_length(pv.st -> 'eligible_groups') = 0
                        OR (pv.st -> 'eligible_groups') ?| $5::text[])
                   AND (EXISTS (SELECT 1 FROM review_claims c
                                WHERE c.review_id = r.id AND c.reviewer_id = $4
                                  AND c.stage = r.stage AND c.expires_at > now())
                        OR (SELECT count(*) FROM review_claims c
                            WHERE c.review_id = r.id AND c.stage = r.stage
                              AND c.expires_at > now())
                           < (pv.st ->> 'required_approvals')::int8
                             - (SELECT count(*) FROM review_votes v
                                WHERE v.review_id = r.id AND v.stage = r.stage
                                  AND v.vote = 'APPROVE'))))
               ORDER BY r.queue_seq LIMIT $6"#,
            f.status as ReviewStatus,
            after_seq,
            f.overdue,
            voter,
            groups,
            f.limit
        )
        .fetch_all(&mut *self.scoped().await?)
        .bounded(self)
        .await
    }

    async fn due_page(
        &self,
        f: &QueueFilter,
        after_seq: Option<i64>,
        after_due: Option<DateTime<Utc>>,
        voter: Option<&str>,
        groups: &[String],
    ) -> Result<Vec<ReviewRow>, StoreError> {
        sqlx::query_as!(
            ReviewRow,
            r#"SELECT r.id, r.document_id, r.status AS "status: ReviewStatus", r.document_version,
                      r.submitted_by, r.submitted_at, r.decided_by, r.decided_at, r.comment,
                      r.reason, r.fence_token AS "fence_token: FencingToken", r.policy,
                      r.policy_version, r.stage, r.due_at, r.kind AS "kind: ReviewKind"
               FROM reviews r
               CROSS JOIN LATERAL (
                 SELECT v.stages -> r.stage AS st FROM policy_versions v
                 WHERE v.name = r.policy AND v.version = r.policy_version OFFSET 0) pv
               WHERE r.status = $1
                 AND ($2::int8 IS NULL
                      OR ($7::timestamptz IS NULL AND r.due_at IS NULL AND r.queue_seq > $2)
                      OR ($7::timestamptz IS NOT NULL
                          AND (r.due_at IS NULL OR r.due_at > $7
                               OR (r.due_at = $7 AND r.queue_seq > $2))))
                 AND (NOT $3::bool OR r.due_at <= now())
                 AND ($4::text IS NULL OR (
                   NOT EXISTS (SELECT 1 FROM documents d WHERE d.id = r.document_id
                                     AND (d.author_id = $4 OR $4 = ANY(d.contributors)) OFFSET 0)
                   AND NOT EXISTS (SELECT 1 FROM review_votes v
                                   WHERE v.review_id = r.id AND v.voter_id = $4 OFFSET 0)
                   AND (jsonb_array_length(pv.st -> 'eligible_groups') = 0
                        OR (pv.st -> 'eligible_groups') ?| $5::text[])
                   AND (EXISTS (SELECT 1 FROM review_claims c
                                WHERE c.review_id = r.id AND c.reviewer_id = $4
                                  AND c.stage = r.stage AND c.expires_at > now())
                        OR (SELECT count(*) FROM review_claims c
                            WHERE c.review_id = r.id AND c.stage = r.stage
                              AND c.expires_at > now())
                           < (pv.st ->> 'required_approvals')::int8
                             - (SELECT count(*) FROM review_votes v
                                WHERE v.review_id = r.id AND v.stage = r.stage
                                  AND v.vote = 'APPROVE'))))
               ORDER BY r.due_at, r.queue_seq LIMIT $6"#,
            f.status as ReviewStatus,
            after_seq,
            f.overdue,
            voter,
            groups,
            f.limit,
            after_due
        )
        .fetch_all(&mut *self.scoped().await?)
        .bounded(self)
        .await
    }
}
