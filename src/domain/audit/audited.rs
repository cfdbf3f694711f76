//! What a type whose rows join the admin chain declares ([`Audited`]): its kind, and the
//! format each field arrived in; and the form of a time in those rows' bytes ([`micros`]).
//! How the bytes are made from them is in `audit_format`.

use serde::de::DeserializeOwned;
use serde::Serialize;

/// A format of the admin chain's rows.
pub type Format = i16;

/// The first format, its columns listed by hand: rows linked before formats existed.
pub const LISTED: Format = 1;
/// The first format derived from the rows' types.
pub const DERIVED: Format = 2;

/// A row of the admin chain: its kind, and what its format covers.
pub trait Audited: Serialize + DeserializeOwned {
    /// The row's kind in the chain (part of its bytes).
    const KIND: &'static str;
    /// The first format of the kind: [`LISTED`] for the kinds linked before formats
    /// existed, [`DERIVED`] for a kind that arrived after (it never had a listed format).
    const FIRST: Format = LISTED;
    /// The fields added after format 2, each with the format it arrived in. Append only:
    /// an entry changed or removed changes the bytes of rows already linked.
    const ADDED: &'static [(&'static str, Format)] = &[];
}

/// The format rows of `T` are linked in now: format 1, the one every release reads (those
/// before formats too), until a field is added (a kind whose first format is derived:
/// that one); from then on the latest format a field
/// arrived in. So a release that adds no field links rows its predecessor checks, and a
/// rolling upgrade or a rollback between two such releases reports nothing `changed`.
pub const fn current<T: Audited>() -> Format {
    if T::FIRST == LISTED && T::ADDED.is_empty() {
        LISTED
    } else {
        latest::<T>()
    }
}

/// The latest format rows of `T` can be read in: the first derived format, or the latest
/// one a field arrived in. A release reads the derived formats up to this one, whether or
/// not it links rows in them.
pub const fn latest<T: Audited>() -> Format {
    let mut format = DERIVED;
    let mut i = 0;
    while i < T::ADDED.len() {
        if T::ADDED[i].1 > format {
            format = T::ADDED[i].1;
        }
        i += 1;
    }
    format
}

/// A time in a row's canonical bytes: microseconds since the epoch (PostgreSQL's
/// precision), read from those or from the RFC 3339 text PostgreSQL's JSON gives.
pub mod micros {
    use chrono::{DateTime, Utc};
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_i64(t.timestamp_micros())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Time {
            Micros(i64),
            Text(String),
        }
        match Time::deserialize(d)? {
            Time::Micros(m) => {
                DateTime::from_timestamp_micros(m).ok_or_else(|| D::Error::custom("out of range"))
            }
            Time::Text(t) => DateTime::parse_from_rfc3339(&t)
                .map(|t| t.with_timezone(&Utc))
                .map_err(D::Error::custom),
        }
    }
}
