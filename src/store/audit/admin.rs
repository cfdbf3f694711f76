//! The rows of the admin chain (policy versions and outbox admin actions) as the chain
//! reads them: each column in one fixed text form (times as microseconds since the epoch,
//! JSON as PostgreSQL's `jsonb` prints it), so the bytes a link covers do not depend on a
//! session's settings. The one statement here serves the linking and the check.

use sqlx::PgConnection;

use crate::domain::audit::Hash;

/// One row of the admin chain.
#[derive(Debug, Clone)]
pub(super) struct AdminRow {
    /// `policy` or `outbox_action`.
    pub kind: String,
    pub name: Option<String>,
    pub version: Option<i32>,
    pub id: Option<i64>,
    pub seq: Option<i64>,
    pub hash: Option<Vec<u8>>,
    pub fields: Vec<Option<String>>,
}

impl AdminRow {
    /// The table and the key of the row, for reports.
    pub fn named(&self) -> (&'static str, String) {
        match (&self.name, self.version, self.id) {
            (Some(name), Some(version), _) => ("policy_versions", format!("{name}/{version}")),
            (_, _, id) => (
                "outbox_admin_actions",
                id.map_or_else(String::new, |i| i.to_string()),
            ),
        }
    }
}

/// Rows of the admin chain in chain order: the unlinked ones (`unlinked`; in the order
/// they were written), or the linked ones after position `after`; narrowed to one policy
/// version or the actions on one outbox row when named; at most `limit`.
#[allow(clippy::too_many_arguments)]
pub(super) async fn admin_rows(
    conn: &mut PgConnection,
    unlinked: bool,
    after: i64,
    policy: Option<&str>,
    version: Option<i32>,
    outbox_row: Option<i64>,
    limit: i64,
) -> Result<Vec<AdminRow>, sqlx::Error> {
    sqlx::query_as!(
        AdminRow,
        r#"SELECT kind AS "kind!", name, version, id, chain_seq AS seq, chain_hash AS hash,
                  fields AS "fields!: Vec<Option<String>>"
           FROM (
             SELECT 'policy' AS kind, name, version, NULL::int8 AS id, NULL::int8 AS outbox_id,
                    chain_seq, chain_hash, created_at AS at,
                    ARRAY[name, version::text, stages::text, due_after_secs::text,
                          claim_ttl_secs::text, created_by,
                          (extract(epoch FROM created_at) * 1000000)::int8::text] AS fields
             FROM policy_versions
             UNION ALL
             SELECT 'outbox_action', NULL, NULL, id, outbox_id, chain_seq, chain_hash, at,
                    ARRAY[outbox_id::text, event_id::text, document_id::text, event_type,
                          action, actor_id, request_id, attempts::text,
                          (extract(epoch FROM parked_at) * 1000000)::int8::text,
                          parked_reason, (extract(epoch FROM at) * 1000000)::int8::text]
             FROM outbox_admin_actions) r
           WHERE CASE WHEN $1 THEN chain_hash IS NULL OR chain_seq IS NULL
                      ELSE chain_seq > $2 END
             AND (($3::text IS NULL AND $5::int8 IS NULL)
                  OR (name = $3 AND version = $4) OR outbox_id = $5)
           ORDER BY chain_seq, at, kind, name, version, id
           LIMIT $6"#,
        unlinked,
        after,
        policy,
        version,
        outbox_row,
        limit
    )
    .fetch_all(conn)
    .await
}

/// Gives the row its position and link.
pub(super) async fn set_link(
    conn: &mut PgConnection,
    row: &AdminRow,
    seq: i64,
    link: &Hash,
) -> Result<(), sqlx::Error> {
    match (&row.name, row.version, row.id) {
        (Some(name), Some(version), _) => {
            sqlx::query!(
                "UPDATE policy_versions SET chain_seq = $3, chain_hash = $4 \
                 WHERE name = $1 AND version = $2",
                name,
                version,
                seq,
                link.as_slice()
            )
            .execute(conn)
            .await?;
        }
        (_, _, Some(id)) => {
            sqlx::query!(
                "UPDATE outbox_admin_actions SET chain_seq = $2, chain_hash = $3 WHERE id = $1",
                id,
                seq,
                link.as_slice()
            )
            .execute(conn)
            .await?;
        }
        _ => {}
    }
    Ok(())
}
