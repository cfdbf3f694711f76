//! How each use case's result is kept in an idempotency record ([`Recordable`]): what a
//! retry with the same key is answered from.

use serde_json::Value;

use super::keys::Recordable;
use crate::domain::{Archived, Commented, Document, Transitioned};
use crate::store::OutboxRecord;

/// A new document: the reply shows it whole.
impl Recordable for Document {
    fn to_record(&self) -> Value {
        serde_json::to_value(self).expect("a document serializes")
    }
    fn from_record(record: Value) -> Result<Self, serde_json::Error> {
        serde_json::from_value(record)
    }
}

/// The record of a reply that shows a document without its body: bodies are large, so the
/// record keeps neither the body nor the published body (they read back empty).
fn without_bodies(mut record: Value) -> Value {
    if let Some(document) = record.get_mut("document").and_then(Value::as_object_mut) {
        document.remove("body");
        document.remove("published_body");
    }
    record
}

/// A transition: its reply shows the document without its body.
impl Recordable for Transitioned {
    fn to_record(&self) -> Value {
        without_bodies(serde_json::to_value(self).expect("a transition serializes"))
    }
    fn from_record(record: Value) -> Result<Self, serde_json::Error> {
        serde_json::from_value(record)
    }
}

/// An archive: its reply shows the document without its body.
impl Recordable for Archived {
    fn to_record(&self) -> Value {
        without_bodies(serde_json::to_value(self).expect("an archive serializes"))
    }
    fn from_record(record: Value) -> Result<Self, serde_json::Error> {
        serde_json::from_value(record)
    }
}

/// A comment: its reply shows the comment alone.
impl Recordable for Commented {
    fn to_record(&self) -> Value {
        without_bodies(serde_json::to_value(self).expect("a comment serializes"))
    }
    fn from_record(record: Value) -> Result<Self, serde_json::Error> {
        serde_json::from_value(record)
    }
}

/// A claim: the reply shows the review with its claims.
impl Recordable for crate::domain::Review {
    fn to_record(&self) -> Value {
        serde_json::to_value(self).expect("a review serializes")
    }
    fn from_record(record: Value) -> Result<Self, serde_json::Error> {
        serde_json::from_value(record)
    }
}

/// An admin's action on an outbox row: the reply shows the row as the action left it.
impl Recordable for OutboxRecord {
    fn to_record(&self) -> Value {
        serde_json::to_value(self).expect("an outbox row serializes")
    }
    fn from_record(record: Value) -> Result<Self, serde_json::Error> {
        serde_json::from_value(record)
    }
}
