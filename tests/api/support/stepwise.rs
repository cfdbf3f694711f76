//! A vote written one statement per row, as the service wrote it before its combined statement
//! (`src/store/reviews/sql/review_write.sql`), kept outside the service as a reference: the document locked, then the review; the vote, the claims it ends and the review row;
//! the document row; the audit and outbox rows; COMMIT. `routes::writes` holds the combined
//! write to the rows this leaves; the benchmark's floor of the old statements runs it
//! (`benches/bench_support/floor.rs` includes this file: it names nothing of the tests).
//! The rules (`domain::rules::plan`) and the chain's arithmetic (`domain::audit`) are the
//! service's; the statements are written here, against the same schema.

use chrono::{DateTime, Utc};
use kh_review::domain::audit::{as_hash, AuditKey, AuditRow, GENESIS};
use kh_review::domain::rules::{
    self, AuditEntry, DocumentChange, ReviewChange, ReviewUpdate, ReviewWrite,
};
use kh_review::domain::{Claim, Command, Decision, Document, FencingToken, Locked, OutboxEntry};
use kh_review::domain::{Review, Stage, Vote};
use kh_review::store::{OutboxRow, TraceContext, WriteContext};
use serde_json::json;
use sqlx::postgres::PgRow;
use sqlx::types::Json;
use sqlx::{PgPool, Postgres, Row, Transaction};
use uuid::Uuid;

type Tx = Transaction<'static, Postgres>;

/// `decision` on `review_id` by `ctx.actor`, committed, its audit row linked with `key`: the
/// document as written, and the outbox row the request owns (as `ctx.own_outbox_for` asks).
pub async fn vote(
    pool: &PgPool,
    key: &AuditKey,
    review_id: Uuid,
    decision: Decision,
    ctx: &WriteContext<'_>,
) -> anyhow::Result<(Document, Option<OutboxRow>)> {
    let mut tx = pool.begin().await?;
    let (document, head) = lock_document_of_review(&mut tx, review_id).await?;
    let (review, now) = lock_review(&mut tx, review_id).await?;
    let locked = Locked {
        document: Some(document),
        review: Some(review),
        now,
        ..Locked::default()
    };
    let command = Command::Decide {
        decision,
        groups: Vec::new(),
    };
    let plan = rules::plan(&locked, ctx.reader(), command, ctx.guard)?;
    let (Some(before), Some(review)) = (locked.document, locked.review) else {
        anyhow::bail!("the rules planned a vote without its rows");
    };
    let Some(ReviewChange::Write(write)) = plan.review else {
        anyhow::bail!("a vote that writes no review");
    };
    write_review(&mut tx, &review, write).await?;
    let version = plan.document.as_ref().map_or(before.version, |c| c.version);
    let mut link = link(key, &head, before.id, &plan.audit, version, ctx);
    let (doc, occurred_at) = match plan.document {
        Some(change) => {
            link.moves_head = false; // the document's statement moves it
            let doc = write_document(&mut tx, change, &link).await?;
            let at = doc.updated_at;
            (doc, at)
        }
        None => (before, now),
    };
    let (audit, entry) = (&plan.audit, &plan.outbox);
    let owned = write_audit_and_event(&mut tx, &doc, audit, entry, ctx, occurred_at, &link).await?;
    tx.commit().await?;
    Ok((doc, owned))
}

/// A document's chain head as its locking read found it, and the transaction's `now()`.
struct Head {
    count: i64,
    hash: Option<Vec<u8>>,
    now: DateTime<Utc>,
}

/// An audit row's link, its time, and whether its own statement moves the chain head.
struct Link {
    seq: i64,
    hash: Vec<u8>,
    at: DateTime<Utc>,
    moves_head: bool,
}

/// The columns of a document row, as [`document_of`] reads them.
macro_rules! document_columns {
    () => {
        "id, title, body, status, version, author_id, space_id, current_review_id, policy, \
         fence_token, created_at, updated_at, published_version, published_title, published_body"
    };
}

fn document_of(r: &PgRow) -> Result<Document, sqlx::Error> {
    Ok(Document {
        id: r.try_get("id")?,
        title: r.try_get("title")?,
        body: r.try_get("body")?,
        status: r.try_get("status")?,
        version: r.try_get("version")?,
        author_id: r.try_get("author_id")?,
        space: r.try_get("space_id")?,
        current_review_id: r.try_get("current_review_id")?,
        policy: r.try_get("policy")?,
        fence_token: r.try_get("fence_token")?,
        created_at: r.try_get("created_at")?,
        updated_at: r.try_get("updated_at")?,
        published_version: r.try_get("published_version")?,
        published_title: r.try_get("published_title")?,
        published_body: r.try_get("published_body")?,
        contributors: Vec::new(), // the previous release never reads them
        verify_by: None,          // nor this
    })
}

/// Locks the document of the review (the review itself is only read), with its chain head.
async fn lock_document_of_review(tx: &mut Tx, review_id: Uuid) -> anyhow::Result<(Document, Head)> {
    let r = sqlx::query(concat!(
        "SELECT ",
        document_columns!(),
        ", audit_count, audit_head, now() AS now FROM documents \
         WHERE id = (SELECT document_id FROM reviews WHERE id = $1) FOR UPDATE"
    ))
    .bind(review_id)
    .fetch_optional(&mut **tx)
    .await?
    .ok_or_else(|| anyhow::anyhow!("no review {review_id}"))?;
    let head = Head {
        count: r.try_get("audit_count")?,
        hash: r.try_get("audit_head")?,
        now: r.try_get("now")?,
    };
    Ok((document_of(&r)?, head))
}

/// The review row, locked, with its policy version's stages, its votes and every claim,
/// and the time once it is held.
async fn lock_review(tx: &mut Tx, id: Uuid) -> anyhow::Result<(Review, DateTime<Utc>)> {
    let r = sqlx::query(
        "SELECT r.id, r.document_id, r.status, r.document_version, r.submitted_by, \
                r.submitted_at, r.decided_by, r.decided_at, r.comment, r.reason, r.fence_token, \
                r.policy, r.policy_version, r.stage, r.due_at, pv.claim_ttl_secs, pv.stages, \
                COALESCE((SELECT json_agg(json_build_object( \
                            'voter_id', v.voter_id, 'stage', v.stage, 'kind', v.vote, \
                            'comment', v.comment, 'at', v.at) ORDER BY v.at) \
                          FROM review_votes v WHERE v.review_id = r.id), '[]') AS votes, \
                COALESCE((SELECT json_agg(json_build_object( \
                            'reviewer_id', c.reviewer_id, 'stage', c.stage, \
                            'claimed_at', c.claimed_at, 'expires_at', c.expires_at)) \
                          FROM review_claims c WHERE c.review_id = r.id), '[]') AS claims, \
                clock_timestamp() AS now \
         FROM reviews r \
         JOIN policy_versions pv ON pv.name = r.policy AND pv.version = r.policy_version \
         WHERE r.id = $1 FOR UPDATE OF r",
    )
    .bind(id)
    .fetch_one(&mut **tx)
    .await?;
    let review = Review {
        id: r.try_get("id")?,
        document_id: r.try_get("document_id")?,
        status: r.try_get("status")?,
        document_version: r.try_get("document_version")?,
        submitted_by: r.try_get("submitted_by")?,
        submitted_at: r.try_get("submitted_at")?,
        decided_by: r.try_get("decided_by")?,
        decided_at: r.try_get("decided_at")?,
        comment: r.try_get("comment")?,
        reason: r.try_get("reason")?,
        fence_token: r.try_get("fence_token")?,
        policy: r.try_get("policy")?,
        policy_version: r.try_get("policy_version")?,
        stage: r.try_get("stage")?,
        due_at: r.try_get("due_at")?,
        kind: Default::default(),
        reverify_after_secs: None,
        claim_ttl_secs: r.try_get("claim_ttl_secs")?,
        stages: r.try_get::<Json<Vec<Stage>>, _>("stages")?.0,
        votes: r.try_get::<Json<Vec<Vote>>, _>("votes")?.0,
        claims: r.try_get::<Json<Vec<Claim>>, _>("claims")?.0,
    };
    Ok((review, r.try_get("now")?))
}

/// The vote row, the claims it ends and the review row (written even when the plan leaves
/// it as it is), in one statement.
async fn write_review(tx: &mut Tx, before: &Review, write: ReviewWrite) -> anyhow::Result<()> {
    let updating = write.update.is_some();
    let next = write.update.unwrap_or_else(|| ReviewUpdate {
        status: before.status,
        stage: before.stage,
        decided_by: before.decided_by.clone(),
        comment: before.comment.clone(),
        reason: before.reason.clone(),
        fence_token: before.fence_token,
    });
    let vote = write.vote.as_ref();
    sqlx::query(
        "WITH vote AS ( \
           INSERT INTO review_votes (review_id, voter_id, stage, vote, comment, fence_token) \
           SELECT $1, $2, $3, $4, $5, $6 WHERE $2::text IS NOT NULL \
           RETURNING at), \
         ended AS ( \
           DELETE FROM review_claims \
           WHERE review_id = $1 AND ($7::bool OR reviewer_id = $2)), \
         updated AS ( \
           UPDATE reviews SET status = $9, stage = $10, decided_by = $11, \
                  decided_at = CASE WHEN NOT $8::bool THEN decided_at \
                                    WHEN $11::text IS NULL THEN NULL \
                                    ELSE clock_timestamp() END, \
                  comment = $12, reason = $13, fence_token = $14 \
           WHERE id = $1 \
           RETURNING decided_at) \
         SELECT (SELECT at FROM vote) AS vote_at, (SELECT decided_at FROM updated) AS decided_at",
    )
    .bind(write.id)
    .bind(vote.map(|v| v.voter_id.as_str()))
    .bind(vote.map_or(before.stage, |v| v.stage))
    .bind(vote.map(|v| v.kind.as_str()))
    .bind(vote.and_then(|v| v.comment.as_deref()))
    .bind(vote.and_then(|v| v.fence_token))
    .bind(write.end_claims)
    .bind(updating)
    .bind(next.status)
    .bind(next.stage)
    .bind(next.decided_by.as_deref())
    .bind(next.comment.as_deref())
    .bind(next.reason.as_deref())
    .bind(next.fence_token)
    .fetch_one(&mut **tx)
    .await?;
    Ok(())
}

/// The planned document row, its chain head moved to `link`; the row as it now is.
async fn write_document(
    tx: &mut Tx,
    change: DocumentChange,
    link: &Link,
) -> anyhow::Result<Document> {
    // keep, publish or withdraw, as the statement names them.
    let publication = format!("{:?}", change.published).to_lowercase();
    let r = sqlx::query(concat!(
        "UPDATE documents SET title = COALESCE($2, title), body = COALESCE($3, body), \
         status = $4, version = $5, current_review_id = $6, fence_token = $7, \
         policy = COALESCE($8, policy), updated_at = clock_timestamp(), \
         published_version = CASE $9 WHEN 'publish' THEN $5 WHEN 'withdraw' THEN NULL \
                                     ELSE published_version END, \
         published_title = CASE $9 WHEN 'publish' THEN COALESCE($2, title) \
                                   WHEN 'withdraw' THEN NULL ELSE published_title END, \
         published_body = CASE $9 WHEN 'publish' THEN COALESCE($3, body) \
                                  WHEN 'withdraw' THEN NULL ELSE published_body END, \
         audit_count = COALESCE($10, audit_count), audit_head = COALESCE($11, audit_head) \
         WHERE id = $1 RETURNING ",
        document_columns!()
    ))
    .bind(change.id)
    .bind(change.title.as_ref().map(|t| t.as_str()))
    .bind(change.body.as_ref().map(|b| b.as_str()))
    .bind(change.status)
    .bind(change.version)
    .bind(change.current_review_id)
    .bind(change.fence_token)
    .bind(change.policy.as_deref())
    .bind(publication)
    .bind(link.seq)
    .bind(link.hash.as_slice())
    .fetch_one(&mut **tx)
    .await?;
    Ok(document_of(&r)?)
}

/// Links the audit row `audit` of `document_id` at `version` after `head`.
fn link(
    key: &AuditKey,
    head: &Head,
    document_id: Uuid,
    audit: &AuditEntry,
    version: i64,
    ctx: &WriteContext<'_>,
) -> Link {
    let seq = head.count + 1;
    let row = AuditRow {
        document_id,
        seq,
        review_id: audit.review_id,
        action: audit.action,
        actor_id: ctx.actor.as_str(),
        from_status: audit.from_status.map(|s| s.as_str()),
        to_status: audit.to_status.as_str(),
        document_version: version,
        request_id: Some(ctx.request_id),
        lock_mode: audit.lock_mode,
        fence_token: audit.fence_token.map(FencingToken::value),
        at: head.now,
    };
    let mut canonical = Vec::with_capacity(256);
    row.canonical(&mut canonical);
    let prev = head.hash.as_deref().and_then(as_hash).unwrap_or(GENESIS);
    Link {
        seq,
        hash: key.link(&prev, &canonical).to_vec(),
        at: head.now,
        moves_head: true,
    }
}

// The statement of `write_audit_and_event`.
const AUDIT_AND_EVENT: &str = "WITH audit AS ( \
       INSERT INTO audit_log (document_id, review_id, action, actor_id, from_status, \
                              to_status, document_version, request_id, lock_mode, fence_token, \
                              seq, hash, at) \
       VALUES ($2, $9, $10, $11, $12, $13, $3, $14, $15, $16, $18, $19, $20)), \
     head AS (UPDATE documents SET audit_count = $18, audit_head = $19 \
              WHERE id = $2 AND $21::bool AND $19::bytea IS NOT NULL), \
     earlier AS ( \
       SELECT EXISTS (SELECT 1 FROM outbox WHERE document_id = $2 AND done_at IS NULL) \
              AS waiting) \
     INSERT INTO outbox (event_id, document_id, document_version, event_type, \
                         routing_key, payload, claimed_until, claim_token, projected_at, \
                         traceparent, tracestate) \
     SELECT $1, $2, $3, $4, $5, $6, \
            CASE WHEN $7::float8 IS NULL OR waiting THEN NULL \
                 ELSE clock_timestamp() + make_interval(secs => $7) END, \
            CASE WHEN $7::float8 IS NULL OR waiting THEN NULL ELSE $8::uuid END, \
            CASE WHEN $17 THEN NULL ELSE now() END, \
            $22, $23 \
     FROM earlier \
     RETURNING id, claim_token";

/// The audit row and the outbox row of the change to `doc` (as it now is), in one
/// statement; the outbox row is held for the request as `ctx.own_outbox_for` asks, unless
/// an earlier row of the document is undelivered.
async fn write_audit_and_event(
    tx: &mut Tx,
    doc: &Document,
    audit: &AuditEntry,
    entry: &OutboxEntry,
    ctx: &WriteContext<'_>,
    occurred_at: DateTime<Utc>,
    link: &Link,
) -> anyhow::Result<Option<OutboxRow>> {
    let event_id = Uuid::now_v7();
    let payload = json!({
        "event_id": event_id,
        "event_type": entry.event.as_str(),
        "occurred_at": occurred_at,
        "document_id": doc.id,
        "space": doc.space,
        "review_id": audit.review_id,
        "document_version": doc.version,
        "actor_id": ctx.actor.as_str(),
        "data": entry.data,
    });
    let ticket = Uuid::new_v4();
    let trace = TraceContext::current();
    let (traceparent, tracestate) = TraceContext::columns(trace.as_ref());
    let r = sqlx::query(AUDIT_AND_EVENT)
        .bind(event_id)
        .bind(doc.id)
        .bind(doc.version)
        .bind(entry.event.as_str())
        .bind(entry.event.routing_key())
        .bind(&payload)
        .bind(ctx.own_outbox_for.map(|d| d.as_secs_f64()))
        .bind(ticket)
        .bind(audit.review_id)
        .bind(audit.action)
        .bind(ctx.actor.as_str())
        .bind(audit.from_status.map(|s| s.as_str()))
        .bind(audit.to_status.as_str())
        .bind(ctx.request_id)
        .bind(audit.lock_mode)
        .bind(audit.fence_token)
        .bind(entry.event.projects())
        .bind(link.seq)
        .bind(link.hash.as_slice())
        .bind(link.at)
        .bind(link.moves_head)
        .bind(traceparent)
        .bind(tracestate)
        .fetch_one(&mut **tx)
        .await?;
    let (id, held): (i64, Option<Uuid>) = (r.try_get("id")?, r.try_get("claim_token")?);
    Ok(held.map(|ticket| OutboxRow {
        id,
        event_id,
        document_id: doc.id,
        document_version: doc.version,
        event_type: entry.event.as_str().to_string(),
        routing_key: entry.event.routing_key().map(str::to_string),
        payload,
        attempts: 0,
        ticket,
        projected: !entry.event.projects(),
        traceparent: traceparent.map(str::to_string),
        tracestate: tracestate.map(str::to_string),
    }))
}
