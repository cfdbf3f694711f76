//! The chains' heads as PostgreSQL keeps them (a document's `audit_count`/`audit_head`, the
//! admin chain's row of `audit_chain_heads`, a space's `audit_count`/`audit_head`), the
//! documents' read a page at a time in id order: what `audit verify` walks beside the rows,
//! and what a checkpoint records.

use std::collections::{HashMap, VecDeque};

use uuid::Uuid;

use super::admin::{admin_rows, Only};
use crate::domain::audit::checkpoint::{ChainHead, ChainId};
use crate::domain::audit::{as_hash, Hash};
use crate::store::error::StoreError;
use crate::store::pg::{PgStore, Statement};

/// Heads read per statement.
const PAGE: i64 = 10_000;

pub(crate) struct DocHead {
    pub(crate) id: Uuid,
    pub(crate) count: i64,
    pub(crate) head: Option<Vec<u8>>,
}

/// The admin chain's head.
pub(crate) struct AdminHead {
    pub(crate) count: i64,
    pub(crate) hash: Option<Vec<u8>>,
}

impl PgStore {
    /// Every chain's head now, each as its row holds it at the moment it is read: the
    /// admin chain, then the documents' a page at a time, then the spaces'. What a
    /// checkpoint records.
    pub async fn chain_heads(&self) -> Result<Vec<ChainHead>, StoreError> {
        let admin = self.admin_head().await?;
        let mut out = vec![ChainHead {
            chain: ChainId::Admin,
            count: admin.count,
            head: admin.hash.as_deref().and_then(as_hash),
        }];
        let mut heads = Heads::new(None);
        while let Some(h) = heads.next(self).await? {
            out.push(ChainHead {
                chain: ChainId::Document(h.id),
                count: h.count,
                head: h.head.as_deref().and_then(as_hash),
            });
        }
        out.extend(self.space_chain_heads().await?);
        Ok(out)
    }

    /// The links of the rows at `rows` (a chain and a position each), by chain; a row
    /// that is not there, or carries no link, is left out.
    pub async fn links_at(
        &self,
        rows: &[(ChainId, i64)],
    ) -> Result<HashMap<ChainId, Hash>, StoreError> {
        let mut out = HashMap::with_capacity(rows.len());
        let docs: Vec<(Uuid, i64)> = rows
            .iter()
            .filter_map(|(c, n)| match c {
                ChainId::Document(id) => Some((*id, *n)),
                ChainId::Admin | ChainId::Space(_) => None,
            })
            .collect();
        let spaces: Vec<(String, i64)> = rows
            .iter()
            .filter_map(|(c, n)| match c {
                ChainId::Space(key) => Some((key.clone(), *n)),
                ChainId::Admin | ChainId::Document(_) => None,
            })
            .collect();
        if !spaces.is_empty() {
            out.extend(self.space_links_at(&spaces).await?);
        }
        for page in docs.chunks(PAGE as usize) {
            let (ids, seqs): (Vec<Uuid>, Vec<i64>) = page.iter().copied().unzip();
            let found = sqlx::query!(
                r#"SELECT a.document_id, a.hash FROM audit_log a
                   JOIN unnest($1::uuid[], $2::int8[]) AS w(document_id, seq)
                     ON a.document_id = w.document_id AND a.seq = w.seq"#,
                &ids,
                &seqs
            )
            .fetch_all(&mut *self.scoped().await?)
            .bounded(self)
            .await?;
            out.extend(found.into_iter().filter_map(|r| {
                let link = r.hash.as_deref().and_then(as_hash)?;
                Some((ChainId::Document(r.document_id), link))
            }));
        }
        if let Some(&(_, n)) = rows.iter().find(|(c, _)| *c == ChainId::Admin) {
            let mut conn = self.pool.acquire().await.map_err(StoreError::from)?;
            let row = admin_rows(&mut conn, false, n - 1, Only::All, 1)
                .bounded(self)
                .await?;
            let link = row.first().filter(|r| r.seq == Some(n));
            if let Some(link) = link.and_then(|r| r.hash.as_deref()).and_then(as_hash) {
                out.insert(ChainId::Admin, link);
            }
        }
        Ok(out)
    }

    pub(crate) async fn admin_head(&self) -> Result<AdminHead, StoreError> {
        sqlx::query_as!(
            AdminHead,
            "SELECT count, hash FROM audit_chain_heads WHERE chain = 'admin'"
        )
        .fetch_one(&self.pool)
        .bounded(self)
        .await
    }
}

/// The documents' heads in id order, a page at a time (or the one document checked).
pub(crate) struct Heads {
    buf: VecDeque<DocHead>,
    after: Option<Uuid>,
    only: Option<Uuid>,
    done: bool,
}

impl Heads {
    pub(crate) fn new(only: Option<Uuid>) -> Self {
        Self {
            buf: VecDeque::new(),
            after: only,
            only,
            done: false,
        }
    }

    pub(crate) async fn next(&mut self, store: &PgStore) -> Result<Option<DocHead>, StoreError> {
        if self.buf.is_empty() && !self.done {
            let from = self.after.unwrap_or_default();
            // From `from` itself on the first page (and for the one document).
            let inclusive = self.only.is_some() || self.after.is_none();
            let limit = if self.only.is_some() { 1 } else { PAGE };
            let page = sqlx::query_as!(
                DocHead,
                r#"SELECT id, audit_count AS count, audit_head AS head FROM documents
                   WHERE id >= $1 AND (id > $1 OR $2) ORDER BY id LIMIT $3"#,
                from,
                inclusive,
                limit
            )
            .fetch_all(&mut *store.scoped().await?)
            .bounded(store)
            .await?;
            self.done = self.only.is_some() || (page.len() as i64) < PAGE;
            self.after = page.last().map(|h| h.id).or(self.after);
            let only = self.only;
            self.buf
                .extend(page.into_iter().filter(|h| only.is_none_or(|d| d == h.id)));
        }
        Ok(self.buf.pop_front())
    }
}
