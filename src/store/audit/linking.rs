//! Linking audit rows that carry no link yet: the rows written before the chain existed
//! (or by an instance older than it, during a rolling upgrade), linked by the migrate step
//! under the migration lock, in bounded batches; and each row of the admin chain (policy
//! versions, outbox admin actions) as it is written, under the chain head's row lock.
//!
//! A document's rows are linked under the document's row lock, after its head, in the
//! order of their ids (the order they committed in, for rows of one document: each took the
//! document's row lock). Linking is idempotent: a linked row is never linked again.

use std::collections::HashMap;

use sqlx::PgConnection;
use uuid::Uuid;

use super::chain::AuditChain;
use crate::domain::audit::format::Unreadable;
use crate::domain::audit::{as_hash, AuditKey, AuditRow, Hash, GENESIS};

/// Rows linked per transaction.
const BATCH: i64 = 5_000;

/// [`link_all`], as the migrate step runs it: logged, its error said.
pub(crate) async fn link_after_migrations(
    conn: &mut PgConnection,
    chain: &AuditChain,
) -> anyhow::Result<()> {
    use anyhow::Context;
    let n = link_all(conn, chain)
        .await
        .context("could not link the audit rows")?;
    if n > 0 {
        tracing::info!(rows = n, "audit rows without a link linked to their chains");
    }
    Ok(())
}

/// Links every row not linked yet (of documents, of the admin chain, of the spaces' chains)
/// whose id was taken before this call (the documents'); how many it linked. Nothing with
/// the chain off.
pub(crate) async fn link_all(conn: &mut PgConnection, chain: &AuditChain) -> anyhow::Result<u64> {
    if !chain.on() {
        return Ok(0);
    }
    let upto = sqlx::query_scalar!(r#"SELECT COALESCE(max(id), 0) AS "max!" FROM audit_log"#)
        .fetch_one(&mut *conn)
        .await?;
    let mut linked = 0;
    loop {
        let n = link_documents(conn, chain.key(), upto).await?;
        linked += n;
        if n == 0 {
            break;
        }
    }
    linked += link_admin(conn, chain, Only::All).await?;
    linked += super::space_links::link_spaces(conn, chain).await?;
    Ok(linked)
}

/// An audit row not linked yet.
struct Unlinked {
    id: i64,
    document_id: Uuid,
    review_id: Option<Uuid>,
    action: String,
    actor_id: String,
    from_status: Option<String>,
    to_status: String,
    document_version: i64,
    request_id: Option<String>,
    lock_mode: String,
    fence_token: Option<i64>,
    at: chrono::DateTime<chrono::Utc>,
}

/// The links of one batch: each row's position and hash, and each document's new head.
#[derive(Default)]
struct Links {
    rows: Vec<i64>,
    seqs: Vec<i64>,
    hashes: Vec<Vec<u8>>,
    documents: Vec<Uuid>,
    counts: Vec<i64>,
    heads: Vec<Vec<u8>>,
}

/// One batch of document rows, in one transaction; how many rows it linked.
async fn link_documents(
    conn: &mut PgConnection,
    key: &AuditKey,
    upto: i64,
) -> Result<u64, sqlx::Error> {
    let mut tx = sqlx::Connection::begin(&mut *conn).await?;
    let heads = sqlx::query!(
        r#"SELECT id, audit_count, audit_head FROM documents WHERE id IN (
             SELECT document_id FROM audit_log
             WHERE (hash IS NULL OR seq IS NULL) AND id <= $1
             ORDER BY document_id, id LIMIT $2)
           ORDER BY id FOR UPDATE"#,
        upto,
        BATCH
    )
    .fetch_all(&mut *tx)
    .await?;
    if heads.is_empty() {
        return Ok(0);
    }
    let ids: Vec<Uuid> = heads.iter().map(|h| h.id).collect();
    let rows = sqlx::query_as!(
        Unlinked,
        r#"SELECT id, document_id, review_id, action, actor_id, from_status, to_status,
                  document_version, request_id, lock_mode, fence_token, at
           FROM audit_log
           WHERE (hash IS NULL OR seq IS NULL) AND id <= $1 AND document_id = ANY($2)
           ORDER BY document_id, id LIMIT $3"#,
        upto,
        &ids,
        BATCH
    )
    .fetch_all(&mut *tx)
    .await?;
    let heads = heads.into_iter().map(|h| {
        let prev = h.audit_head.as_deref().and_then(as_hash).unwrap_or(GENESIS);
        (h.id, (h.audit_count, prev))
    });
    let links = chain_rows(key, heads.collect(), &rows);
    sqlx::query!(
        "UPDATE audit_log a SET seq = u.seq, hash = u.hash \
         FROM unnest($1::int8[], $2::int8[], $3::bytea[]) AS u(id, seq, hash) WHERE a.id = u.id",
        &links.rows,
        &links.seqs,
        &links.hashes
    )
    .execute(&mut *tx)
    .await?;
    sqlx::query!(
        "UPDATE documents d SET audit_count = u.count, audit_head = u.hash \
         FROM unnest($1::uuid[], $2::int8[], $3::bytea[]) AS u(id, count, hash) \
         WHERE d.id = u.id AND u.count > 0",
        &links.documents,
        &links.counts,
        &links.heads
    )
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(links.rows.len() as u64)
}

/// Links `rows` (in document, id order) after their documents' heads.
fn chain_rows(key: &AuditKey, mut heads: HashMap<Uuid, (i64, Hash)>, rows: &[Unlinked]) -> Links {
    let mut links = Links::default();
    let mut buf = Vec::with_capacity(256);
    for r in rows {
        let Some((count, prev)) = heads.get_mut(&r.document_id) else {
            continue;
        };
        let seq = *count + 1;
        AuditRow {
            document_id: r.document_id,
            seq,
            review_id: r.review_id,
            action: &r.action,
            actor_id: &r.actor_id,
            from_status: r.from_status.as_deref(),
            to_status: &r.to_status,
            document_version: r.document_version,
            request_id: r.request_id.as_deref(),
            lock_mode: &r.lock_mode,
            fence_token: r.fence_token,
            at: r.at,
        }
        .canonical(&mut buf);
        let link = key.link(prev, &buf);
        (*count, *prev) = (seq, link);
        links.rows.push(r.id);
        links.seqs.push(seq);
        links.hashes.push(link.to_vec());
    }
    for (id, (count, hash)) in heads {
        links.documents.push(id);
        links.counts.push(count);
        links.heads.push(hash.to_vec());
    }
    links
}

/// Which rows of the admin chain to link: every row not linked yet (`All`), or those of
/// the write just made.
pub(crate) use super::admin::Only;

/// Links rows of the admin chain after its head, under the head's row lock, in the
/// transaction (or on the connection) given; how many.
pub(crate) async fn link_admin(
    conn: &mut PgConnection,
    chain: &AuditChain,
    only: Only<'_>,
) -> Result<u64, sqlx::Error> {
    if !chain.on() {
        return Ok(0);
    }
    let mut tx = sqlx::Connection::begin(&mut *conn).await?;
    let head =
        sqlx::query!("SELECT count, hash FROM audit_chain_heads WHERE chain = 'admin' FOR UPDATE")
            .fetch_one(&mut *tx)
            .await?;
    let rows = super::admin::admin_rows(&mut tx, true, 0, only, i64::MAX).await?;
    let (mut count, mut prev) = (
        head.count,
        head.hash.as_deref().and_then(as_hash).unwrap_or(GENESIS),
    );
    let mut buf = Vec::with_capacity(512);
    let kinds = chain.kinds();
    for r in &rows {
        let seq = count + 1;
        // Linked in its kind's current format, as its type reads it.
        let format = kinds.current(&r.kind).map_err(unreadable)?;
        r.canonical(kinds, &mut buf, seq, format)
            .map_err(unreadable)?;
        let link = chain.key().link(&prev, &buf);
        super::admin::set_link(&mut tx, r, seq, &link, format).await?;
        (count, prev) = (seq, link);
    }
    if !rows.is_empty() {
        sqlx::query!(
            "UPDATE audit_chain_heads SET count = $1, hash = $2 WHERE chain = 'admin'",
            count,
            prev.as_slice()
        )
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await?;
    Ok(rows.len() as u64)
}

/// A row the chain cannot read: a fault of the code (a kind without its type), not of the
/// row.
fn unreadable(e: Unreadable) -> sqlx::Error {
    sqlx::Error::Decode(Box::new(e))
}
