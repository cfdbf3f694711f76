//! Rows for the domain's unit and property tests: a document by `alice` and its review.

use chrono::{DateTime, Utc};
use proptest::prelude::*;
use uuid::Uuid;

use super::inputs::{ArchiveReason, DocumentTitle, UserId};
use super::model::{Document, FencingToken, Review};
use super::plan::{Command, Locked};
use super::policy::Stage;
use super::state::{DocumentStatus, ReviewStatus};

pub const AUTHOR: &str = "alice";

pub fn user(s: &str) -> UserId {
    UserId::parse(s).unwrap()
}

/// A stage needing `n` approvals from `groups` (none: any reviewer).
pub fn stage(name: &str, n: u8, groups: &[&str]) -> Stage {
    Stage {
        name: name.into(),
        required_approvals: n,
        eligible_groups: groups.iter().map(|g| g.to_string()).collect(),
    }
}

pub fn doc(status: DocumentStatus, fence: Option<i64>) -> Document {
    Document {
        id: Uuid::now_v7(),
        title: "Runbook".into(),
        body: "Restart the indexer.".into(),
        status,
        version: 4,
        author_id: AUTHOR.into(),
        space: crate::domain::DEFAULT_SPACE.into(),
        current_review_id: None,
        policy: "default".into(),
        fence_token: fence.map(FencingToken::new),
        created_at: Utc::now(),
        updated_at: Utc::now(),
        published_version: None,
        published_title: None,
        published_body: None,
        contributors: Vec::new(),
        verify_by: None,
    }
}

/// A review of `d` under the default policy's one stage, no votes, no claims.
pub fn review(d: &Document, status: ReviewStatus) -> Review {
    Review {
        id: Uuid::now_v7(),
        document_id: d.id,
        status,
        document_version: d.version,
        submitted_by: AUTHOR.into(),
        submitted_at: Utc::now(),
        decided_by: None,
        decided_at: None,
        comment: None,
        reason: None,
        fence_token: None,
        policy: "default".into(),
        policy_version: 1,
        stage: 0,
        due_at: None,
        kind: Default::default(),
        reverify_after_secs: None,
        claim_ttl_secs: 1800,
        stages: vec![Stage::default_stage()],
        votes: vec![],
        claims: vec![],
    }
}

/// A pending document and its current, pending review through `stages`.
pub fn pending_review(stages: Vec<Stage>) -> (Document, Review) {
    let mut d = doc(DocumentStatus::PendingReview, None);
    let r = Review {
        stages,
        ..review(&d, ReviewStatus::Pending)
    };
    d.current_review_id = Some(r.id);
    (d, r)
}

/// A fixed instant, so that claim expiries read the same in every run.
pub fn t0() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-12-01T09:00:00Z")
        .unwrap()
        .with_timezone(&Utc)
}

/// Any document status, for properties.
pub fn any_doc_status() -> impl Strategy<Value = DocumentStatus> {
    prop_oneof![
        Just(DocumentStatus::Draft),
        Just(DocumentStatus::PendingReview),
        Just(DocumentStatus::Approved),
        Just(DocumentStatus::Rejected),
        Just(DocumentStatus::Archived),
        Just(DocumentStatus::Expired),
    ]
}

/// Any review status, for properties.
pub fn any_review_status() -> impl Strategy<Value = ReviewStatus> {
    prop_oneof![
        Just(ReviewStatus::Pending),
        Just(ReviewStatus::Approved),
        Just(ReviewStatus::Rejected),
        Just(ReviewStatus::Withdrawn),
    ]
}

/// An approved document published at its version 3, with its decided review.
pub fn approved() -> Document {
    let mut d = doc(DocumentStatus::Approved, None);
    d.version = 3;
    d.current_review_id = Some(Uuid::now_v7());
    d.published_version = Some(3);
    d.published_title = Some(d.title.clone());
    d.published_body = Some(d.body.clone());
    d
}

pub fn locked(d: Document, r: Option<Review>) -> Locked {
    Locked {
        document: Some(d),
        review: r,
        ..Locked::default()
    }
}

pub fn archive(expected_version: Option<i64>) -> Command {
    Command::Archive {
        reason: Some(ArchiveReason::parse("superseded").unwrap()),
        expected_version,
    }
}

pub fn edit() -> Command {
    Command::Edit {
        title: Some(DocumentTitle::parse("Runbook, revised").unwrap()),
        body: None,
        policy: None,
    }
}
