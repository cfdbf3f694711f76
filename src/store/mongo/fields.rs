//! The fields of a projected document, written by [`super::MongoProjection::project`] and
//! read back by [`super::MongoProjection::get`].

use mongodb::bson::{doc, Bson as Value, Document as Bson};

use crate::domain::{preview_of, Document, DocumentStatus};

/// One copy of a document in the projection.
#[derive(Debug, Clone)]
pub struct ProjectedCopy {
    pub version: i64,
    pub status: String,
    pub body: String,
    pub preview: String,
}

/// The fields the API reads back: the top-level copy (the published revision while a
/// revision is in progress, else the document as it is) and the working copy beside it.
#[derive(Debug, Clone)]
pub struct ProjectedDocument {
    pub top: ProjectedCopy,
    /// The version of the document row this projection was written from.
    pub head_version: i64,
    pub published_version: Option<i64>,
    pub working: Option<ProjectedCopy>,
}

impl ProjectedDocument {
    /// The document as it is at `version` (its working copy), if this projection holds it.
    pub fn current(self, version: i64) -> Option<ProjectedCopy> {
        if self.head_version != version {
            return None;
        }
        match self.working {
            Some(w) if w.version == version => Some(w),
            _ if self.top.version == version => Some(self.top),
            _ => None,
        }
    }

    /// The published revision `version`, if this projection holds it.
    pub fn published(self, version: i64) -> Option<ProjectedCopy> {
        (self.published_version == Some(version) && self.top.version == version).then_some(self.top)
    }
}

/// The projection of `doc`: see [`MongoProjection::project`].
pub(super) fn projection_fields(doc: &Document) -> Bson {
    let copy = |version: i64, title: &str, body: &str, status: &str| {
        doc! {
            "version": version,
            "title": title,
            "body": body,
            "preview": preview_of(body),
            "status": status,
        }
    };
    let working = copy(doc.version, &doc.title, &doc.body, doc.status.as_str());
    let published = match (&doc.published_title, &doc.published_body) {
        (Some(t), Some(b)) if doc.in_revision() => doc
            .published_version
            .map(|v| copy(v, t, b, DocumentStatus::Approved.as_str())),
        _ => None,
    };
    let (mut fields, working) = match published {
        Some(p) => (p, Value::Document(working)),
        None => (working, Value::Null),
    };
    fields.insert("working", working);
    fields.insert("head_version", doc.version);
    // The write guard's second half: when the document row was committed at this version.
    fields.insert("head_commit", doc.updated_at.timestamp_micros());
    fields.insert("published_version", doc.published_version);
    fields.insert("author_id", &doc.author_id);
    fields.insert("space", &doc.space);
    fields.insert(
        "current_review_id",
        doc.current_review_id.map(|r| r.to_string()),
    );
    fields.insert("updated_at", doc.updated_at.to_rfc3339());
    fields
}
