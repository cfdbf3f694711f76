//! The formats of the admin chain's rows (policy versions, outbox admin actions). A row is
//! linked over its canonical bytes in one format, which it records (`chain_format`), and
//! the bytes of a format never change once rows exist in it: a check reads each row in its
//! own format.
//!
//! - Format 1, the first: the columns listed by hand, in one text form
//!   ([`super::admin_canonical`], from the store's statement). Frozen: rows linked
//!   by releases before formats keep it, and nothing is linked in it any more.
//! - Format 2 and later: derived from the row's type ([`Audited`]). The row as PostgreSQL
//!   gives it (every column, as JSON), read into the type and written back by serde, as
//!   canonical JSON (keys sorted, no spaces), behind the tag `kh-review/admin/{format}`,
//!   the kind and the position. A field a later format added is left out of the bytes of
//!   an earlier one: adding a field to a type is adding it to [`Audited::ADDED`] with the
//!   next format, and rows linked before keep their bytes while rows linked after cover it.
//!
//! Never change what a type's existing fields serialize to (their names, their forms):
//! that would change the bytes of the rows already linked.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use super::audited::{current, latest, micros, Audited, Format, DERIVED, LISTED};
use super::{admin_canonical, Canon};
use crate::domain::policy::PolicyRecord;
use crate::domain::space_changes::SpaceActionRecord;

/// Why a row's bytes could not be made.
#[derive(Debug)]
pub enum Unreadable {
    /// A kind the chain does not know.
    Kind(String),
    /// A format its kind does not have (a later release's, or no format at all).
    Format(Format),
    /// The row does not read as its kind's type.
    Row(serde_json::Error),
}

impl std::fmt::Display for Unreadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unreadable::Kind(k) => write!(f, "the admin chain has no kind {k:?}"),
            Unreadable::Format(n) => write!(f, "no format {n} for this kind of row"),
            Unreadable::Row(e) => write!(f, "the row does not read as its type: {e}"),
        }
    }
}

impl std::error::Error for Unreadable {}

/// The canonical bytes of `row` (a row as JSON) of type `T` at position `seq`, in `format`.
pub fn derived<T: Audited>(
    buf: &mut Vec<u8>,
    seq: i64,
    format: Format,
    row: &Value,
) -> Result<(), Unreadable> {
    if !(DERIVED..=latest::<T>()).contains(&format) {
        return Err(Unreadable::Format(format));
    }
    let typed = T::deserialize(row).map_err(Unreadable::Row)?;
    let mut value = serde_json::to_value(&typed).map_err(Unreadable::Row)?;
    if let Value::Object(fields) = &mut value {
        for (field, since) in T::ADDED {
            if *since > format {
                fields.remove(*field);
            }
        }
    }
    let mut json = String::with_capacity(256);
    canonical_json(&value, &mut json);
    Canon::start(buf, &format!("kh-review/admin/{format}"))
        .text(T::KIND)
        .int(seq)
        .text(&json);
    Ok(())
}

/// `v` as JSON with every object's keys sorted (by their bytes) and no spaces, whatever
/// order its maps keep.
pub fn canonical_json(v: &Value, out: &mut String) {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::from(k.as_str()).to_string());
                out.push(':');
                canonical_json(&map[k], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical_json(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// How the chain reads rows of one kind: as its type, linked now in its current format.
#[derive(Clone, Copy)]
pub struct AdminKind {
    kind: &'static str,
    /// Its first format: 1 for the kinds from before formats, else the first derived one.
    first: Format,
    format: Format,
    bytes: fn(&mut Vec<u8>, i64, Format, &Value) -> Result<(), Unreadable>,
}

impl std::fmt::Debug for AdminKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AdminKind({}, format {})", self.kind, self.format)
    }
}

impl AdminKind {
    /// Rows of `T`'s kind, read as `T`.
    pub fn of<T: Audited>() -> Self {
        Self {
            kind: T::KIND,
            first: T::FIRST,
            format: current::<T>(),
            bytes: derived::<T>,
        }
    }
}

/// The kinds of the admin chain, each read as its type.
#[derive(Debug, Clone)]
pub struct AdminKinds(Vec<AdminKind>);

impl Default for AdminKinds {
    /// The service's: policy versions, outbox admin actions and spaces created.
    fn default() -> Self {
        Self(vec![
            AdminKind::of::<PolicyRecord>(),
            AdminKind::of::<OutboxActionRecord>(),
            AdminKind::of::<SpaceActionRecord>(),
        ])
    }
}

impl AdminKinds {
    /// These kinds, with `kind` read as its type instead of as before (or added).
    pub fn with(mut self, kind: AdminKind) -> Self {
        self.0.retain(|k| k.kind != kind.kind);
        self.0.push(kind);
        self
    }

    fn of(&self, kind: &str) -> Result<&AdminKind, Unreadable> {
        let found = self.0.iter().find(|k| k.kind == kind);
        found.ok_or_else(|| Unreadable::Kind(kind.to_string()))
    }

    /// The format a row of `kind` is linked in now.
    pub fn current(&self, kind: &str) -> Result<Format, Unreadable> {
        Ok(self.of(kind)?.format)
    }

    /// The canonical bytes, into `buf`, of a row of `kind` at position `seq` in `format`:
    /// format 1 from its listed `fields`, a later one from the whole `row` read as the
    /// kind's type.
    pub fn canonical(
        &self,
        buf: &mut Vec<u8>,
        kind: &str,
        seq: i64,
        format: Format,
        fields: &[Option<String>],
        row: &Value,
    ) -> Result<(), Unreadable> {
        let of = self.of(kind)?;
        if format < of.first {
            // A kind that arrived after formats was never linked in format 1.
            return Err(Unreadable::Format(format));
        }
        if format == LISTED {
            admin_canonical(buf, kind, seq, fields);
            return Ok(());
        }
        (of.bytes)(buf, seq, format, row)
    }
}

/// An admin's action on a parked outbox row as the admin chain covers it: the columns of
/// its `outbox_admin_actions` row but its id and the chain's own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutboxActionRecord {
    pub outbox_id: i64,
    pub event_id: Uuid,
    pub document_id: Uuid,
    pub event_type: String,
    pub action: String,
    pub actor_id: String,
    pub request_id: Option<String>,
    pub attempts: i32,
    #[serde(with = "micros")]
    pub parked_at: DateTime<Utc>,
    pub parked_reason: String,
    #[serde(with = "micros")]
    pub at: DateTime<Utc>,
}

impl Audited for OutboxActionRecord {
    const KIND: &'static str = "outbox_action";
}

#[cfg(test)]
mod tests;
