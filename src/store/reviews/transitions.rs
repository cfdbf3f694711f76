//! Statements on `reviews`, and the review transitions: submit (open a review), vote
//! (approve or reject in the current stage) and withdraw. Each locks its rows (document
//! first, then review: one global order, so two transitions never deadlock), asks the rules
//! for a plan, and writes the plan uncommitted. A review is read with its policy version's
//! stages, its votes and its claims (`flows`).

use chrono::Utc;
use sqlx::types::Json;
use sqlx::{Postgres, Transaction};
use uuid::Uuid;

use super::combined::{write_review_plan, ReviewWritePlan};
use super::locking::{lock_at_once, AtOnce};
use super::rows::{lock_review, Flow, ReviewRow};
use crate::domain::rules::{self, OpenReview, ReviewChange};
use crate::domain::{
    Command, Decision, Document, FencingToken, Locked, Plan, Refusal, Review, ReviewKind,
    ReviewStatus, Stage, Transitioned,
};
use crate::store::audit::links::Head;
use crate::store::documents::{
    lock_document, lock_document_of_review, planned_document, write_document,
};
use crate::store::error::{violates, StoreError, WriteError};
use crate::store::outbox::delivery::OutboxRow;
use crate::store::pg::{PgStore, Statement};
use crate::store::policies::current_policy;
use crate::store::spaces::memberships::judged_by_read;
use crate::store::tx::{write_audit_and_event, Uncommitted, WriteContext};

impl PgStore {
    /// DRAFT|REJECTED -> PENDING_REVIEW with a new pending review under the document's
    /// policy, as its current version is.
    #[tracing::instrument(level = "debug", skip_all, fields(document_id = %document_id))]
    pub async fn write_submit(
        &self,
        document_id: Uuid,
        ctx: &WriteContext<'_>,
    ) -> Result<Uncommitted<Transitioned>, WriteError> {
        let mut tx = self.begin().await?;
        let (document, head) = lock_document(&mut tx, document_id).await?.unzip();
        let policy = match &document {
            Some(d) => current_policy(&mut *tx, &d.policy).await?,
            None => None,
        };
        // A published document's current review may be an open re-verification (then it
        // is not submitted again until that is decided).
        let review = match document.as_ref() {
            Some(d) if d.published_version.is_some() => match d.current_review_id {
                Some(id) => lock_review(&mut tx, id).await?.0,
                None => None,
            },
            _ => None,
        };
        let locked = Locked {
            document,
            policy,
            review,
            ..Locked::default()
        };
        let command = Command::Submit {
            new_review_id: Uuid::now_v7(),
        };
        let plan =
            rules::plan_conditional(&locked, ctx.reader(), command, ctx.guard, ctx.conditions)?;
        self.write_transition(tx, locked, head, plan, ctx).await
    }

    /// A vote of the caller (a member of `groups`) on the review's current stage: recorded,
    /// completing the stage, or deciding the review and its document.
    #[tracing::instrument(level = "debug", skip_all, fields(review_id = %review_id, action = decision.action().as_str()))]
    pub async fn write_vote(
        &self,
        review_id: Uuid,
        decision: Decision,
        groups: Vec<String>,
        ctx: &WriteContext<'_>,
    ) -> Result<Uncommitted<Transitioned>, WriteError> {
        let (mut tx, locked, head, read) = self.lock_review_and_document(review_id).await?;
        // A caller whose memberships this transaction read as it began is judged with them.
        let joined = judged_by_read(&mut tx, ctx.access, read).await?;
        let ctx = &ctx.judged_by(joined.as_ref());
        let command = Command::Decide { decision, groups };
        let plan =
            rules::plan_conditional(&locked, ctx.reader(), command, ctx.guard, ctx.conditions)?;
        self.write_transition(tx, locked, head, plan, ctx).await
    }

    /// PENDING_REVIEW -> DRAFT, the current review WITHDRAWN.
    #[tracing::instrument(level = "debug", skip_all, fields(document_id = %document_id))]
    pub async fn write_withdraw(
        &self,
        document_id: Uuid,
        ctx: &WriteContext<'_>,
    ) -> Result<Uncommitted<Transitioned>, WriteError> {
        let mut tx = self.begin().await?;
        let (document, head) = lock_document(&mut tx, document_id).await?.unzip();
        let (review, now) = match document.as_ref().and_then(|d| d.current_review_id) {
            Some(id) => lock_review(&mut tx, id).await?,
            None => (None, Utc::now()),
        };
        let locked = Locked {
            document,
            review,
            policy: None,
            lease: None,
            now,
        };
        let plan = rules::plan_conditional(
            &locked,
            ctx.reader(),
            Command::Withdraw,
            ctx.guard,
            ctx.conditions,
        )?;
        self.write_transition(tx, locked, head, plan, ctx).await
    }

    /// Opens a write transaction and locks the document of `review_id` (its chain head
    /// read with it), then the review; `Locked.now` is read once both are held. In one
    /// statement when nobody holds either row (`locking`), else one each. With the
    /// transaction's `kh.memberships` when that one statement found the review.
    pub(crate) async fn lock_review_and_document(
        &self,
        review_id: Uuid,
    ) -> Result<LockedReview, StoreError> {
        let mut tx = self.begin().await?;
        let (at_once, read) = lock_at_once(&mut tx, review_id).await?;
        let (document, head) = match at_once {
            AtOnce::Locked(locked) => {
                let (document, head, review, now) = *locked;
                let locked = Locked {
                    document: Some(document),
                    review: Some(review),
                    policy: None,
                    lease: None,
                    now,
                };
                return Ok((tx, locked, Some(head), read));
            }
            // Both held already: the review is read again, by a statement of its own.
            AtOnce::ReviewChanged(held) => {
                let (document, head) = *held;
                (Some(document), Some(head))
            }
            // Lock the review's document (found without locking the review), waiting for
            // it, then the review.
            AtOnce::NotNow => lock_document_of_review(&mut tx, review_id).await?.unzip(),
        };
        let locked = match document {
            None => Locked::default(),
            Some(document) => {
                let (review, now) = lock_review(&mut tx, review_id).await?;
                Locked {
                    document: Some(document),
                    review,
                    policy: None,
                    lease: None,
                    now,
                }
            }
        };
        Ok((tx, locked, head, read))
    }

    /// The approvals the current stage of `review_id` needs (`None`: no such review). Read
    /// without a lock, to choose the outer lock of a vote whose review's key was busy.
    pub async fn stage_needs(&self, review_id: Uuid) -> Result<Option<i32>, StoreError> {
        let needs = sqlx::query_scalar!(
            r#"SELECT (pv.stages -> r.stage ->> 'required_approvals')::int4 AS needs
               FROM reviews r
               JOIN policy_versions pv ON pv.name = r.policy AND pv.version = r.policy_version
               WHERE r.id = $1"#,
            review_id
        )
        .fetch_optional(&mut *self.scoped().await?)
        .bounded(self)
        .await?;
        Ok(needs.flatten())
    }
}

/// A review and its document locked in an open transaction (see
/// [`PgStore::lock_review_and_document`]).
pub(crate) type LockedReview = (
    Transaction<'static, Postgres>,
    Locked,
    Option<Head>,
    Option<String>,
);

impl PgStore {
    /// Writes a planned transition: the review row first (the document refers to it),
    /// then the document, the audit row and the outbox row.
    async fn write_transition(
        &self,
        tx: Transaction<'static, Postgres>,
        locked: Locked,
        head: Option<Head>,
        plan: Plan,
        ctx: &WriteContext<'_>,
    ) -> Result<Uncommitted<Transitioned>, WriteError> {
        if plan.review.is_none() {
            return Err(anyhow::anyhow!("a transition without a review").into());
        }
        let (tx, document, review, owned) = self.write_planned(tx, locked, head, plan, ctx).await?;
        let review = review.ok_or_else(|| anyhow::anyhow!("a transition without a review"))?;
        let done = Transitioned { document, review };
        Ok(Uncommitted::new(tx, done, owned).in_space(|t| t.document.space.clone()))
    }
}

/// What [`PgStore::write_planned`] wrote: the open transaction, the document as it now is, the
/// review it wrote (if any) and the outbox row the request owns.
pub(crate) type Written = (
    Transaction<'static, Postgres>,
    Document,
    Option<Review>,
    Option<OutboxRow>,
);

impl PgStore {
    /// Writes a plan: its review row first (the document refers to it), then the
    /// document, the audit row (linked after `head`, the document's chain head read under
    /// its row lock) and the outbox row.
    pub(crate) async fn write_planned(
        &self,
        mut tx: Transaction<'static, Postgres>,
        locked: Locked,
        head: Option<Head>,
        plan: Plan,
        ctx: &WriteContext<'_>,
    ) -> Result<Written, WriteError> {
        let Locked {
            document,
            review,
            now,
            ..
        } = locked;
        let before = planned_document(document)?;
        let head = head.ok_or_else(|| anyhow::anyhow!("a plan without a chain head"))?;
        let version = plan.document.as_ref().map_or(before.version, |c| c.version);
        let mut link = self
            .audit
            .at(head)
            .link(before.id, &plan.audit, version, ctx);
        let review = match plan.review {
            // A vote's or a withdrawal's rows, in one statement (`combined`).
            Some(ReviewChange::Write(write)) => {
                let review = review.ok_or_else(|| anyhow::anyhow!("a vote without a review"))?;
                let plan = ReviewWritePlan {
                    before,
                    review,
                    write,
                    change: plan.document,
                    audit: &plan.audit,
                    entry: &plan.outbox,
                    link,
                    now,
                };
                let (doc, review, owned) = write_review_plan(&mut tx, plan, ctx).await?;
                return Ok((tx, doc, Some(review), owned));
            }
            Some(ReviewChange::Open(open)) => match open_review(&mut tx, &before, open).await {
                Err(e) if violates(&e, "reviews_one_pending_per_document") => {
                    return Err(Refusal::AlreadyPending.into())
                }
                opened => Some(opened?),
            },
            None => None,
        };
        let (doc, occurred_at) = match plan.document {
            Some(change) => {
                link = link.moved_with_document();
                let doc = write_document(&mut tx, before, change, &link).await?;
                let at = doc.updated_at;
                (doc, at)
            }
            None => (before, now),
        };
        let (audit, outbox) = (&plan.audit, &plan.outbox);
        let owned =
            write_audit_and_event(&mut tx, &doc, audit, outbox, ctx, occurred_at, &link).await?;
        Ok((tx, doc, review, owned))
    }
}

async fn open_review(
    tx: &mut Transaction<'static, Postgres>,
    doc: &Document,
    open: OpenReview,
) -> Result<Review, sqlx::Error> {
    let status = ReviewStatus::Pending;
    let row = sqlx::query!(
        r#"WITH opened AS (
             INSERT INTO reviews (id, document_id, status, document_version, submitted_by,
                                  fence_token, policy, policy_version, due_at, kind)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8,
                     COALESCE($10, now() + make_interval(secs => $9::int4::float8)), $11)
             RETURNING submitted_at, due_at)
           SELECT o.submitted_at AS "submitted_at!", o.due_at, pv.claim_ttl_secs,
                  pv.reverify_after_secs,
                  pv.stages AS "stages!: Json<Vec<Stage>>"
           FROM opened o, policy_versions pv WHERE pv.name = $7 AND pv.version = $8"#,
        open.id,
        doc.id,
        status as ReviewStatus,
        open.document_version,
        &open.submitted_by,
        open.fence_token as Option<FencingToken>,
        &open.policy,
        open.policy_version,
        open.due_after_secs,
        open.deadline,
        open.kind as ReviewKind,
    )
    .fetch_one(&mut **tx)
    .await?;
    let row_ = ReviewRow {
        id: open.id,
        document_id: doc.id,
        status,
        document_version: open.document_version,
        submitted_by: open.submitted_by,
        submitted_at: row.submitted_at,
        decided_by: None,
        decided_at: None,
        comment: None,
        reason: None,
        fence_token: open.fence_token,
        policy: open.policy,
        policy_version: open.policy_version,
        stage: 0,
        due_at: row.due_at,
        kind: open.kind,
    };
    Ok(row_.with(Flow {
        reverify_after_secs: row.reverify_after_secs,
        claim_ttl_secs: row.claim_ttl_secs,
        stages: row.stages.0,
        votes: Vec::new(),
        claims: Vec::new(),
    }))
}
