//! What a change tells the world: the outbox entry written in its transaction. Every entry
//! feeds the MongoDB projection; those with a routing key are also published to RabbitMQ.
//!
//! Every event type is one entry of the table below (`event_types!`): its variant, its wire
//! name (the `event_type`, and the routing key of a published type), whether it is
//! published, whether it moves the projection, and the fields of its `data`. The enum
//! [`EventType`], its names and routing keys, the list of every type ([`EventType::ALL`])
//! and the published ones, and [`EventData`] all come from that entry. The JSON Schema of a
//! published type's `data` is in `docs/schemas/events.json` (served, and the AsyncAPI
//! document's payloads), its line in `docs/events.md`; `meta::event_docs` fails when either
//! misses a type of the table.

use serde::Serialize;

use super::model::Document;

/// Declares the event types: one entry per type (see the table below).
macro_rules! event_types {
    ($(
        $(#[$doc:meta])*
        $variant:ident = $wire:literal, published: $published:literal, projects: $projects:literal,
        data { $( $(#[$fdoc:meta])* $field:ident : $fty:ty ),* $(,)? }
    )*) => {
        /// The type of an event: one per entry of the table.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum EventType {
            $( $(#[$doc])* $variant, )*
        }

        impl EventType {
            /// Every type, in the table's order.
            pub const ALL: &'static [EventType] = &[$(EventType::$variant),*];

            /// Its wire name: the `event_type` of its events.
            pub fn as_str(self) -> &'static str {
                match self {
                    $( EventType::$variant => $wire, )*
                }
            }

            /// Whether its events are published to RabbitMQ (the others only feed the
            /// projection).
            pub fn is_published(self) -> bool {
                match self {
                    $( EventType::$variant => $published, )*
                }
            }

            /// The members of its `data`, in the table's order.
            pub fn data_fields(self) -> &'static [&'static str] {
                match self {
                    $( EventType::$variant => &[$(stringify!($field)),*], )*
                }
            }

            /// Whether the change it announces moves the MongoDB projection. Comments,
            /// votes that decide nothing and overdue marks leave the document row as it is,
            /// so their rows are written already projected: nothing is written to MongoDB
            /// for them, and their events still wait for every earlier row of the document
            /// (rows of a document are published in order, each once it is projected).
            pub fn projects(self) -> bool {
                match self {
                    $( EventType::$variant => $projects, )*
                }
            }
        }

        /// The `data` member of an event body: a variant per type, named as its type.
        #[derive(Debug, Clone, PartialEq, Eq, Serialize)]
        #[serde(untagged)]
        pub enum EventData {
            $( $(#[$doc])* $variant { $( $(#[$fdoc])* $field: $fty ),* }, )*
        }

        impl EventData {
            /// The type of the event this is the data of.
            pub fn event_type(&self) -> EventType {
                match self {
                    $( EventData::$variant { .. } => EventType::$variant, )*
                }
            }
        }
    };
}

event_types! {
    /// Projection only: nothing is published.
    Created = "document.created", published: false, projects: true, data {}
    /// Projection only: nothing is published.
    Updated = "document.updated", published: false, projects: true, data {}
    Submitted = "document.submitted", published: true, projects: true, data {
        title: String,
        submitted_by: String,
    }
    Approved = "document.approved", published: true, projects: true, data {
        title: String,
        comment: Option<String>,
        /// The published version this approval replaced (`None`: a first approval).
        replaced_version: Option<i64>,
    }
    Rejected = "document.rejected", published: true, projects: true, data {
        title: String,
        reason: String,
    }
    Withdrawn = "document.withdrawn", published: true, projects: true, data {
        title: String,
        withdrawn_by: String,
    }
    Archived = "document.archived", published: true, projects: true, data {
        title: String,
        archived_by: String,
        reason: Option<String>,
        /// The pending review the archive withdrew.
        withdrawn_review_id: Option<uuid::Uuid>,
    }
    Commented = "document.commented", published: true, projects: false, data {
        title: String,
        comment_id: uuid::Uuid,
        commented_by: String,
        body: String,
    }
    /// A space admin (or the admin) broke a person's edit lease on the document.
    LeaseBroken = "document.lease_broken", published: true, projects: false, data {
        title: String,
        /// Whose lease it was.
        holder: String,
        broken_by: String,
    }
    /// The published version came due for re-verification: a review of kind `reverify` is
    /// open until `deadline`, and the document stays published meanwhile.
    ReverificationDue = "document.reverification_due", published: true, projects: false, data {
        title: String,
        /// The published version to re-verify.
        published_version: i64,
        /// When the document expires unless a reviewer approves the re-verification.
        deadline: String,
    }
    /// A reviewer re-verified the published version: it stays published as it is (no new
    /// version, nothing to re-index).
    Verified = "document.verified", published: true, projects: false, data {
        title: String,
        verified_by: String,
        comment: Option<String>,
        /// When it is next due (`None`: its policy no longer re-verifies).
        verify_by: Option<String>,
    }
    /// The published version is withdrawn: its re-verification was rejected, or nobody
    /// approved it by its deadline. Consumers remove the document from their index, as for
    /// `document.archived`.
    Expired = "document.expired", published: true, projects: true, data {
        title: String,
        /// The version that was published until now.
        expired_version: i64,
        /// Who rejected the re-verification, or `kh-review` when its deadline passed.
        expired_by: String,
        reason: String,
    }
    ApprovalRecorded = "review.approval_recorded", published: true, projects: false, data {
        title: String,
        stage: i32,
        stage_name: String,
        approvals: i64,
        required_approvals: i64,
        approved_by: String,
        comment: Option<String>,
    }
    StageCompleted = "review.stage_completed", published: true, projects: false, data {
        title: String,
        stage: i32,
        stage_name: String,
        next_stage: i32,
        next_stage_name: String,
        approved_by: String,
        comment: Option<String>,
    }
    Overdue = "review.overdue", published: true, projects: false, data {
        title: String,
        stage: i32,
        stage_name: String,
        due_at: String,
    }
}

impl EventType {
    /// The type whose wire name is `name`.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|t| t.as_str() == name)
    }

    /// The published types, in the table's order.
    pub fn published() -> impl Iterator<Item = EventType> {
        Self::ALL.iter().copied().filter(|t| t.is_published())
    }

    /// The RabbitMQ routing key, for the events that are published: the wire name.
    pub fn routing_key(self) -> Option<&'static str> {
        self.is_published().then(|| self.as_str())
    }
}

/// The outbox row a change writes; made from its data (`OutboxEntry::from`), whose variant
/// is its type. It is published when its type is, unless the change is made to a document
/// that was never submitted ([`OutboxEntry::about`]): such a document does not exist for
/// anyone but its author and its space's admins, so its rows only move the projection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxEntry {
    pub event: EventType,
    pub data: EventData,
    published: bool,
}

impl From<EventData> for OutboxEntry {
    fn from(data: EventData) -> Self {
        let event = data.event_type();
        Self {
            event,
            data,
            published: event.is_published(),
        }
    }
}

impl OutboxEntry {
    /// The entry of a change to `doc` (as it was before the change): published as its type
    /// says once `doc` was ever submitted; before that, projection only.
    pub fn about(self, doc: &Document) -> Self {
        Self {
            published: self.published && doc.ever_submitted(),
            ..self
        }
    }

    /// Whether its event is published to RabbitMQ.
    pub fn is_published(&self) -> bool {
        self.published
    }

    /// The routing key its row is written with: None for a row that only moves the
    /// projection (its type is never published, or its document was never submitted).
    pub fn routing_key(&self) -> Option<&'static str> {
        self.event.routing_key().filter(|_| self.published)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn data_serializes_as_the_documented_objects() {
        let j = |d: &EventData| serde_json::to_value(d).unwrap();
        assert_eq!(j(&EventData::Created {}), json!({}));
        assert_eq!(j(&EventData::Updated {}), json!({}));
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
        let published: Vec<&str> = EventType::published().map(EventType::as_str).collect();
        assert_eq!(published.len(), EventType::ALL.len() - 2);
        assert!(!published.contains(&"document.created"));
    }

    #[test]
    fn every_type_is_named_once_and_parses_back() {
        for t in EventType::ALL {
            assert_eq!(EventType::parse(t.as_str()), Some(*t));
            let same = EventType::ALL.iter().filter(|u| u.as_str() == t.as_str());
            assert_eq!(same.count(), 1, "{t:?}");
        }
        assert_eq!(EventType::parse("document.snapshot"), None);
    }

    #[test]
    fn an_entry_is_made_from_its_data() {
        let entry = OutboxEntry::from(EventData::Rejected {
            title: "t".into(),
            reason: "r".into(),
        });
        assert_eq!(entry.event, EventType::Rejected);
        assert_eq!(entry.routing_key(), Some("document.rejected"));
        let created = OutboxEntry::from(EventData::Created {});
        assert!(!created.is_published());
        assert_eq!(created.routing_key(), None);
    }
}
