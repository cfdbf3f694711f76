//! Checkpoints of the audit chains, with no I/O: every chain's id, count and head at one
//! moment, signed with the audit key and linked to the checkpoint before it, kept where a
//! PostgreSQL operator cannot rewrite it in the same stroke as the chains. A checkpoint's
//! link is `HMAC-SHA-256(audit.key, previous checkpoint's link || its canonical bytes)`, the
//! arithmetic of the chain rows themselves, so that whoever lacks the key can neither make
//! one nor change one.
//!
//! A checkpoint never forgets: a chain the chains now do not extend (rewound, rewritten, or
//! gone) keeps its entry of the checkpoint before ([`follow`]), so that every later check
//! still finds it.
//!
//! [`Anchors`] gives `audit verify` each document chain's entry of the checkpoint as the
//! chains stream past in id order, and names the chains of the checkpoint that are gone.

use std::collections::{HashMap, HashSet, VecDeque};

use chrono::{DateTime, Utc};
use uuid::Uuid;

pub use super::walk::Anchor;
use super::walk::Found;
use super::{AuditKey, Canon, Hash, GENESIS};

/// A chain: the admin chain (policies, outbox admin actions, spaces created), a
/// document's, or a space's (its settings and memberships).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ChainId {
    Admin,
    Document(Uuid),
    /// The space of this key.
    Space(String),
}

impl ChainId {
    /// `admin`, the document's id, or `space:<key>`: how a checkpoint names the chain.
    pub fn name(&self) -> String {
        match self {
            ChainId::Admin => "admin".to_string(),
            ChainId::Document(id) => id.to_string(),
            ChainId::Space(key) => format!("space:{key}"),
        }
    }

    /// The chain a checkpoint names `name`.
    pub fn parse(name: &str) -> Option<Self> {
        if let Some(key) = name.strip_prefix("space:") {
            let ok = !key.is_empty()
                && key
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
            return ok.then(|| ChainId::Space(key.to_string()));
        }
        match name {
            "admin" => Some(ChainId::Admin),
            id => Uuid::parse_str(id).ok().map(ChainId::Document),
        }
    }
}

/// One chain in a checkpoint: how many rows it had, and the link of the last one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainHead {
    pub chain: ChainId,
    pub count: i64,
    /// None for a chain with no rows.
    pub head: Option<Hash>,
}

/// The chains at one moment, signed and linked to the checkpoint before.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    /// 1 for the first checkpoint, then one more each time.
    pub sequence: i64,
    pub taken_at: DateTime<Utc>,
    /// The link of the checkpoint before ([`GENESIS`] before the first).
    pub prev: Hash,
    /// Every chain, in [`ChainId`] order (the admin chain first, then documents by id, then
    /// spaces by key).
    pub chains: Vec<ChainHead>,
    /// This checkpoint's link: its signature, and what the next one links to.
    pub link: Hash,
}

/// Where a checkpoint does not hold: its own signature, or its link to the one before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckpointBreak {
    /// The checkpoint's sequence.
    pub sequence: i64,
    /// `Changed`: its contents are not what was signed. `Missing`: it does not link to
    /// the checkpoint before it (that one was removed or replaced).
    pub found: Found,
}

impl Checkpoint {
    /// The checkpoint of `chains` (sorted here), signed with `key` after the link `prev`,
    /// taken at `taken_at` to the millisecond (what its stores keep of a time).
    pub fn seal(
        key: &AuditKey,
        sequence: i64,
        taken_at: DateTime<Utc>,
        prev: Hash,
        mut chains: Vec<ChainHead>,
    ) -> Self {
        chains.sort_by(|a, b| a.chain.cmp(&b.chain));
        let taken_at =
            DateTime::from_timestamp_millis(taken_at.timestamp_millis()).unwrap_or(taken_at);
        let mut cp = Self {
            sequence,
            taken_at,
            prev,
            chains,
            link: GENESIS,
        };
        cp.link = cp.expected_link(key);
        cp
    }

    /// The link this checkpoint's contents make after its `prev`.
    fn expected_link(&self, key: &AuditKey) -> Hash {
        let mut buf = Vec::with_capacity(64 + self.chains.len() * 64);
        let mut c = Canon::start(&mut buf, "checkpoint");
        c.int(self.sequence).time(self.taken_at);
        c.int(i64::try_from(self.chains.len()).unwrap_or(i64::MAX));
        for h in &self.chains {
            // Admin: 0; a document: 1 and its id (as `opt_uuid` writes them, so checkpoints
            // from before space chains keep their bytes); a space: 2 and its key.
            match &h.chain {
                ChainId::Admin => c.opt_uuid(None),
                ChainId::Document(id) => c.opt_uuid(Some(*id)),
                ChainId::Space(key) => c.variant(2).text(key),
            };
            c.int(h.count);
            c.opt_bytes(h.head.as_ref().map(|h| &h[..]));
        }
        key.link(&self.prev, &buf)
    }

    /// Whether its contents are what was signed with `key`.
    pub fn signed(&self, key: &AuditKey) -> bool {
        self.expected_link(key) == self.link
    }

    /// Checks the signature, and the link to `before` (the checkpoint before it, by its
    /// sequence and link; None when there is none to be found).
    pub fn check(
        &self,
        key: &AuditKey,
        before: Option<(i64, Hash)>,
    ) -> Result<(), CheckpointBreak> {
        let at = |found| CheckpointBreak {
            sequence: self.sequence,
            found,
        };
        if !self.signed(key) {
            return Err(at(Found::Changed));
        }
        let linked = match before {
            None => self.sequence == 1 && self.prev == GENESIS,
            Some((sequence, link)) => sequence == self.sequence - 1 && link == self.prev,
        };
        if linked {
            Ok(())
        } else {
            Err(at(Found::Missing))
        }
    }

    /// The rows the chains held.
    pub fn rows(&self) -> i64 {
        self.chains.iter().map(|c| c.count).sum()
    }

    /// The admin chain's entry.
    pub fn admin(&self) -> Option<Anchor> {
        self.chains
            .iter()
            .find(|c| c.chain == ChainId::Admin)
            .map(anchor)
    }

    /// The space chains' entries, by key.
    pub fn spaces(&self) -> HashMap<String, Anchor> {
        self.chains
            .iter()
            .filter_map(|c| match &c.chain {
                ChainId::Space(key) => Some((key.clone(), anchor(c))),
                _ => None,
            })
            .collect()
    }

    /// The document chains' entries, for a check of every chain (or of `only`).
    pub fn anchors(&self, only: Option<Uuid>) -> Anchors {
        let docs = self.chains.iter().filter_map(|c| match c.chain {
            ChainId::Document(id) if only.is_none_or(|o| o == id) => Some((id, anchor(c))),
            _ => None,
        });
        Anchors {
            left: docs.collect(),
        }
    }
}

/// A chain's entry, as a chain's walk checks against it.
fn anchor(c: &ChainHead) -> Anchor {
    Anchor {
        count: c.count,
        head: c.head,
    }
}

/// The document chains of a checkpoint, taken in id order as the chains are checked.
#[derive(Debug, Clone, Default)]
pub struct Anchors {
    left: VecDeque<(Uuid, Anchor)>,
}

/// A chain the checkpoint holds that is gone: the document, and its count then.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gone {
    pub document: Uuid,
    pub count: i64,
}

impl Anchors {
    /// The entry of `document`, the next chain checked (documents come in id order): Err
    /// when the checkpoint holds a chain before it that was not checked, which is gone.
    pub fn take(&mut self, document: Uuid) -> Result<Option<Anchor>, Gone> {
        match self.left.front() {
            Some(&(id, a)) if id < document => Err(Gone {
                document: id,
                count: a.count,
            }),
            Some(&(id, a)) if id == document => {
                self.left.pop_front();
                Ok(Some(a))
            }
            _ => Ok(None),
        }
    }

    /// After the last chain: the first of the checkpoint's chains never checked.
    pub fn gone(&self) -> Option<Gone> {
        self.left.front().map(|&(document, a)| Gone {
            document,
            count: a.count,
        })
    }
}

/// A chain of the previous checkpoint that the chains now do not extend, kept at its
/// previous entry: `Rewound` (shorter, or another row at the previous count) or
/// `ChainMissing` (gone).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    pub chain: ChainId,
    pub found: Found,
}

/// The rows whose links tell whether the chains that grew since `prev` still extend it:
/// each such chain's row at its count in `prev`.
pub fn to_look_up(prev: &Checkpoint, now: &[ChainHead]) -> Vec<(ChainId, i64)> {
    let before: HashMap<&ChainId, i64> = prev.chains.iter().map(|c| (&c.chain, c.count)).collect();
    now.iter()
        .filter_map(|c| match before.get(&c.chain) {
            Some(&n) if n > 0 && c.count > n => Some((c.chain.clone(), n)),
            _ => None,
        })
        .collect()
}

/// The chains of the checkpoint after `prev`: each chain as it is `now` where it extends
/// its entry in `prev` (same count and head, or grown with `linked` holding the previous
/// head at the previous count: the links of [`to_look_up`]'s rows), else its entry in
/// `prev`; and the chains of `prev` that are gone, kept as they were.
pub fn follow(
    prev: &Checkpoint,
    now: Vec<ChainHead>,
    linked: &HashMap<ChainId, Hash>,
) -> (Vec<ChainHead>, Vec<Kept>) {
    let before: HashMap<&ChainId, &ChainHead> = prev.chains.iter().map(|c| (&c.chain, c)).collect();
    let mut seen = HashSet::with_capacity(now.len());
    let mut kept = Vec::new();
    let mut out: Vec<ChainHead> = now
        .into_iter()
        .map(|c| {
            seen.insert(c.chain.clone());
            let Some(p) = before.get(&c.chain) else {
                return c;
            };
            let extends = match c.count.cmp(&p.count) {
                std::cmp::Ordering::Less => false,
                std::cmp::Ordering::Equal => c.head == p.head,
                std::cmp::Ordering::Greater => {
                    p.count == 0 || linked.get(&c.chain) == p.head.as_ref()
                }
            };
            if extends {
                return c;
            }
            kept.push(Kept {
                chain: c.chain,
                found: Found::Rewound,
            });
            (*p).clone()
        })
        .collect();
    for p in prev.chains.iter().filter(|p| !seen.contains(&p.chain)) {
        kept.push(Kept {
            chain: p.chain.clone(),
            found: Found::ChainMissing,
        });
        out.push(p.clone());
    }
    (out, kept)
}

#[cfg(test)]
mod tests;
