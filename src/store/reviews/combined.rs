//! A vote's or a withdrawal's writes in one statement: the vote row, the claims it ends,
//! the review row, the document row (or only its chain head), the audit row and the outbox
//! row, as one data-modifying CTE. The rules planned every value (`domain::rules`); this
//! statement only writes the plan, in one round trip instead of three. The time of the
//! change is `Locked.now`, read once the row locks were held, so the event's body (which
//! names it) is whole before the statement is sent.
//!
//! The statement is `sql/review_write.sql`, checked at compile time like every other. The
//! same writes one statement each, as the service made them before, are kept outside the
//! service (`tests/api/support/stepwise.rs`): the test `routes::writes` holds this
//! statement to the rows they leave, and the benchmark's floor of the old statements runs
//! them.

use chrono::{DateTime, Utc};
use sqlx::{Postgres, Transaction};
use uuid::Uuid;

use super::votes::{applied, next_of};
use crate::domain::rules::{
    AuditEntry, DocumentChange, NewVote, Publication, ReviewUpdate, ReviewWrite, Verify,
};
use crate::domain::{
    Document, DocumentStatus, FencingToken, OutboxEntry, Refusal, Review, ReviewStatus,
};
use crate::store::documents::{changed, publication, verification};
use crate::store::error::{violates, WriteError};
use crate::store::outbox::delivery::OutboxRow;
use crate::store::outbox::trace_context::TraceContext;
use crate::store::tx::{event_body, Event, Link, WriteContext};

/// What a review write changes, with the rows as they were under the locks.
pub(crate) struct ReviewWritePlan<'p> {
    pub before: Document,
    pub review: Review,
    pub write: ReviewWrite,
    pub change: Option<DocumentChange>,
    pub audit: &'p AuditEntry,
    pub entry: &'p OutboxEntry,
    /// The audit link; its head moves with the document row either way.
    pub link: Link,
    /// The time of the change (`Locked.now`).
    pub now: DateTime<Utc>,
}

/// Writes `plan` in one statement; returns the document and the review as they now are,
/// and the outbox row the request owns.
pub(crate) async fn write_review_plan(
    tx: &mut Transaction<'static, Postgres>,
    plan: ReviewWritePlan<'_>,
    ctx: &WriteContext<'_>,
) -> Result<(Document, Review, Option<OutboxRow>), WriteError> {
    let ReviewWritePlan {
        before,
        review,
        write,
        change,
        audit,
        entry,
        link,
        now,
    } = plan;
    let updating = write.update.is_some();
    let next = next_of(&review, write.update);
    let decided_at = next.decided_by.as_ref().map(|_| now);
    let doc = match change.clone() {
        Some(change) => changed(before, change, now),
        None => before,
    };
    let event_id = Uuid::now_v7();
    let event = Event {
        event_id,
        payload: event_body(event_id, entry, &doc, audit, ctx, now),
        trace: TraceContext::current(), // goes with the row to whoever publishes it
    };
    let values = Values {
        review_id: write.id,
        stage: review.stage,
        vote: write.vote.as_ref(),
        end_claims: write.end_claims,
        updating,
        next: &next,
        decided_at,
        now,
        change: change.as_ref(),
        link: &link,
        doc: &doc,
        audit,
        entry,
        event: &event,
        ticket: Uuid::new_v4(),
        ctx,
    };
    let (id, ticket, vote_at) = statement(tx, &values).await.map_err(|e| {
        if violates(&e, "review_votes_pkey") {
            Refusal::AlreadyVoted.into()
        } else {
            WriteError::from(e)
        }
    })?;
    let (vote, end_claims) = (write.vote, write.end_claims);
    let review = applied(
        review, vote, next, updating, end_claims, vote_at, decided_at,
    );
    let owned = ticket.map(|ticket| event.owned(id, ticket, &doc, entry));
    Ok((doc, review, owned))
}

/// Every value the statement writes.
struct Values<'v> {
    review_id: Uuid,
    /// The review's stage under the lock (a vote's stage when it has none).
    stage: i32,
    vote: Option<&'v NewVote>,
    end_claims: bool,
    updating: bool,
    next: &'v ReviewUpdate,
    decided_at: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
    change: Option<&'v DocumentChange>,
    link: &'v Link,
    /// The document as it will be.
    doc: &'v Document,
    audit: &'v AuditEntry,
    entry: &'v OutboxEntry,
    event: &'v Event,
    ticket: Uuid,
    ctx: &'v WriteContext<'v>,
}

/// Runs `sql/review_write.sql`: (the outbox row's id, its ticket when the request owns it,
/// the vote's time).
async fn statement(
    tx: &mut Transaction<'static, Postgres>,
    v: &Values<'_>,
) -> Result<(i64, Option<Uuid>, Option<DateTime<Utc>>), sqlx::Error> {
    let (vote, c, next) = (v.vote, v.change, v.next);
    let (traceparent, tracestate) = TraceContext::columns(v.event.trace.as_ref());
    let published = c.map_or(Publication::Keep, |c| c.published);
    let (verify, verify_by) = verification(c.map_or(Verify::Keep, |c| c.verify));
    let row = sqlx::query_file!(
        "src/store/reviews/sql/review_write.sql",
        v.review_id,
        vote.map(|v| v.voter_id.as_str()),
        vote.map_or(v.stage, |v| v.stage),
        vote.map(|v| v.kind.as_str()),
        vote.and_then(|v| v.comment.as_deref()),
        vote.and_then(|v| v.fence_token) as Option<FencingToken>,
        v.end_claims,
        v.updating,
        next.status as ReviewStatus,
        next.stage,
        next.decided_by.as_deref(),
        next.comment.as_deref(),
        next.reason.as_deref(),
        next.fence_token as Option<FencingToken>,
        v.decided_at,
        v.now,
        c.is_some(),
        c.and_then(|c| c.title.as_ref()).map(|t| t.as_str()),
        c.and_then(|c| c.body.as_ref()).map(|b| b.as_str()),
        c.map(|c| c.status) as Option<DocumentStatus>,
        c.map(|c| c.version),
        c.and_then(|c| c.current_review_id),
        c.and_then(|c| c.fence_token) as Option<FencingToken>,
        c.and_then(|c| c.policy.as_deref()),
        publication(published),
        v.link.seq,
        v.link.hash.as_deref(),
        v.doc.id,
        v.audit.review_id,
        v.audit.action,
        v.ctx.actor.as_str(),
        v.audit.from_status.map(|s| s.as_str()),
        v.audit.to_status.as_str(),
        v.doc.version,
        v.ctx.request_id,
        v.audit.lock_mode,
        v.audit.fence_token as Option<FencingToken>,
        v.link.at,
        v.event.event_id,
        v.entry.event.as_str(),
        v.entry.routing_key(),
        v.event.payload,
        v.ctx.own_outbox_for.map(|d| d.as_secs_f64()),
        v.ticket,
        v.entry.event.projects(),
        traceparent,
        tracestate,
        c.and_then(|c| c.contributors.as_deref()),
        verify,
        verify_by,
        v.doc.space.as_str(),
    )
    .fetch_one(&mut **tx)
    .await?;
    Ok((row.id, row.claim_token, row.vote_at))
}
