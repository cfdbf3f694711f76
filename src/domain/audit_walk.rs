//! Checking one chain, row by row in position order, against the head its owner keeps
//! (a document's `audit_count`/`audit_head`, or the admin chain's head row): what
//! `audit verify` computes. No I/O; the store streams the rows in.

use super::audit::{AuditKey, Hash, GENESIS};

/// What a check found at a position of a chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// The row's bytes (or its stored link) are not what was linked there.
    Changed,
    /// The chain skips this position: a row was removed.
    Missing,
    /// A row the chain never had: past the head's count, or a second row at a position.
    Inserted,
    /// The head counts rows past the last one there is: the chain's end was removed.
    TailMissing,
    /// The rows all link, but the head's last link is another.
    HeadChanged,
    /// A row that carries no link (written by an instance older than the chain, or by
    /// hand, and not linked yet).
    Unchained,
}

impl Found {
    pub fn as_str(self) -> &'static str {
        match self {
            Found::Changed => "changed",
            Found::Missing => "missing",
            Found::Inserted => "inserted",
            Found::TailMissing => "tail_missing",
            Found::HeadChanged => "head_changed",
            Found::Unchained => "unchained",
        }
    }
}

/// Where a chain broke: the position, and what was found there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Break {
    pub position: i64,
    pub found: Found,
}

/// One chain being checked.
#[derive(Debug, Clone)]
pub struct Walk {
    head_count: i64,
    expected: i64,
    prev: Hash,
}

impl Walk {
    /// A chain whose head counts `head_count` rows.
    pub fn new(head_count: i64) -> Self {
        Self {
            head_count,
            expected: 1,
            prev: GENESIS,
        }
    }

    /// The next row, at position `seq`, with its stored link and its canonical bytes.
    pub fn step(
        &mut self,
        key: &AuditKey,
        seq: i64,
        stored: &[u8],
        canonical: &[u8],
    ) -> Result<(), Break> {
        let at = |found| Break {
            position: seq,
            found,
        };
        if seq < self.expected || seq > self.head_count {
            return Err(at(Found::Inserted));
        }
        if seq > self.expected {
            return Err(Break {
                position: self.expected,
                found: Found::Missing,
            });
        }
        let link = key.link(&self.prev, canonical);
        if stored != link {
            return Err(at(Found::Changed));
        }
        self.prev = link;
        self.expected += 1;
        Ok(())
    }

    /// The end of the rows: the head must count them all and hold the last link.
    pub fn finish(&self, head_hash: Option<&[u8]>) -> Result<(), Break> {
        let rows = self.expected - 1;
        if rows < self.head_count {
            return Err(Break {
                position: self.expected,
                found: Found::TailMissing,
            });
        }
        let head_ok = match head_hash {
            None => rows == 0,
            Some(h) => rows > 0 && h == self.prev,
        };
        if head_ok {
            Ok(())
        } else {
            Err(Break {
                position: rows,
                found: Found::HeadChanged,
            })
        }
    }

    /// The link a row written next would follow, and its position.
    pub fn head(&self) -> (i64, Hash) {
        (self.expected - 1, self.prev)
    }
}
