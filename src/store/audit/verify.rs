//! `audit verify`: recomputes every chain in one pass and names the first row that does
//! not match. A document's rows are read in chain order by keyset pages on
//! `audit_log_chain` (document, position), beside the documents' heads in id order (the
//! same order), so each chain is checked as its rows stream past and ends against its
//! document's head; then the admin chain against its head row; then each space's chain
//! against its space's head (`spaces`); then any row that carries no link at all. Each page
//! is one bounded statement on the pool.
//!
//! Given a checkpoint (checked by its caller), every chain is also checked against its
//! entry there, and a chain the checkpoint holds that is gone is named.

use uuid::Uuid;

use super::admin::{admin_rows, Only};
use super::heads::{DocHead, Heads};
use crate::domain::audit::checkpoint::{Anchor, Anchors, Checkpoint, Gone};
use crate::domain::audit::walk::{Break, Found, Walk};
use crate::domain::audit::{AuditKey, AuditRow};
use crate::store::error::StoreError;
use crate::store::pg::{PgStore, Statement};

/// Rows read per statement.
const PAGE: i64 = 10_000;

/// What a check of the chains found: the rows it checked, and the first broken one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub checked: u64,
    pub broken_at: Option<BrokenAt>,
}

/// The first row (or place) where a chain does not hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokenAt {
    /// `audit_log`, `policy_versions`, `outbox_admin_actions`, `space_admin_actions`,
    /// `audit_chain_heads` or `space_audit_log`.
    pub table: &'static str,
    /// The row's key (an id, or `name/version`), when there is a row there.
    pub id: Option<String>,
    /// The document whose chain it is (none for the admin chain and the spaces').
    pub document_id: Option<Uuid>,
    /// The space whose chain it is (only for a space's chain).
    pub space: Option<String>,
    /// The position in the chain, from 1 (none for a row that has none).
    pub position: Option<i64>,
    pub found: Found,
}

impl PgStore {
    /// Checks the chain of `document`, or every chain, against their heads and against
    /// `checkpoint` when there is one; stops at the first break.
    pub async fn verify_audit(
        &self,
        document: Option<Uuid>,
        checkpoint: Option<&Checkpoint>,
    ) -> Result<Verified, StoreError> {
        let key = self.audit.key().clone();
        let mut checked = 0;
        let mut chains = Chains {
            heads: Heads::new(document),
            anchors: checkpoint.map(|c| c.anchors(document)).unwrap_or_default(),
        };
        if let Some(b) = self
            .verify_documents(&key, document, &mut chains, &mut checked)
            .await?
        {
            return Ok(Verified {
                checked,
                broken_at: Some(b),
            });
        }
        if document.is_none() {
            let anchor = checkpoint.and_then(Checkpoint::admin);
            if let Some(b) = self.verify_admin(&key, anchor, &mut checked).await? {
                return Ok(Verified {
                    checked,
                    broken_at: Some(b),
                });
            }
            let anchors = checkpoint.map(Checkpoint::spaces).unwrap_or_default();
            if let Some(b) = self.verify_spaces(&key, anchors, &mut checked).await? {
                return Ok(Verified {
                    checked,
                    broken_at: Some(b),
                });
            }
        }
        Ok(Verified {
            checked,
            broken_at: self.unlinked(document).await?,
        })
    }

    async fn verify_documents(
        &self,
        key: &AuditKey,
        only: Option<Uuid>,
        chains: &mut Chains,
        checked: &mut u64,
    ) -> Result<Option<BrokenAt>, StoreError> {
        let mut cursor = (only.unwrap_or_default(), i64::MIN);
        let mut current: Option<(DocHead, Walk)> = None;
        let mut buf = Vec::with_capacity(256);
        'pages: loop {
            let rows = self.audit_page(cursor).await?;
            let last_page = (rows.len() as i64) < PAGE;
            for r in &rows {
                if only.is_some_and(|d| d != r.document_id) {
                    break 'pages;
                }
                cursor = (r.document_id, r.seq);
                // Close every chain before this row's document.
                while current.as_ref().is_none_or(|(h, _)| h.id < r.document_id) {
                    if let Some(b) = finish(current.take()) {
                        return Ok(Some(b));
                    }
                    match chains.next(self).await? {
                        Next::Chain(h, w) => current = Some((h, w)),
                        Next::Gone(b) => return Ok(Some(b)),
                        Next::End => break,
                    }
                }
                let at = |b: Break| broken(r.document_id, Some(r.id), b);
                let Some((_, walk)) = current.as_mut().filter(|(h, _)| h.id == r.document_id)
                else {
                    return Ok(Some(at(Break {
                        position: r.seq,
                        found: Found::Inserted,
                    })));
                };
                let Some(stored) = r.hash.as_deref() else {
                    return Ok(Some(at(Break {
                        position: r.seq,
                        found: Found::Unchained,
                    })));
                };
                r.row().canonical(&mut buf);
                if let Err(b) = walk.step(key, r.seq, stored, &buf) {
                    return Ok(Some(at(b)));
                }
                *checked += 1;
            }
            if last_page {
                break;
            }
        }
        // The chains of the documents left, with rows or with none.
        loop {
            if let Some(b) = finish(current.take()) {
                return Ok(Some(b));
            }
            match chains.next(self).await? {
                Next::Chain(h, w) => current = Some((h, w)),
                Next::Gone(b) => return Ok(Some(b)),
                Next::End => return Ok(None),
            }
        }
    }

    /// Up to [`PAGE`] rows of `audit_log` after `(document, position)`, in chain order (a
    /// row comparison is true for a later document whatever its position: rows with none
    /// are left to [`PgStore::unlinked`]).
    async fn audit_page(&self, after: (Uuid, i64)) -> Result<Vec<LogRow>, StoreError> {
        sqlx::query_as!(
            LogRow,
            r#"SELECT id, document_id, seq AS "seq!", hash, review_id, action, actor_id,
                      from_status, to_status, document_version, request_id, lock_mode,
                      fence_token, at
               FROM audit_log WHERE (document_id, seq) > ($1, $2) AND seq IS NOT NULL
               ORDER BY document_id, seq LIMIT $3"#,
            after.0,
            after.1,
            PAGE
        )
        .fetch_all(&mut *self.scoped().await?)
        .bounded(self)
        .await
    }

    /// The first row that carries no link, of `document` or of any.
    async fn unlinked(&self, document: Option<Uuid>) -> Result<Option<BrokenAt>, StoreError> {
        let row = sqlx::query!(
            "SELECT id, document_id FROM audit_log \
             WHERE (hash IS NULL OR seq IS NULL) AND document_id >= $1 \
             ORDER BY document_id, id LIMIT 1",
            document.unwrap_or(Uuid::nil())
        )
        .fetch_optional(&mut *self.scoped().await?)
        .bounded(self)
        .await?
        .filter(|r| document.is_none_or(|d| d == r.document_id));
        if let Some(r) = row {
            return Ok(Some(BrokenAt {
                table: "audit_log",
                id: Some(r.id.to_string()),
                document_id: Some(r.document_id),
                space: None,
                position: None,
                found: Found::Unchained,
            }));
        }
        if document.is_some() {
            return Ok(None);
        }
        let mut conn = self.pool.acquire().await.map_err(StoreError::from)?;
        let admin = admin_rows(&mut conn, true, 0, Only::All, 1)
            .bounded(self)
            .await?;
        Ok(admin.first().map(|r| {
            let (table, id) = r.named();
            BrokenAt {
                table,
                id: Some(id),
                document_id: None,
                space: None,
                position: None,
                found: Found::Unchained,
            }
        }))
    }

    /// The admin chain, checked against its head row.
    async fn verify_admin(
        &self,
        key: &AuditKey,
        anchor: Option<Anchor>,
        checked: &mut u64,
    ) -> Result<Option<BrokenAt>, StoreError> {
        let head = self.admin_head().await?;
        let kinds = self.audit.kinds().clone();
        let mut walk = Walk::new(head.count).anchored(anchor);
        let mut after = 0;
        let mut buf = Vec::with_capacity(512);
        loop {
            let mut conn = self.pool.acquire().await.map_err(StoreError::from)?;
            let rows = admin_rows(&mut conn, false, after, Only::All, PAGE)
                .bounded(self)
                .await?;
            for r in &rows {
                let seq = r.seq.unwrap_or(0);
                after = seq;
                let (table, id) = r.named();
                let at = |b: Break| BrokenAt {
                    table,
                    id: Some(id.clone()),
                    document_id: None,
                    space: None,
                    position: Some(b.position),
                    found: b.found,
                };
                let Some(stored) = r.hash.as_deref() else {
                    return Ok(Some(at(Break {
                        position: seq,
                        found: Found::Unchained,
                    })));
                };
                // A row its kind's type cannot read, or in a format it does not have, is
                // not what was linked there.
                let read = r.canonical(&kinds, &mut buf, seq, r.format);
                if read.is_err() {
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
        Ok(walk.finish(head.hash.as_deref()).err().map(|b| BrokenAt {
            table: "audit_chain_heads",
            id: Some("admin".to_string()),
            document_id: None,
            space: None,
            position: Some(b.position),
            found: b.found,
        }))
    }
}

/// A linked row of `audit_log`.
struct LogRow {
    id: i64,
    document_id: Uuid,
    seq: i64,
    hash: Option<Vec<u8>>,
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

impl LogRow {
    fn row(&self) -> AuditRow<'_> {
        AuditRow {
            document_id: self.document_id,
            seq: self.seq,
            review_id: self.review_id,
            action: &self.action,
            actor_id: &self.actor_id,
            from_status: self.from_status.as_deref(),
            to_status: &self.to_status,
            document_version: self.document_version,
            request_id: self.request_id.as_deref(),
            lock_mode: &self.lock_mode,
            fence_token: self.fence_token,
            at: self.at,
        }
    }
}

fn broken(document: Uuid, id: Option<i64>, b: Break) -> BrokenAt {
    BrokenAt {
        table: "audit_log",
        id: id.map(|i| i.to_string()),
        document_id: Some(document),
        space: None,
        position: Some(b.position),
        found: b.found,
    }
}

/// The end of a document's chain, checked against its head.
fn finish(current: Option<(DocHead, Walk)>) -> Option<BrokenAt> {
    let (h, walk) = current?;
    walk.finish(h.head.as_deref())
        .err()
        .map(|b| broken(h.id, None, b))
}

/// The documents' chains in id order, each with its entry of the checkpoint, and the
/// chains of the checkpoint that are gone.
struct Chains {
    heads: Heads,
    anchors: Anchors,
}

enum Next {
    Chain(DocHead, Walk),
    Gone(BrokenAt),
    End,
}

impl Chains {
    async fn next(&mut self, store: &PgStore) -> Result<Next, StoreError> {
        let Some(h) = self.heads.next(store).await? else {
            return Ok(self
                .anchors
                .gone()
                .map_or(Next::End, |g| Next::Gone(gone(g))));
        };
        match self.anchors.take(h.id) {
            Ok(anchor) => {
                let walk = Walk::new(h.count).anchored(anchor);
                Ok(Next::Chain(h, walk))
            }
            Err(g) => Ok(Next::Gone(gone(g))),
        }
    }
}

/// A chain of the checkpoint that is gone: named by its document and its count then.
fn gone(g: Gone) -> BrokenAt {
    BrokenAt {
        table: "audit_log",
        id: None,
        document_id: Some(g.document),
        space: None,
        position: Some(g.count),
        found: Found::ChainMissing,
    }
}
