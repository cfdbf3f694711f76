//! Checking one chain, row by row in position order, against the head its owner keeps
//! (a document's `audit_count`/`audit_head`, or the admin chain's head row) and against
//! the latest checkpoint's entry for it (which a PostgreSQL operator cannot rewind with
//! the head): what `audit verify` computes. No I/O; the store streams the rows in.

use super::{AuditKey, Hash, GENESIS};

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
    /// The chain is shorter than the latest checkpoint says, or its row at the
    /// checkpoint's count is another: its end was removed and its head rewound (or
    /// rewritten) since.
    Rewound,
    /// A chain the latest checkpoint holds is gone (its document deleted with its rows).
    ChainMissing,
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
            Found::Rewound => "rewound",
            Found::ChainMissing => "chain_missing",
        }
    }
}

/// What the latest checkpoint holds of one chain: its count then, and its head then.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Anchor {
    pub count: i64,
    pub head: Option<Hash>,
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
    anchor: Option<Anchor>,
}

impl Walk {
    /// A chain whose head counts `head_count` rows.
    pub fn new(head_count: i64) -> Self {
        Self {
            head_count,
            expected: 1,
            prev: GENESIS,
            anchor: None,
        }
    }

    /// This chain checked against `anchor` too: its entry in the latest checkpoint.
    pub fn anchored(self, anchor: Option<Anchor>) -> Self {
        Self { anchor, ..self }
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
        if self
            .anchor
            .is_some_and(|a| a.count == seq && a.head != Some(link))
        {
            return Err(at(Found::Rewound));
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
        if self.anchor.is_some_and(|a| rows < a.count) {
            return Err(Break {
                position: self.expected,
                found: Found::Rewound,
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
