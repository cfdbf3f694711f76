//! The pieces every write transaction is made of: begin, the audit row, the outbox row, and
//! [`Uncommitted`], the uncommitted result a write hands back so that its caller decides (lease
//! check, idempotency record) whether it commits.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::json;
use sqlx::{Postgres, Transaction};
use uuid::Uuid;

use super::error::StoreError;
use super::pg::PgStore;
use crate::domain::rules::{AuditEntry, NewComment};
use crate::domain::{
    Access, Conditions, Document, FencingToken, Guard, OutboxEntry, Reader, UserId,
};
use crate::store::outbox::delivery::OutboxRow;
use crate::store::outbox::trace_context::TraceContext;

/// The link of one audit row: its position and hash (both `None` with the chain off), its
/// time, and whether the audit row's statement moves the document's chain head to it
/// (false: the statement that writes the document does).
#[derive(Debug, Clone)]
pub(crate) struct Link {
    pub seq: Option<i64>,
    pub hash: Option<Vec<u8>>,
    pub at: DateTime<Utc>,
    pub moves_head: bool,
}

impl Link {
    /// The link, its head moved by the statement that writes the document.
    pub fn moved_with_document(self) -> Self {
        Self {
            moves_head: false,
            ..self
        }
    }
}

/// Who writes, for which request, under which lock.
#[derive(Debug, Clone, Copy)]
pub struct WriteContext<'a> {
    pub actor: &'a UserId,
    /// The actor's roles in each space.
    pub access: &'a Access,
    pub request_id: &'a str,
    pub guard: Guard,
    /// Own the outbox row this write adds for this long, from its INSERT: the committing
    /// request delivers it itself and no dispatcher touches it meanwhile. None (or an
    /// earlier row of the document still undelivered) leaves it to the dispatchers.
    pub own_outbox_for: Option<Duration>,
    /// The request's `If-Match` (edit, submit, withdraw, archive) and `Lease-Token` (edit),
    /// judged under the row lock.
    pub conditions: Conditions<'a>,
}

impl WriteContext<'_> {
    /// This context, its caller judged with `access` when given.
    pub(crate) fn judged_by<'b>(&'b self, access: Option<&'b Access>) -> WriteContext<'b> {
        WriteContext {
            access: access.unwrap_or(self.access),
            ..*self
        }
    }
}

/// A write done in an open transaction: nothing is visible to anyone until [`Uncommitted::commit`].
/// Dropping it (or [`Uncommitted::rollback`]) undoes the write.
pub struct Uncommitted<T> {
    pub(super) tx: Transaction<'static, Postgres>,
    value: T,
    owned: Option<OutboxRow>,
    /// The space the write is in (its document's), which the request's idempotency
    /// record takes when it records the result (`save_result`).
    pub(super) space: Option<String>,
}

/// A committed write, and the outbox row its request owns (see
/// [`WriteContext::own_outbox_for`]), to deliver now.
#[derive(Debug)]
pub struct Committed<T> {
    pub value: T,
    pub owned: Option<OutboxRow>,
}

impl<T> Uncommitted<T> {
    pub(super) fn new(
        tx: Transaction<'static, Postgres>,
        value: T,
        owned: Option<OutboxRow>,
    ) -> Self {
        Self {
            tx,
            value,
            owned,
            space: None,
        }
    }

    /// The write, in the space `of` its value says (its document's).
    pub(super) fn in_space(mut self, of: impl FnOnce(&T) -> String) -> Self {
        self.space = Some(of(&self.value));
        self
    }

    /// What the write will be once committed.
    pub fn value(&self) -> &T {
        &self.value
    }

    pub async fn commit(self) -> Result<Committed<T>, StoreError> {
        self.tx.commit().await?;
        Ok(Committed {
            value: self.value,
            owned: self.owned,
        })
    }

    pub async fn rollback(self) -> Result<(), StoreError> {
        self.tx.rollback().await?;
        Ok(())
    }
}

impl<'a> WriteContext<'a> {
    /// The context of background work started by no request (the sweeper, the scheduler):
    /// no outer lock, no outbox row owned (the dispatchers deliver it), no conditions.
    pub fn background(actor: &'a UserId, access: &'a Access, request_id: &'a str) -> Self {
        Self {
            actor,
            access,
            request_id,
            guard: Guard::Unlocked,
            own_outbox_for: None,
            conditions: Default::default(),
        }
    }

    /// The actor, as visibility sees it.
    pub fn reader(&self) -> Reader<'_> {
        Reader {
            id: self.actor,
            access: self.access,
        }
    }
}

impl PgStore {
    /// Opens a write transaction, in the store's scope of spaces (`scope`). Its row locks
    /// wait at most `lock_timeout`, a setting of every pooled session (see
    /// `PgStore::from_settings`), so it costs no statement here.
    pub(super) async fn begin(&self) -> Result<Transaction<'static, Postgres>, StoreError> {
        self.scoped().await
    }
}

/// The event's body, as consumers get it (docs/events.md, "Schema").
pub(super) fn event_body(
    event_id: Uuid,
    entry: &OutboxEntry,
    doc: &Document,
    audit: &AuditEntry,
    ctx: &WriteContext<'_>,
    occurred_at: DateTime<Utc>,
) -> serde_json::Value {
    json!({
        "event_id": event_id,
        "event_type": entry.event.as_str(),
        "occurred_at": occurred_at,
        "document_id": doc.id,
        "space": doc.space,
        "review_id": audit.review_id,
        "document_version": doc.version,
        "actor_id": ctx.actor.as_str(),
        "data": entry.data,
    })
}

/// Writes the audit row and the outbox row of a change to `doc` (as it is after the
/// change), in one statement, the event as of `occurred_at` (already projected when its
/// type moves nothing in MongoDB: [`crate::domain::EventType::projects`]). The event body is fixed here. The outbox row
/// is held for this request (returned) when `ctx.own_outbox_for` asks for it and no
/// earlier row of the document is undelivered: the document's row lock, held here, keeps
/// that answer true until COMMIT. The audit row carries `link`, and the document's chain
/// head moves to it here unless the statement that wrote the document moved it. Both rows
/// name the document's space, so its trigger (migration 20261219000001) reads nothing.
pub(super) async fn write_audit_and_event(
    tx: &mut Transaction<'static, Postgres>,
    doc: &Document,
    audit: &AuditEntry,
    entry: &OutboxEntry,
    ctx: &WriteContext<'_>,
    occurred_at: DateTime<Utc>,
    link: &Link,
) -> Result<Option<OutboxRow>, StoreError> {
    let change = Change {
        doc,
        audit,
        entry,
        occurred_at,
        link,
        comment: None,
    };
    Ok(write_change(tx, change, ctx).await?.owned)
}

/// A change's rows, as [`write_change`] writes them.
pub(super) struct Change<'c> {
    pub doc: &'c Document,
    pub audit: &'c AuditEntry,
    pub entry: &'c OutboxEntry,
    pub occurred_at: DateTime<Utc>,
    pub link: &'c Link,
    /// A comment written with them: numbered by the document row's `comment_count`, which
    /// the statement moves, with the chain head.
    pub comment: Option<&'c NewComment>,
}

/// What [`write_change`] wrote: the outbox row the request holds, and the comment's number
/// and time when it wrote one.
pub(super) struct ChangeRows {
    pub owned: Option<OutboxRow>,
    pub comment: Option<(i64, DateTime<Utc>)>,
}

/// [`write_audit_and_event`], and a comment with them when `change` carries one: the
/// comment's row, its number and the chain head in the same statement, so that a comment
/// is one round trip after its lock.
pub(super) async fn write_change(
    tx: &mut Transaction<'static, Postgres>,
    change: Change<'_>,
    ctx: &WriteContext<'_>,
) -> Result<ChangeRows, StoreError> {
    let Change {
        doc,
        audit,
        entry,
        occurred_at,
        link,
        comment,
    } = change;
    let event_id = Uuid::now_v7();
    let event_type = entry.event.as_str();
    let payload = event_body(event_id, entry, doc, audit, ctx, occurred_at);
    let routing_key = entry.routing_key();
    let ticket = Uuid::new_v4();
    let trace = TraceContext::current(); // goes with the row to whoever publishes it
    let (traceparent, tracestate) = TraceContext::columns(trace.as_ref());
    let row = sqlx::query_file!(
        "src/store/sql/change_write.sql",
        event_id,
        doc.id,
        doc.version,
        event_type,
        routing_key,
        payload,
        ctx.own_outbox_for.map(|d| d.as_secs_f64()),
        ticket,
        audit.review_id,
        audit.action,
        ctx.actor.as_str(),
        audit.from_status.map(|s| s.as_str()),
        audit.to_status.as_str(),
        ctx.request_id,
        audit.lock_mode,
        audit.fence_token as Option<FencingToken>,
        entry.event.projects(),
        link.seq,
        link.hash.as_deref(),
        link.at,
        link.moves_head || comment.is_some(),
        traceparent,
        tracestate,
        doc.space.as_str(),
        comment.map(|c| c.id),
        comment.map(|c| c.body.as_str()),
        comment.and_then(|c| c.review_id),
        comment.map(|c| c.author_id.as_str()),
    )
    .fetch_one(&mut **tx)
    .await?;
    let written = Event {
        event_id,
        payload,
        trace,
    };
    Ok(ChangeRows {
        owned: row
            .claim_token
            .map(|ticket| written.owned(row.id, ticket, doc, entry)),
        comment: row.comment_seq.zip(row.comment_at),
    })
}

/// An event as written in an outbox row: its id, its body, the trace it carries.
pub(super) struct Event {
    pub event_id: Uuid,
    pub payload: serde_json::Value,
    pub trace: Option<TraceContext>,
}

impl Event {
    /// The outbox row `id` of this event, held by its request with `ticket`.
    pub fn owned(self, id: i64, ticket: Uuid, doc: &Document, entry: &OutboxEntry) -> OutboxRow {
        let (traceparent, tracestate) = TraceContext::columns(self.trace.as_ref());
        OutboxRow {
            id,
            event_id: self.event_id,
            document_id: doc.id,
            document_version: doc.version,
            event_type: entry.event.as_str().to_string(),
            routing_key: entry.routing_key().map(str::to_string),
            payload: self.payload,
            attempts: 0,
            ticket,
            projected: !entry.event.projects(),
            traceparent: traceparent.map(str::to_string),
            tracestate: tracestate.map(str::to_string),
        }
    }
}
