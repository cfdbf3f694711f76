//! What a change tells the world: the outbox entry written in its transaction. Every entry
//! feeds the MongoDB projection; those with a routing key are also published to RabbitMQ.
//! The event body's schema is in `docs/events.md`.

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventType {
    /// Projection only: nothing is published.
    Created,
    /// Projection only: nothing is published.
    Updated,
    Submitted,
    Approved,
    Rejected,
    Withdrawn,
    Archived,
    Commented,
    ApprovalRecorded,
    StageCompleted,
    Overdue,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Created => "document.created",
            EventType::Updated => "document.updated",
            EventType::Submitted => "document.submitted",
            EventType::Approved => "document.approved",
            EventType::Rejected => "document.rejected",
            EventType::Withdrawn => "document.withdrawn",
            EventType::Archived => "document.archived",
            EventType::Commented => "document.commented",
            EventType::ApprovalRecorded => "review.approval_recorded",
            EventType::StageCompleted => "review.stage_completed",
            EventType::Overdue => "review.overdue",
        }
    }

    /// Whether the change it announces moves the MongoDB projection. Comments, votes that
    /// decide nothing and overdue marks leave the document row as it is, so their rows are
    /// written already projected: nothing is written to MongoDB for them, and their events
    /// still wait for every earlier row of the document (rows of a document are published
    /// in order, each once it is projected).
    pub fn projects(self) -> bool {
        !matches!(
            self,
            EventType::Commented
                | EventType::ApprovalRecorded
                | EventType::StageCompleted
                | EventType::Overdue
        )
    }

    /// The RabbitMQ routing key, for the events that are published.
    pub fn routing_key(self) -> Option<&'static str> {
        match self {
            EventType::Created | EventType::Updated => None,
            _ => Some(self.as_str()),
        }
    }
}

/// The `data` member of an event body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum EventData {
    /// `{}`
    Empty {},
    Submitted {
        title: String,
        submitted_by: String,
    },
    Approved {
        title: String,
        comment: Option<String>,
        /// The published version this approval replaced (`None`: a first approval).
        replaced_version: Option<i64>,
    },
    Rejected {
        title: String,
        reason: String,
    },
    Withdrawn {
        title: String,
        withdrawn_by: String,
    },
    Archived {
        title: String,
        archived_by: String,
        reason: Option<String>,
        /// The pending review the archive withdrew.
        withdrawn_review_id: Option<uuid::Uuid>,
    },
    Commented {
        title: String,
        comment_id: uuid::Uuid,
        commented_by: String,
        body: String,
    },
    ApprovalRecorded {
        title: String,
        stage: i32,
        stage_name: String,
        approvals: i64,
        required_approvals: i64,
        approved_by: String,
        comment: Option<String>,
    },
    StageCompleted {
        title: String,
        stage: i32,
        stage_name: String,
        next_stage: i32,
        next_stage_name: String,
        approved_by: String,
        comment: Option<String>,
    },
    Overdue {
        title: String,
        stage: i32,
        stage_name: String,
        due_at: String,
    },
}

/// The outbox row a change writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxEntry {
    pub event: EventType,
    pub data: EventData,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn data_serializes_as_the_documented_objects() {
        let j = |d: &EventData| serde_json::to_value(d).unwrap();
        assert_eq!(j(&EventData::Empty {}), json!({}));
        assert_eq!(
            j(&EventData::Approved {
                title: "t".into(),
                comment: None,
                replaced_version: Some(3)
            }),
            json!({"title": "t", "comment": null, "replaced_version": 3})
        );
        assert_eq!(
            j(&EventData::Submitted {
                title: "t".into(),
                submitted_by: "alice".into()
            }),
            json!({"title": "t", "submitted_by": "alice"})
        );
    }

    #[test]
    fn only_document_changes_project() {
        assert!(EventType::Approved.projects());
        assert!(EventType::Archived.projects());
        assert!(EventType::Updated.projects());
        assert!(!EventType::Commented.projects());
        assert!(!EventType::ApprovalRecorded.projects());
    }

    #[test]
    fn only_transitions_are_published() {
        assert_eq!(EventType::Created.routing_key(), None);
        assert_eq!(EventType::Updated.routing_key(), None);
        assert_eq!(EventType::Approved.routing_key(), Some("document.approved"));
    }
}
