//! Replays: what an admin may ask for (a mode, one target queue, filters), the states a
//! replay goes through, and the `document.snapshot` event a snapshot replay sends. Pure:
//! the runner that sends them lives in `outbox::replay`.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use uuid::Uuid;

use super::events::EventType;
use super::inputs::InputError;
use super::spaces::SpaceKey;
use super::state::text_column;

/// What a replay sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReplayMode {
    /// The delivered events of the outbox, as they were (same `event_id`, same body).
    History,
    /// One `document.snapshot` per published document.
    Snapshot,
}

/// Where a replay is. Only `running` changes; the others are final.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReplayState {
    Running,
    Done,
    Cancelled,
    Failed,
}

text_column!(ReplayMode, "replay mode");
text_column!(ReplayState, "replay state");

impl ReplayMode {
    pub fn as_str(self) -> &'static str {
        match self {
            ReplayMode::History => "history",
            ReplayMode::Snapshot => "snapshot",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "history" => Some(ReplayMode::History),
            "snapshot" => Some(ReplayMode::Snapshot),
            _ => None,
        }
    }
}

impl ReplayState {
    pub fn as_str(self) -> &'static str {
        match self {
            ReplayState::Running => "running",
            ReplayState::Done => "done",
            ReplayState::Cancelled => "cancelled",
            ReplayState::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "running" => Some(ReplayState::Running),
            "done" => Some(ReplayState::Done),
            "cancelled" => Some(ReplayState::Cancelled),
            "failed" => Some(ReplayState::Failed),
            _ => None,
        }
    }
}

/// The event type of a snapshot replay's messages.
pub const SNAPSHOT_EVENT_TYPE: &str = "document.snapshot";

/// The longest queue name AMQP 0-9-1 carries (a short string).
pub const MAX_QUEUE_NAME: usize = 255;
/// Most types, documents or spaces one replay may name.
pub const MAX_FILTER_ITEMS: usize = 1000;

/// The event types a history replay may select: those that are published
/// ([`EventType::published`]).
pub fn replayable() -> impl Iterator<Item = EventType> {
    EventType::published()
}

/// A replay as asked for, checked: the filters only where its mode has them.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayRequest {
    pub mode: ReplayMode,
    pub target_queue: String,
    /// History: events written at or after this.
    pub from: Option<DateTime<Utc>>,
    /// History: events written before this.
    pub to: Option<DateTime<Utc>>,
    /// History: only these event types.
    pub types: Option<Vec<String>>,
    /// Only these documents.
    pub document_ids: Option<Vec<Uuid>>,
    /// Only the documents of these spaces (keys; a key no space has matches nothing).
    pub spaces: Option<Vec<String>>,
}

/// What a replay is asked to select (its filters), as sent, before they are checked.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReplaySelection {
    pub from: Option<DateTime<Utc>>,
    pub to: Option<DateTime<Utc>>,
    pub types: Option<Vec<String>>,
    pub document_ids: Option<Vec<Uuid>>,
    pub spaces: Option<Vec<String>>,
}

fn refuse(field: &'static str, problem: impl Into<String>) -> InputError {
    InputError {
        field,
        problem: problem.into(),
    }
}

impl ReplayRequest {
    /// Checks a request's fields; `mode` as sent.
    pub fn parse(
        mode: &str,
        target_queue: &str,
        filters: ReplaySelection,
    ) -> Result<Self, InputError> {
        let ReplaySelection {
            from,
            to,
            types,
            document_ids,
            spaces,
        } = filters;
        let mode =
            ReplayMode::parse(mode).ok_or_else(|| refuse("mode", "must be history or snapshot"))?;
        queue_name(target_queue)?;
        let ranged = from.is_some() || to.is_some() || types.is_some();
        if mode == ReplayMode::Snapshot && ranged {
            return Err(refuse(
                "mode",
                "a snapshot sends every published document as it is now: from, to and \
                 types are for history replays",
            ));
        }
        if let (Some(f), Some(t)) = (from, to) {
            if f >= t {
                return Err(refuse("to", "must be later than from"));
            }
        }
        let types = types.map(checked_types).transpose()?;
        if let Some(ids) = &document_ids {
            if ids.is_empty() || ids.len() > MAX_FILTER_ITEMS {
                return Err(refuse(
                    "document_ids",
                    "1 to 1000 document ids, or left out",
                ));
            }
        }
        let spaces = spaces.map(checked_spaces).transpose()?;
        Ok(Self {
            mode,
            target_queue: target_queue.to_string(),
            from,
            to,
            types,
            document_ids,
            spaces,
        })
    }
}

/// A queue name: 1 to 255 printable ASCII characters, no spaces (what the broker takes as
/// one short string).
fn queue_name(name: &str) -> Result<(), InputError> {
    if name.is_empty() || name.len() > MAX_QUEUE_NAME || !name.bytes().all(|b| b.is_ascii_graphic())
    {
        return Err(refuse(
            "target_queue",
            "must be a queue name of 1 to 255 printable ASCII characters, without spaces",
        ));
    }
    Ok(())
}

fn checked_types(mut types: Vec<String>) -> Result<Vec<String>, InputError> {
    if types.is_empty() || types.len() > MAX_FILTER_ITEMS {
        return Err(refuse("types", "1 to 1000 event types, or left out"));
    }
    for t in &types {
        if !replayable().any(|p| p.as_str() == t) {
            let known: Vec<&str> = replayable().map(EventType::as_str).collect();
            return Err(refuse(
                "types",
                format!("{t:?} is not a published event type ({})", known.join(", ")),
            ));
        }
    }
    types.sort();
    types.dedup();
    Ok(types)
}

/// Space keys, each well formed, sorted and without repeats.
fn checked_spaces(keys: Vec<String>) -> Result<Vec<String>, InputError> {
    if keys.is_empty() || keys.len() > MAX_FILTER_ITEMS {
        return Err(refuse("spaces", "1 to 1000 space keys, or left out"));
    }
    let mut keys = keys
        .iter()
        .map(|k| {
            SpaceKey::parse(k)
                .map(|k| k.as_str().to_string())
                .map_err(|e| refuse("spaces", format!("{k:?}: {}", e.problem)))
        })
        .collect::<Result<Vec<_>, _>>()?;
    keys.sort();
    keys.dedup();
    Ok(keys)
}

/// The event id of the snapshot of `document` at `version` in the replay `replay`: the same
/// on every run of that replay (a UUID v5 in the replay's namespace), so that a replay
/// resumed after a restart sends the ids it sent before.
pub fn snapshot_event_id(replay: Uuid, document: Uuid, version: i64) -> Uuid {
    let mut name = Vec::with_capacity(24);
    name.extend_from_slice(document.as_bytes());
    name.extend_from_slice(&version.to_be_bytes());
    Uuid::new_v5(&replay, &name)
}

/// A published revision, as a snapshot replay reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishedRevision {
    pub document_id: Uuid,
    /// The key of the document's space.
    pub space: String,
    pub version: i64,
    pub title: String,
    pub body: String,
}

/// The body of the `document.snapshot` of `rev`: the envelope of every event, with no
/// review, the published version as `document_version`, and the admin who asked for the
/// replay as `actor_id`.
pub fn snapshot_event(
    replay: Uuid,
    rev: &PublishedRevision,
    actor: &str,
    occurred_at: DateTime<Utc>,
) -> (Uuid, Value) {
    let event_id = snapshot_event_id(replay, rev.document_id, rev.version);
    let body = json!({
        "event_id": event_id,
        "event_type": SNAPSHOT_EVENT_TYPE,
        "occurred_at": occurred_at,
        "document_id": rev.document_id,
        "space": rev.space,
        "review_id": null,
        "document_version": rev.version,
        "actor_id": actor,
        "data": {
            "title": rev.title,
            "body": rev.body,
            "published_version": rev.version,
        },
    });
    (event_id, body)
}

/// The body a history replay sends for a stored event of a document in `space`: the body
/// as it was stored, with `space` added when it has none (a row written before documents
/// had spaces; a document's space never changes, so it is the space the event was in).
pub fn stored_event_body(mut payload: Value, space: &str) -> Value {
    if let Some(body) = payload.as_object_mut() {
        if !body.contains_key("space") {
            body.insert("space".into(), Value::String(space.to_string()));
        }
    }
    payload
}

#[cfg(test)]
mod tests {
    use super::*;

    fn history(types: Option<Vec<&str>>) -> Result<ReplayRequest, InputError> {
        let types = types.map(|t| t.into_iter().map(String::from).collect());
        let filters = ReplaySelection {
            types,
            ..ReplaySelection::default()
        };
        ReplayRequest::parse("history", "indexer", filters)
    }

    fn spaces(keys: &[&str]) -> ReplaySelection {
        ReplaySelection {
            spaces: Some(keys.iter().map(|k| k.to_string()).collect()),
            ..ReplaySelection::default()
        }
    }

    #[test]
    fn a_snapshot_id_depends_on_replay_document_and_version_only() {
        let (r, d) = (Uuid::now_v7(), Uuid::now_v7());
        assert_eq!(snapshot_event_id(r, d, 3), snapshot_event_id(r, d, 3));
        assert_ne!(snapshot_event_id(r, d, 3), snapshot_event_id(r, d, 4));
        assert_ne!(
            snapshot_event_id(r, d, 3),
            snapshot_event_id(Uuid::now_v7(), d, 3)
        );
        assert_eq!(snapshot_event_id(r, d, 3).get_version_num(), 5);
    }

    #[test]
    fn a_snapshot_is_an_envelope_of_the_published_revision() {
        let rev = PublishedRevision {
            document_id: Uuid::now_v7(),
            space: "hr".into(),
            version: 3,
            title: "T".into(),
            body: "B".into(),
        };
        let (id, body) = snapshot_event(Uuid::now_v7(), &rev, "admin-1", Utc::now());
        assert_eq!(body["event_id"], id.to_string());
        assert_eq!(body["event_type"], SNAPSHOT_EVENT_TYPE);
        assert_eq!(body["review_id"], Value::Null);
        assert_eq!(body["space"], "hr");
        assert_eq!(body["document_version"], 3);
        assert_eq!(
            body["data"],
            json!({"title": "T", "body": "B", "published_version": 3})
        );
    }

    #[test]
    fn requests_are_checked_field_by_field() {
        assert!(history(None).is_ok());
        assert_eq!(
            history(Some(vec!["document.created"])).unwrap_err().field,
            "types"
        );
        assert_eq!(history(Some(vec![])).unwrap_err().field, "types");
        let t = history(Some(vec!["document.approved", "document.approved"])).unwrap();
        assert_eq!(t.types, Some(vec!["document.approved".to_string()]));
        let none = ReplaySelection::default;
        let bad_mode = ReplayRequest::parse("all", "q", none());
        assert_eq!(bad_mode.unwrap_err().field, "mode");
        for q in ["", "a\nb", "a b", "é", &"q".repeat(256)] {
            let r = ReplayRequest::parse("snapshot", q, none());
            assert_eq!(r.unwrap_err().field, "target_queue", "{q:?}");
        }
        let now = Utc::now();
        let (from, to) = (Some(now), Some(now));
        let backwards = ReplaySelection { from, to, ..none() };
        let backwards = ReplayRequest::parse("history", "q", backwards);
        assert_eq!(backwards.unwrap_err().field, "to");
        let ranged = ReplayRequest::parse("snapshot", "q", ReplaySelection { from, ..none() });
        assert_eq!(ranged.unwrap_err().field, "mode");
        let document_ids = Some(vec![]);
        let no_ids = ReplaySelection {
            document_ids,
            ..none()
        };
        let no_ids = ReplayRequest::parse("snapshot", "q", no_ids);
        assert_eq!(no_ids.unwrap_err().field, "document_ids");
    }

    #[test]
    fn spaces_are_keys_sorted_once_in_either_mode() {
        for mode in ["history", "snapshot"] {
            let r = ReplayRequest::parse(mode, "q", spaces(&["hr", "eng", "hr"])).unwrap();
            assert_eq!(r.spaces, Some(vec!["eng".to_string(), "hr".to_string()]));
        }
        for bad in [&["Bad Key"][..], &["hr", ""], &[]] {
            let r = ReplayRequest::parse("history", "q", spaces(bad));
            assert_eq!(r.unwrap_err().field, "spaces", "{bad:?}");
        }
        let all = ReplayRequest::parse("snapshot", "q", ReplaySelection::default()).unwrap();
        assert_eq!(all.spaces, None);
    }

    #[test]
    fn a_stored_body_without_a_space_gets_its_document_s() {
        let old = json!({"event_id": "e", "data": {}});
        let body = stored_event_body(old, "hr");
        assert_eq!(body["space"], "hr");
        let new = json!({"event_id": "e", "space": "eng"});
        assert_eq!(stored_event_body(new.clone(), "hr"), new, "kept as stored");
    }
}
