//! A caller's precondition on the version it saw: `If-Match`, with the document's version as
//! its entity tag (`"<version>"`). Judged under the row lock, before the command itself, so
//! of two writes that saw the same version exactly one passes.

use super::model::Document;
use super::plan::Refusal;

/// What a write's `If-Match` accepts: any current version (`*`), or the versions its strong
/// entity tags name. A tag that names no version of the document (a weak one, `"p3"`, an
/// opaque string) matches nothing: `Versions` may be empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IfMatch {
    Any,
    Versions(Vec<i64>),
}

impl IfMatch {
    /// Refused (`VersionMismatch`, naming the current version) unless `doc` is at a version
    /// this accepts.
    pub fn check(&self, doc: &Document) -> Result<(), Refusal> {
        match self {
            IfMatch::Any => Ok(()),
            IfMatch::Versions(v) if v.contains(&doc.version) => Ok(()),
            IfMatch::Versions(_) => Err(Refusal::VersionMismatch {
                current: doc.version,
                status: doc.status,
            }),
        }
    }
}

/// What a write presents of what it saw and holds: its `If-Match`, and the token of its
/// edit lease (`Lease-Token`, judged for an edit: `leases::check_lease`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Conditions<'a> {
    pub if_match: Option<&'a IfMatch>,
    pub lease_token: Option<&'a str>,
}

/// `if_match`, when the write has one, judged on `doc`.
pub fn check_if_match(doc: &Document, if_match: Option<&IfMatch>) -> Result<(), Refusal> {
    if_match.map_or(Ok(()), |m| m.check(doc))
}
