//! Linking a space's own chain (`space_audit_log`): its rows not linked yet, after the
//! space's head (`spaces.audit_count`/`audit_head`) under the space row's lock, in the
//! current format derived from `SpaceChangeRecord`; as each write of a space's settings or
//! memberships is made, and by the migrate step for rows written with the chain off.

use sqlx::PgConnection;

use super::chain::AuditChain;
use crate::domain::audit::audited::{current, Format};
use crate::domain::audit::format::{derived, Unreadable};
use crate::domain::audit::{as_hash, GENESIS};
use crate::domain::SpaceChangeRecord;

/// A row of a space's chain: its id, position, link and format, and the whole row as JSON
/// (what the derived formats read).
pub(super) struct ChainRow {
    pub id: i64,
    pub seq: Option<i64>,
    pub hash: Option<Vec<u8>>,
    pub format: Format,
    pub row: serde_json::Value,
}

/// Links the rows of `space`'s chain not linked yet after its head, under the space row's
/// lock, in the transaction (or on the connection) given; how many. Nothing with the chain
/// off.
pub(crate) async fn link_space(
    conn: &mut PgConnection,
    chain: &AuditChain,
    space: &str,
) -> Result<u64, sqlx::Error> {
    if !chain.on() {
        return Ok(0);
    }
    let head = sqlx::query!(
        "SELECT audit_count, audit_head FROM spaces WHERE key = $1 FOR UPDATE",
        space
    )
    .fetch_one(&mut *conn)
    .await?;
    let rows = sqlx::query_as!(
        ChainRow,
        r#"SELECT id, seq, hash, format, to_jsonb(r) AS "row!" FROM space_audit_log r
           WHERE space_id = $1 AND (hash IS NULL OR seq IS NULL) ORDER BY id"#,
        space
    )
    .fetch_all(&mut *conn)
    .await?;
    let (mut count, mut prev) = (
        head.audit_count,
        head.audit_head
            .as_deref()
            .and_then(as_hash)
            .unwrap_or(GENESIS),
    );
    let format = current::<SpaceChangeRecord>();
    let mut buf = Vec::with_capacity(512);
    for r in &rows {
        let seq = count + 1;
        derived::<SpaceChangeRecord>(&mut buf, seq, format, &r.row).map_err(unreadable)?;
        let link = chain.key().link(&prev, &buf);
        sqlx::query!(
            "UPDATE space_audit_log SET seq = $2, hash = $3, format = $4 WHERE id = $1",
            r.id,
            seq,
            link.as_slice(),
            format
        )
        .execute(&mut *conn)
        .await?;
        (count, prev) = (seq, link);
    }
    if !rows.is_empty() {
        sqlx::query!(
            "UPDATE spaces SET audit_count = $2, audit_head = $3 WHERE key = $1",
            space,
            count,
            prev.as_slice()
        )
        .execute(&mut *conn)
        .await?;
    }
    Ok(rows.len() as u64)
}

/// Links every space's rows not linked yet (the migrate step's), a space per transaction.
pub(crate) async fn link_spaces(
    conn: &mut PgConnection,
    chain: &AuditChain,
) -> Result<u64, sqlx::Error> {
    if !chain.on() {
        return Ok(0);
    }
    let spaces = sqlx::query_scalar!(
        "SELECT DISTINCT space_id FROM space_audit_log WHERE hash IS NULL OR seq IS NULL"
    )
    .fetch_all(&mut *conn)
    .await?;
    let mut linked = 0;
    for space in spaces {
        let mut tx = sqlx::Connection::begin(&mut *conn).await?;
        linked += link_space(&mut tx, chain, &space).await?;
        tx.commit().await?;
    }
    Ok(linked)
}

/// A row the chain cannot read: a fault of the code, not of the row.
fn unreadable(e: Unreadable) -> sqlx::Error {
    sqlx::Error::Decode(Box::new(e))
}
