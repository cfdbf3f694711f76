//! Two versions of a document side by side, for `GET /documents/{id}/diff`: the versions it
//! holds are its published revision and its working copy (PostgreSQL keeps both on its row),
//! named as such or by their version numbers.

use uuid::Uuid;

use crate::domain::{Document, Reader, Refusal};

use super::documents::DocumentService;
use super::error::Error;

/// A version of a document, as a caller names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Held {
    /// What its last approval published (nothing before the first approval, or once
    /// archived: then an empty text).
    Published,
    /// The working copy, the document as it is.
    Working,
    /// Either of those, by its version number.
    Version(i64),
}

/// One version's text: its number (`None`: nothing is published), title and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldCopy {
    pub version: Option<i64>,
    pub title: Option<String>,
    pub body: String,
}

impl DocumentService {
    /// The versions `from` and `to` of the document; not found for a reader who may not see
    /// it, or for a version number it does not hold.
    pub async fn versions(
        &self,
        reader: Reader<'_>,
        id: Uuid,
        from: Held,
        to: Held,
    ) -> Result<(HeldCopy, HeldCopy), Error> {
        let doc = self.readable_document(reader, id).await?;
        Ok((held(&doc, from)?, held(&doc, to)?))
    }
}

fn held(doc: &Document, which: Held) -> Result<HeldCopy, Refusal> {
    let published = || HeldCopy {
        version: doc.published_version,
        title: doc.published_title.clone(),
        body: doc.published_body.clone().unwrap_or_default(),
    };
    let working = || HeldCopy {
        version: Some(doc.version),
        title: Some(doc.title.clone()),
        body: doc.body.clone(),
    };
    match which {
        Held::Published => Ok(published()),
        Held::Working => Ok(working()),
        Held::Version(v) if v == doc.version => Ok(working()),
        Held::Version(v) if Some(v) == doc.published_version => Ok(published()),
        Held::Version(asked) => Err(Refusal::VersionNotHeld {
            asked,
            working: doc.version,
            published: doc.published_version,
        }),
    }
}
