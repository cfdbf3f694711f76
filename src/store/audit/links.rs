//! How an audited write of a document links its audit row: the document's chain head, as
//! the read that locks the document's row returns it. Every audited write of a document has
//! locked the document's row (`lock_document`, `lock_document_of_review`, or the INSERT of
//! a new one) before it links its audit row, so two links of one document are never made
//! from the same head; the head moves in the statement that writes the document when
//! there is one, or in the audit row's own statement (see `tx::write_audit_and_event`).

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::chain::AuditChain;
use crate::domain::audit::{as_hash, AuditRow, Hash, GENESIS};
use crate::domain::rules::AuditEntry;
use crate::domain::{Document, DocumentStatus, FencingToken};
use crate::store::tx::{Link, WriteContext};

impl AuditChain {
    /// The head of a document's chain, read under its row lock, ready to link from.
    pub(crate) fn at(&self, head: Head) -> DocChain {
        DocChain {
            chain: self.clone(),
            head,
        }
    }
}

/// A document's chain head as its locking read found it, and that transaction's `now()`
/// (the time its audit rows carry).
#[derive(Debug, Clone)]
pub(crate) struct Head {
    pub count: i64,
    pub hash: Option<Vec<u8>>,
    pub now: DateTime<Utc>,
}

/// The head of one locked document's chain, which each link made moves on.
#[derive(Debug)]
pub(crate) struct DocChain {
    chain: AuditChain,
    head: Head,
}

impl DocChain {
    /// Links the audit row `audit` of document `document_id` at `version`, written in
    /// `ctx`, after the head, and moves the head to it.
    pub fn link(
        &mut self,
        document_id: Uuid,
        audit: &AuditEntry,
        version: i64,
        ctx: &WriteContext<'_>,
    ) -> Link {
        let at = self.head.now;
        if !self.chain.on() {
            return Link {
                seq: None,
                hash: None,
                at,
                moves_head: true,
            };
        }
        let seq = self.head.count + 1;
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
            at,
        };
        let mut buf = Vec::with_capacity(256);
        row.canonical(&mut buf);
        let prev: Hash = self
            .head
            .hash
            .as_deref()
            .and_then(as_hash)
            .unwrap_or(GENESIS);
        let hash = self.chain.key().link(&prev, &buf).to_vec();
        self.head.count = seq;
        self.head.hash = Some(hash.clone());
        Link {
            seq: Some(seq),
            hash: Some(hash),
            at,
            moves_head: true,
        }
    }
}

/// A document read under its row lock, with its chain head and the transaction's time.
pub(crate) struct LockedDocument {
    pub id: Uuid,
    pub title: String,
    pub body: String,
    pub status: DocumentStatus,
    pub version: i64,
    pub author_id: String,
    pub space: String,
    pub current_review_id: Option<Uuid>,
    pub policy: String,
    pub fence_token: Option<FencingToken>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub published_version: Option<i64>,
    pub published_title: Option<String>,
    pub published_body: Option<String>,
    pub contributors: Vec<String>,
    pub verify_by: Option<DateTime<Utc>>,
    pub audit_count: i64,
    pub audit_head: Option<Vec<u8>>,
    pub now: DateTime<Utc>,
    /// The caller's memberships as its transaction's `BEGIN` read them, when it did
    /// (`kh.memberships`: `store::spaces::memberships`).
    pub memberships: Option<String>,
    /// The document of the review a comment points at, read with the lock
    /// (`store::documents::lock_document_for_comment`).
    pub review_document: Option<Uuid>,
}

impl LockedDocument {
    pub(crate) fn split(self) -> (Document, Head) {
        let head = Head {
            count: self.audit_count,
            hash: self.audit_head,
            now: self.now,
        };
        let doc = Document {
            id: self.id,
            title: self.title,
            body: self.body,
            status: self.status,
            version: self.version,
            author_id: self.author_id,
            space: self.space,
            current_review_id: self.current_review_id,
            policy: self.policy,
            fence_token: self.fence_token,
            created_at: self.created_at,
            updated_at: self.updated_at,
            published_version: self.published_version,
            published_title: self.published_title,
            published_body: self.published_body,
            contributors: self.contributors,
            verify_by: self.verify_by,
        };
        (doc, head)
    }
}
