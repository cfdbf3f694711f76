//! The service's JSON replies as typed structs, for tests that read more than one field.

use serde::Deserialize;
use uuid::Uuid;

#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct Document {
    pub id: Uuid,
    pub title: String,
    pub status: String,
    pub version: i64,
    pub author_id: String,
    pub current_review_id: Option<Uuid>,
    pub created_at: String,
    pub updated_at: String,
    pub body: Option<String>,
    pub preview: Option<String>,
    pub body_source: Option<String>,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct Review {
    pub id: Uuid,
    pub document_id: Uuid,
    pub status: String,
    pub document_version: i64,
    pub submitted_by: String,
    pub submitted_at: String,
    pub decided_by: Option<String>,
    pub decided_at: Option<String>,
    pub comment: Option<String>,
    pub reason: Option<String>,
}

/// The reply of submit, approve and reject.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct Transition {
    pub document: Document,
    pub review: Review,
}

/// A list reply (`{items}`).
#[derive(Debug, Clone, Deserialize)]
pub struct Items<T> {
    pub items: Vec<T>,
}

/// An event body as consumers receive it.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct Event {
    pub event_id: Uuid,
    pub event_type: String,
    pub occurred_at: String,
    pub document_id: Uuid,
    pub review_id: Option<Uuid>,
    pub document_version: i64,
    pub actor_id: String,
    pub data: serde_json::Value,
}

/// Event bodies as typed events.
pub fn typed_events(bodies: &[serde_json::Value]) -> Vec<Event> {
    bodies
        .iter()
        .map(|b| serde_json::from_value(b.clone()).expect("an event body"))
        .collect()
}
