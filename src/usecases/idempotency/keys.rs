//! The idempotency policy of POSTs. With a key, the first request runs and its reply is
//! recorded; a retry with the same key and the same request repeats that reply; with
//! another request it is refused; while the first still runs it is told so; and a key whose
//! request never finished (its instance died) is taken over after `in_flight_timeout_ms`.
//! Keys are scoped to the caller. Retryable failures are not recorded: a retry runs again.
//!
//! A success is recorded in the same transaction as its change (`commit.rs`), as the use
//! case's typed result ([`Recordable`]), so a reply lost after COMMIT is repeated, never run
//! twice; the HTTP layer renders a repeated result as it renders a fresh one. A refusal is
//! recorded as the reply that was sent. The HTTP layer only reads the header and writes
//! the reply.

use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;
use serde_with::{serde_as, DurationMilliSeconds, DurationSeconds};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::domain::{InputError, UserId};
use crate::store::{HeldKey, KeyState, PgStore, StoreError};

/// `[idempotency]` in `config/default.toml`.
#[serde_as]
#[derive(Debug, Clone, Deserialize)]
pub struct IdempotencySettings {
    /// How long a recorded reply is repeated for the same key.
    #[serde_as(as = "DurationSeconds<u64>")]
    #[serde(rename = "ttl_secs")]
    pub ttl: Duration,
    /// How long a request may hold its key before a retry may take it over. Must exceed
    /// `lock.max_hold_ms`.
    #[serde_as(as = "DurationMilliSeconds<u64>")]
    #[serde(rename = "in_flight_timeout_ms")]
    pub in_flight_timeout: Duration,
}

/// An `Idempotency-Key`: 1 to 255 printable ASCII characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    pub fn parse(s: &str) -> Result<Self, InputError> {
        if s.is_empty() || s.len() > 255 || !s.chars().all(|c| c.is_ascii_graphic()) {
            return Err(InputError {
                field: "Idempotency-Key",
                problem: "must be 1 to 255 printable ASCII characters".into(),
            });
        }
        Ok(Self(s.to_string()))
    }
}

/// What makes two requests "the same": method, path and body, with JSON bodies
/// canonicalised so that key order and whitespace do not matter.
pub fn fingerprint(method: &str, path: &str, body: &[u8]) -> String {
    let canonical = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| serde_json::to_vec(&sorted(v)).ok())
        .unwrap_or_else(|| body.to_vec());
    let mut h = Sha256::new();
    h.update(method);
    h.update(b"\n");
    h.update(path);
    h.update(b"\n");
    h.update(&canonical);
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// `v` with the members of every object in key order. (serde_json keeps insertion order in
/// this build: a dependency turns on its `preserve_order` feature.)
fn sorted(v: Value) -> Value {
    match v {
        Value::Object(map) => {
            let mut members: Vec<(String, Value)> = map.into_iter().collect();
            members.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(members.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

/// A reply as it was sent: what a key repeats for a refusal (and for a success recorded
/// before results were recorded typed).
#[derive(Debug, Clone, PartialEq)]
pub struct SentReply {
    pub status: u16,
    pub body: Value,
}

/// A use case's result as an idempotency record keeps it: what a retry with the same key
/// is answered from. `from_record` gives back what the reply shows.
pub trait Recordable: Sized {
    fn to_record(&self) -> Value;
    fn from_record(record: Value) -> Result<Self, serde_json::Error>;
}

/// What a key recorded for the request that ran with it.
#[derive(Debug, Clone, PartialEq)]
pub enum Recorded {
    /// Its use case succeeded with this result ([`Recordable::to_record`]).
    Succeeded(Value),
    /// The reply as it was sent.
    Sent(SentReply),
}

/// What to do with a request that carries a key.
#[derive(Debug, Clone, PartialEq)]
pub enum Begin {
    /// This request holds the key now: run it, then [`Idempotency::settle`].
    Proceed(HeldKey),
    /// The key already ran with this request: answer what it recorded.
    Repeat(Recorded),
    /// The key was used with a different request.
    Mismatch,
    /// The first request with this key is still running.
    InFlight,
}

/// How a request that held a key ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Settle {
    /// It committed (its reply was recorded with the change).
    Committed,
    /// It was refused for good: repeat this refusal to retries.
    Refused(SentReply),
    /// It failed in a way a retry may not: forget the key.
    Retryable,
}

#[derive(Clone)]
pub struct Idempotency {
    store: PgStore,
    settings: IdempotencySettings,
}

impl Idempotency {
    pub fn from_settings(store: PgStore, settings: &IdempotencySettings) -> Self {
        Self {
            store,
            settings: settings.clone(),
        }
    }

    /// Claims `key` for `owner`, or says why not.
    pub async fn begin(
        &self,
        owner: &UserId,
        key: &IdempotencyKey,
        fingerprint: &str,
    ) -> Result<Begin, StoreError> {
        let (owner, key) = (owner.as_str(), key.0.as_str());
        let in_flight = self.settings.in_flight_timeout;
        self.store.delete_expired_key(owner, key).await?;
        let held = HeldKey {
            owner: owner.to_string(),
            key: key.to_string(),
            token: Uuid::new_v4(),
        };
        for _ in 0..3 {
            let ttl = self.settings.ttl;
            if self
                .store
                .insert_key(&held, fingerprint, in_flight, ttl)
                .await?
            {
                return Ok(Begin::Proceed(held));
            }
            let Some(found) = self.store.find_key(owner, key).await? else {
                continue; // purged between the two statements: try the insert again
            };
            if found.fingerprint != fingerprint {
                return Ok(Begin::Mismatch);
            }
            match found.state {
                KeyState::Succeeded(result) => {
                    return Ok(Begin::Repeat(Recorded::Succeeded(result)))
                }
                KeyState::Replied { status, body } => {
                    return Ok(Begin::Repeat(Recorded::Sent(SentReply { status, body })))
                }
                KeyState::InFlight { stale: false } => return Ok(Begin::InFlight),
                KeyState::InFlight { stale: true } => {}
            }
            // The first request never finished (its instance died): take the key over.
            return Ok(if self.store.take_over_key(&held, in_flight).await? {
                Begin::Proceed(held)
            } else {
                Begin::InFlight
            });
        }
        // The insert keeps meeting a record this caller cannot read: it recorded a write in
        // a space where the caller no longer holds a role (row-level security hides it). Its
        // result is not the caller's to see again: the key counts as used.
        Ok(Begin::Mismatch)
    }

    /// Records how the request that held the key `held` ended. Never fails the request: the work
    /// is done, and an unrecorded key is taken over after its in-flight time.
    pub async fn settle(&self, held: &HeldKey, ending: Settle) {
        let saved = match ending {
            Settle::Committed => Ok(()),
            Settle::Refused(reply) => self.store.finish_key(held, reply.status, &reply.body).await,
            Settle::Retryable => self.store.abandon_key(held).await,
        };
        if let Err(e) = saved {
            tracing::error!(error = %e, "could not record how the idempotency key's request ended");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{Document, Transitioned};

    #[test]
    fn keys_are_printable_ascii_up_to_255() {
        assert!(IdempotencyKey::parse("click-1").is_ok());
        assert!(IdempotencyKey::parse(&"k".repeat(255)).is_ok());
        for bad in ["", "has space", "tab\t", "ünï"] {
            assert!(IdempotencyKey::parse(bad).is_err(), "{bad:?}");
        }
        assert!(IdempotencyKey::parse(&"k".repeat(256)).is_err());
    }

    fn document(body: &str) -> Document {
        Document {
            id: Uuid::now_v7(),
            title: "Runbook".into(),
            body: body.into(),
            status: crate::domain::DocumentStatus::PendingReview,
            version: 2,
            author_id: "alice".into(),
            space: "default".into(),
            current_review_id: Some(Uuid::now_v7()),
            policy: "legal".into(),
            fence_token: Some(crate::domain::FencingToken::new(7)),
            created_at: chrono::Utc::now(),
            updated_at: chrono::Utc::now(),
            published_version: None,
            published_title: None,
            published_body: None,
            contributors: Vec::new(),
            verify_by: None,
        }
    }

    #[test]
    fn a_recorded_document_reads_back_whole() {
        let doc = document("The whole body.");
        assert_eq!(Document::from_record(doc.to_record()).unwrap(), doc);
    }

    #[test]
    fn a_recorded_transition_keeps_all_but_the_body() {
        let doc = document(&"x".repeat(10_000));
        let review = crate::domain::Review {
            id: doc.current_review_id.unwrap(),
            document_id: doc.id,
            status: crate::domain::ReviewStatus::Pending,
            document_version: 2,
            submitted_by: "alice".into(),
            submitted_at: chrono::Utc::now(),
            decided_by: None,
            decided_at: None,
            comment: None,
            reason: None,
            fence_token: doc.fence_token,
            policy: "legal".into(),
            policy_version: 3,
            stage: 1,
            due_at: Some(chrono::Utc::now()),
            kind: Default::default(),
            reverify_after_secs: None,
            claim_ttl_secs: 600,
            stages: vec![crate::domain::Stage::default_stage(); 2],
            votes: vec![crate::domain::Vote {
                voter_id: "bob".into(),
                stage: 0,
                kind: crate::domain::VoteKind::Approve,
                comment: Some("fine".into()),
                at: chrono::Utc::now(),
            }],
            claims: vec![],
        };
        let done = Transitioned {
            document: doc,
            review,
        };
        let record = done.to_record();
        assert!(record["document"].get("body").is_none(), "{record}");
        let back = Transitioned::from_record(record).unwrap();
        assert_eq!(back.document.body, "");
        let without_body = Document {
            body: String::new(),
            ..done.document.clone()
        };
        assert_eq!((back.document, back.review), (without_body, done.review));
    }

    /// A transition recorded before review policies existed repeats as the default policy's
    /// one stage.
    #[test]
    fn a_transition_recorded_before_policies_reads_back_with_the_default_policy() {
        let id = Uuid::now_v7();
        let old = serde_json::json!({
            "document": {"id": id, "title": "t", "status": "APPROVED", "version": 3,
                         "author_id": "alice", "current_review_id": id, "fence_token": null,
                         "created_at": "2026-11-30T10:00:00Z", "updated_at": "2026-11-30T10:00:00Z"},
            "review": {"id": id, "document_id": id, "status": "APPROVED", "document_version": 2,
                       "submitted_by": "alice", "submitted_at": "2026-11-30T10:00:00Z",
                       "decided_by": "bob", "decided_at": "2026-11-30T10:00:01Z",
                       "comment": null, "reason": null, "fence_token": 4}
        });
        let back = Transitioned::from_record(old).unwrap();
        assert_eq!(back.document.policy, "default");
        assert_eq!(
            (back.review.policy.as_str(), back.review.policy_version),
            ("default", 1)
        );
        assert_eq!(
            back.review.stages,
            vec![crate::domain::Stage::default_stage()]
        );
        assert!(back.review.votes.is_empty());
    }

    #[test]
    fn fingerprints_ignore_json_key_order_only() {
        let a = fingerprint("POST", "/x", br#"{"a":1,"b":{"c":[{"d":1,"e":2}],"f":3}}"#);
        let reordered = br#"{ "b": {"f": 3, "c": [{"e": 2, "d": 1}]}, "a": 1 }"#;
        assert_eq!(a, fingerprint("POST", "/x", reordered));
        assert_ne!(
            a,
            fingerprint("POST", "/y", br#"{"a":1,"b":{"c":[{"d":1,"e":2}],"f":3}}"#)
        );
        assert_ne!(
            a,
            fingerprint("POST", "/x", br#"{"a":1,"b":{"c":[{"d":1,"e":3}],"f":3}}"#)
        );
    }

    /// Fingerprints are stored with their keys, so an upgrade of the hash crate must not
    /// change them: this one is SHA-256 of "POST\n<path>\n{"a":2,"b":1}", by another tool.
    #[test]
    fn a_fingerprint_is_the_sha256_of_method_path_and_canonical_body() {
        let got = fingerprint("POST", "/api/v1/reviews/r/approve", br#"{"b":1,"a":2}"#);
        let want = "e93ca274cc2e7442660caf4327ff0d806ecd2105a27fc1a59d2afaa462b7e718";
        assert_eq!(got, want);
    }
}
