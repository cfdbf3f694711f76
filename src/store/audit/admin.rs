//! The rows of the admin chain (policy versions, outbox admin actions and spaces created)
//! as the chain reads them: the format each was linked in, the whole row as JSON (what formats 2 and
//! later read, as the kind's type: `domain::audit_format`), and, for format 1, its listed
//! columns in one fixed text form (times as microseconds since the epoch, JSON as
//! PostgreSQL's `jsonb` prints it), so the bytes a link covers do not depend on a
//! session's settings. The one statement here serves the linking and the check.

use sqlx::PgConnection;

use crate::domain::audit::audited::Format;
use crate::domain::audit::format::{AdminKinds, Unreadable};
use crate::domain::audit::Hash;

/// One row of the admin chain.
#[derive(Debug, Clone)]
pub(super) struct AdminRow {
    /// `policy`, `outbox_action` or `space_action`.
    pub kind: String,
    pub name: Option<String>,
    pub version: Option<i32>,
    pub id: Option<i64>,
    pub seq: Option<i64>,
    pub hash: Option<Vec<u8>>,
    /// The format it was linked in (1 until it is linked).
    pub format: Format,
    /// Format 1's columns: frozen, never changed, never added to.
    pub fields: Vec<Option<String>>,
    /// Every column, as PostgreSQL's `to_jsonb` gives them.
    pub row: serde_json::Value,
}

impl AdminRow {
    /// The table and the key of the row, for reports.
    pub fn named(&self) -> (&'static str, String) {
        let id = self.id.map_or_else(String::new, |i| i.to_string());
        match (&self.name, self.version) {
            (Some(name), Some(version)) => ("policy_versions", format!("{name}/{version}")),
            _ if self.kind == SPACE_ACTION => ("space_admin_actions", id),
            _ => ("outbox_admin_actions", id),
        }
    }

    /// Its canonical bytes at position `seq` in `format`, into `buf`.
    pub fn canonical(
        &self,
        kinds: &AdminKinds,
        buf: &mut Vec<u8>,
        seq: i64,
        format: Format,
    ) -> Result<(), Unreadable> {
        kinds.canonical(buf, &self.kind, seq, format, &self.fields, &self.row)
    }
}

/// The kind of a space's creation in the admin chain.
const SPACE_ACTION: &str = "space_action";

/// Which rows of the admin chain a statement reads.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Only<'a> {
    /// Every row.
    All,
    /// The policy version just written.
    Policy(&'a str, i32),
    /// The actions on this outbox row.
    OutboxRow(i64),
    /// The space creation of this id.
    SpaceAction(i64),
}

/// Rows of the admin chain in chain order: the unlinked ones (`unlinked`; in the order
/// they were written), or the linked ones after position `after`; narrowed to `only`; at
/// most `limit`.
pub(super) async fn admin_rows(
    conn: &mut PgConnection,
    unlinked: bool,
    after: i64,
    only: Only<'_>,
    limit: i64,
) -> Result<Vec<AdminRow>, sqlx::Error> {
    let (mut policy, mut version, mut outbox_row, mut space_action) = (None, None, None, None);
    match only {
        Only::All => {}
        Only::Policy(name, v) => (policy, version) = (Some(name), Some(v)),
        Only::OutboxRow(id) => outbox_row = Some(id),
        Only::SpaceAction(id) => space_action = Some(id),
    }
    sqlx::query_as!(
        AdminRow,
        r#"SELECT kind AS "kind!", name, version, id, chain_seq AS seq, chain_hash AS hash,
                  chain_format AS "format!", fields AS "fields!: Vec<Option<String>>",
                  "row" AS "row!"
           FROM (
             SELECT 'policy' AS kind, name, version, NULL::int8 AS id, NULL::int8 AS outbox_id,
                    chain_seq, chain_hash, chain_format, to_jsonb(p) AS "row", created_at AS at,
                    ARRAY[name, version::text, stages::text, due_after_secs::text,
                          claim_ttl_secs::text, created_by,
                          (extract(epoch FROM created_at) * 1000000)::int8::text] AS fields
             FROM policy_versions p
             UNION ALL
             SELECT 'outbox_action', NULL, NULL, id, outbox_id, chain_seq, chain_hash,
                    chain_format, to_jsonb(a), at,
                    ARRAY[outbox_id::text, event_id::text, document_id::text, event_type,
                          action, actor_id, request_id, attempts::text,
                          (extract(epoch FROM parked_at) * 1000000)::int8::text,
                          parked_reason, (extract(epoch FROM at) * 1000000)::int8::text]
             FROM outbox_admin_actions a
             UNION ALL
             SELECT 'space_action', NULL, NULL, id, NULL, chain_seq, chain_hash,
                    chain_format, to_jsonb(s), at, ARRAY[]::text[]
             FROM space_admin_actions s) r
           WHERE CASE WHEN $1 THEN chain_hash IS NULL OR chain_seq IS NULL
                      ELSE chain_seq > $2 END
             AND (($3::text IS NULL AND $5::int8 IS NULL AND $7::int8 IS NULL)
                  OR (name = $3 AND version = $4) OR outbox_id = $5
                  OR (kind = 'space_action' AND id = $7))
           ORDER BY chain_seq, at, kind, name, version, id
           LIMIT $6"#,
        unlinked,
        after,
        policy,
        version,
        outbox_row,
        limit,
        space_action
    )
    .fetch_all(conn)
    .await
}

/// Gives the row its position, its link and the format it was linked in.
pub(super) async fn set_link(
    conn: &mut PgConnection,
    row: &AdminRow,
    seq: i64,
    link: &Hash,
    format: Format,
) -> Result<(), sqlx::Error> {
    match (&row.name, row.version, row.id) {
        (_, _, Some(id)) if row.kind == SPACE_ACTION => {
            sqlx::query!(
                "UPDATE space_admin_actions SET chain_seq = $2, chain_hash = $3, \
                 chain_format = $4 WHERE id = $1",
                id,
                seq,
                link.as_slice(),
                format
            )
            .execute(conn)
            .await?;
        }
        (Some(name), Some(version), _) => {
            sqlx::query!(
                "UPDATE policy_versions SET chain_seq = $3, chain_hash = $4, chain_format = $5 \
                 WHERE name = $1 AND version = $2",
                name,
                version,
                seq,
                link.as_slice(),
                format
            )
            .execute(conn)
            .await?;
        }
        (_, _, Some(id)) => {
            sqlx::query!(
                "UPDATE outbox_admin_actions SET chain_seq = $2, chain_hash = $3, chain_format = $4 \
                 WHERE id = $1",
                id,
                seq,
                link.as_slice(),
                format
            )
            .execute(conn)
            .await?;
        }
        _ => {}
    }
    Ok(())
}
