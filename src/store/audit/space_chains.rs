//! The spaces' own chains as the check and the checkpoints read them: each space's
//! settings and memberships changes (`space_audit_log`, linked by `space_links`); their
//! heads, as a checkpoint records them; and their check, one space at a time in key order,
//! each against its head and its entry of the latest checkpoint.

use std::collections::HashMap;

use super::space_links::ChainRow;
use super::verify::BrokenAt;
use crate::domain::audit::checkpoint::{Anchor, ChainHead, ChainId};
use crate::domain::audit::format::derived;
use crate::domain::audit::walk::{Break, Found, Walk};
use crate::domain::audit::{as_hash, AuditKey, Hash};
use crate::domain::SpaceChangeRecord;
use crate::store::error::StoreError;
use crate::store::pg::{PgStore, Statement};

/// Rows read per statement.
const PAGE: i64 = 10_000;

/// A space's chain head.
struct SpaceHead {
    key: String,
    count: i64,
    head: Option<Vec<u8>>,
}

impl PgStore {
    /// Every space's chain head, by key (`C` order: the order of [`ChainId`]).
    async fn space_heads(&self) -> Result<Vec<SpaceHead>, StoreError> {
        sqlx::query_as!(
            SpaceHead,
            r#"SELECT key, audit_count AS count, audit_head AS head FROM spaces
               ORDER BY key COLLATE "C""#
        )
        .fetch_all(&self.pool)
        .bounded(self)
        .await
    }

    /// The space chains' heads, as a checkpoint records them.
    pub(super) async fn space_chain_heads(&self) -> Result<Vec<ChainHead>, StoreError> {
        let heads = self.space_heads().await?;
        Ok(heads
            .into_iter()
            .map(|h| ChainHead {
                chain: ChainId::Space(h.key),
                count: h.count,
                head: h.head.as_deref().and_then(as_hash),
            })
            .collect())
    }

    /// The links of the space chains' rows at `rows` (a space and a position each).
    pub(super) async fn space_links_at(
        &self,
        rows: &[(String, i64)],
    ) -> Result<HashMap<ChainId, Hash>, StoreError> {
        let (spaces, seqs): (Vec<String>, Vec<i64>) = rows.iter().cloned().unzip();
        let found = sqlx::query!(
            r#"SELECT a.space_id, a.hash FROM space_audit_log a
               JOIN unnest($1::text[], $2::int8[]) AS w(space_id, seq)
                 ON a.space_id = w.space_id AND a.seq = w.seq"#,
            &spaces,
            &seqs
        )
        .fetch_all(&self.pool)
        .bounded(self)
        .await?;
        Ok(found
            .into_iter()
            .filter_map(|r| {
                let link = r.hash.as_deref().and_then(as_hash)?;
                Some((ChainId::Space(r.space_id), link))
            })
            .collect())
    }

    /// Every space's chain, each against its head and its entry in `anchors` (the latest
    /// checkpoint's, when there is one); then the spaces of the checkpoint that are gone,
    /// then a row of any space that carries no link.
    pub(super) async fn verify_spaces(
        &self,
        key: &AuditKey,
        mut anchors: HashMap<String, Anchor>,
        checked: &mut u64,
    ) -> Result<Option<BrokenAt>, StoreError> {
        for head in self.space_heads().await? {
            let anchor = anchors.remove(&head.key);
            if let Some(b) = self.verify_space(key, &head, anchor, checked).await? {
                return Ok(Some(b));
            }
        }
        let mut gone: Vec<(String, Anchor)> = anchors.into_iter().collect();
        gone.sort_by(|a, b| a.0.cmp(&b.0));
        if let Some((space, a)) = gone.into_iter().next() {
            return Ok(Some(broken(&space, None, a.count, Found::ChainMissing)));
        }
        let row = sqlx::query!(
            "SELECT id, space_id FROM space_audit_log WHERE hash IS NULL OR seq IS NULL \
             ORDER BY space_id, id LIMIT 1"
        )
        .fetch_optional(&self.pool)
        .bounded(self)
        .await?;
        Ok(row.map(|r| BrokenAt {
            position: None,
            ..broken(&r.space_id, Some(r.id), 0, Found::Unchained)
        }))
    }

    /// One space's chain, in pages, against its head.
    async fn verify_space(
        &self,
        key: &AuditKey,
        head: &SpaceHead,
        anchor: Option<Anchor>,
        checked: &mut u64,
    ) -> Result<Option<BrokenAt>, StoreError> {
        let mut walk = Walk::new(head.count).anchored(anchor);
        // From the lowest position there is: a row put before position 1 is found too.
        let mut after = i64::MIN;
        let mut buf = Vec::with_capacity(512);
        loop {
            let rows = sqlx::query_as!(
                ChainRow,
                r#"SELECT id, seq, hash, format, to_jsonb(r) AS "row!" FROM space_audit_log r
                   WHERE space_id = $1 AND seq > $2 ORDER BY seq LIMIT $3"#,
                head.key,
                after,
                PAGE
            )
            .fetch_all(&self.pool)
            .bounded(self)
            .await?;
            for r in &rows {
                let seq = r.seq.unwrap_or(0);
                after = seq;
                let at = |b: Break| broken(&head.key, Some(r.id), b.position, b.found);
                let Some(stored) = r.hash.as_deref() else {
                    return Ok(Some(at(Break {
                        position: seq,
                        found: Found::Unchained,
                    })));
                };
                // A row its type cannot read, or in a format it does not have, is not what
                // was linked there.
                if derived::<SpaceChangeRecord>(&mut buf, seq, r.format, &r.row).is_err() {
                    return Ok(Some(at(Break {
                        position: seq,
                        found: Found::Changed,
                    })));
                }
                if let Err(b) = walk.step(key, seq, stored, &buf) {
                    return Ok(Some(at(b)));
                }
                *checked += 1;
            }
            if (rows.len() as i64) < PAGE {
                break;
            }
        }
        Ok(walk
            .finish(head.head.as_deref())
            .err()
            .map(|b| broken(&head.key, None, b.position, b.found)))
    }
}

/// A break in `space`'s chain, at the row `id` (none: its head, or a chain gone).
fn broken(space: &str, id: Option<i64>, position: i64, found: Found) -> BrokenAt {
    BrokenAt {
        table: "space_audit_log",
        id: id.map(|i| i.to_string()),
        document_id: None,
        space: Some(space.to_string()),
        position: Some(position),
        found,
    }
}
