//! The audit chain's arithmetic, with no I/O: the canonical bytes of an audit row and the
//! keyed link that chains it to the row before it,
//! `hash = HMAC-SHA-256(audit.key, prev_hash || canonical bytes)`.
//!
//! The canonical bytes are fixed-width where a column is (integers big-endian, UUIDs as
//! their 16 bytes, times as microseconds since the epoch) and length-prefixed where it is
//! not (text: a u32 length, then the UTF-8 bytes); an optional column starts with a
//! presence byte. Each kind of row starts with its own tag, so no two rows, of one kind or
//! of two, ever encode the same. A row's position in its chain (`seq`) is part of its
//! bytes; its bigserial id is not, since a write only learns that after its INSERT.

pub mod audited;
pub mod checkpoint;
pub mod format;
pub mod walk;

use chrono::{DateTime, Utc};
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use uuid::Uuid;

/// One link of a chain: the HMAC-SHA-256 of a row.
pub type Hash = [u8; 32];

/// The link before the first row of every chain.
pub const GENESIS: Hash = [0; 32];

/// The key links are made with, ready to use (its HMAC state is keyed once). Never printed.
#[derive(Clone)]
pub struct AuditKey {
    mac: Hmac<Sha256>,
}

impl std::fmt::Debug for AuditKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AuditKey(..)")
    }
}

impl AuditKey {
    pub fn new(secret: &[u8]) -> Self {
        Self {
            // HMAC takes a key of any length.
            mac: Hmac::<Sha256>::new_from_slice(secret).expect("HMAC accepts any key length"),
        }
    }

    /// The link of a row whose canonical bytes are `canonical`, after the link `prev`.
    pub fn link(&self, prev: &Hash, canonical: &[u8]) -> Hash {
        let mut mac = self.mac.clone();
        mac.update(prev);
        mac.update(canonical);
        mac.finalize().into_bytes().into()
    }
}

/// `bytes` as a 32-byte link, if they are one.
pub fn as_hash(bytes: &[u8]) -> Option<Hash> {
    bytes.try_into().ok()
}

/// Lower-case hexadecimal, for reports.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Writes canonical bytes into a buffer the caller reuses.
pub struct Canon<'a>(&'a mut Vec<u8>);

impl<'a> Canon<'a> {
    /// Starts the bytes of a row of kind `tag` (the buffer is cleared first).
    pub fn start(buf: &'a mut Vec<u8>, tag: &str) -> Self {
        buf.clear();
        let mut c = Canon(buf);
        c.text(tag);
        c
    }

    pub fn int(&mut self, v: i64) -> &mut Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }

    pub fn uuid(&mut self, v: Uuid) -> &mut Self {
        self.0.extend_from_slice(v.as_bytes());
        self
    }

    pub fn text(&mut self, v: &str) -> &mut Self {
        let len = u32::try_from(v.len()).unwrap_or(u32::MAX);
        self.0.extend_from_slice(&len.to_be_bytes());
        self.0.extend_from_slice(v.as_bytes());
        self
    }

    /// A time, to the microsecond (PostgreSQL's precision).
    pub fn time(&mut self, v: DateTime<Utc>) -> &mut Self {
        self.int(v.timestamp_micros())
    }

    /// One byte that says which of several shapes follows (as a presence byte does).
    pub fn variant(&mut self, tag: u8) -> &mut Self {
        self.0.push(tag);
        self
    }

    pub fn opt_int(&mut self, v: Option<i64>) -> &mut Self {
        match v {
            None => self.0.push(0),
            Some(v) => {
                self.0.push(1);
                self.int(v);
            }
        }
        self
    }

    pub fn opt_uuid(&mut self, v: Option<Uuid>) -> &mut Self {
        match v {
            None => self.0.push(0),
            Some(v) => {
                self.0.push(1);
                self.uuid(v);
            }
        }
        self
    }

    /// Bytes of any length (a link), length-prefixed like text, or none.
    pub fn opt_bytes(&mut self, v: Option<&[u8]>) -> &mut Self {
        match v {
            None => self.0.push(0),
            Some(v) => {
                self.0.push(1);
                let len = u32::try_from(v.len()).unwrap_or(u32::MAX);
                self.0.extend_from_slice(&len.to_be_bytes());
                self.0.extend_from_slice(v);
            }
        }
        self
    }

    pub fn opt_text(&mut self, v: Option<&str>) -> &mut Self {
        match v {
            None => self.0.push(0),
            Some(v) => {
                self.0.push(1);
                self.text(v);
            }
        }
        self
    }
}

/// Every column of an `audit_log` row that says what happened, its place in its
/// document's chain included: what the link covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditRow<'a> {
    pub document_id: Uuid,
    /// Its position in the document's chain, from 1.
    pub seq: i64,
    pub review_id: Option<Uuid>,
    pub action: &'a str,
    pub actor_id: &'a str,
    pub from_status: Option<&'a str>,
    pub to_status: &'a str,
    pub document_version: i64,
    pub request_id: Option<&'a str>,
    pub lock_mode: &'a str,
    pub fence_token: Option<i64>,
    pub at: DateTime<Utc>,
}

impl AuditRow<'_> {
    /// The row's canonical bytes, into `buf`.
    pub fn canonical(&self, buf: &mut Vec<u8>) {
        Canon::start(buf, "kh-review/audit_log/1")
            .uuid(self.document_id)
            .int(self.seq)
            .opt_uuid(self.review_id)
            .text(self.action)
            .text(self.actor_id)
            .opt_text(self.from_status)
            .text(self.to_status)
            .int(self.document_version)
            .opt_text(self.request_id)
            .text(self.lock_mode)
            .opt_int(self.fence_token)
            .time(self.at);
    }
}

/// A row of the admin chain (policy versions and outbox admin actions) in format 1, the
/// rows linked before formats: its columns read in a fixed text form (see the store's
/// statement), its table's tag, its position, then each column, NULL or text. Frozen; the
/// later formats are in `audit_format`.
pub fn admin_canonical(buf: &mut Vec<u8>, kind: &str, seq: i64, fields: &[Option<String>]) {
    let mut c = Canon::start(buf, "kh-review/admin/1");
    c.text(kind).int(seq).int(fields.len() as i64);
    for f in fields {
        c.opt_text(f.as_deref());
    }
}

#[cfg(test)]
mod tests;
