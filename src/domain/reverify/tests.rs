//! The re-verification timeline as the rules judge it: due, decided either way, lapsed, and
//! the edits refused while one is open.

use chrono::Duration;

use super::*;
use crate::domain::inputs::RejectReason;
use crate::domain::plan::Decision;
use crate::domain::plan::{Command, Locked};
use crate::domain::policy::Stage;
use crate::domain::rules::plan;
use crate::domain::test_support::{approved, edit, locked, stage, t0, user};
use crate::domain::votes::{plan_vote, Voter};
use crate::domain::EventType;

fn policy(after: Option<i32>, grace: Option<i32>) -> Policy {
    Policy {
        name: "runbooks".into(),
        version: 2,
        stages: vec![stage("review", 1, &[])],
        due_after_secs: None,
        claim_ttl_secs: 1800,
        reverify_after_secs: after,
        reverify_grace_secs: grace,
        updated_at: t0(),
    }
}

/// An approved document due at `t0`, and the re-verification the scheduler opens on it
/// then (as the store reads it back).
fn opened(stages: Vec<Stage>) -> (Document, Review, Plan) {
    let mut d = approved();
    d.verify_by = Some(t0());
    let id = Uuid::now_v7();
    let p = plan_due(&d, &policy(Some(86_400), Some(3_600)), id, t0()).expect("due");
    let mut r = crate::domain::test_support::review(&d, ReviewStatus::Pending);
    r.id = id;
    r.kind = ReviewKind::Reverify;
    r.stages = stages;
    r.due_at = Some(t0() + Duration::seconds(3_600));
    r.reverify_after_secs = Some(86_400);
    r.submitted_by = SCHEDULER.into();
    d.current_review_id = Some(id);
    d.verify_by = None;
    (d, r, p)
}

fn vote(d: &Document, r: &Review, who: &str, decision: Decision) -> Result<Plan, Refusal> {
    let id = user(who);
    let voter = Voter {
        id: &id,
        groups: &[],
    };
    plan_vote(
        d,
        r,
        voter,
        decision,
        Guard::RowLockOnly,
        t0() + Duration::seconds(60),
    )
}

#[test]
fn a_due_document_opens_a_reverification_and_stays_published() {
    let (d, _, p) = opened(vec![stage("review", 1, &[])]);
    let change = p.document.as_ref().unwrap();
    assert_eq!(change.status, DocumentStatus::Approved);
    assert_eq!(change.version, 3, "no new version");
    assert_eq!(change.published, Publication::Keep);
    assert_eq!(
        change.verify,
        Verify::Clear,
        "not picked again while it is open"
    );
    let Some(ReviewChange::Open(open)) = &p.review else {
        panic!("a review is opened")
    };
    assert_eq!(open.kind, ReviewKind::Reverify);
    assert_eq!(open.document_version, 3);
    assert_eq!(open.deadline, Some(t0() + Duration::seconds(3_600)));
    assert_eq!(change.current_review_id, Some(open.id));
    assert_eq!(p.outbox.event, EventType::ReverificationDue);
    assert_eq!(p.audit.action, "reverification_due");
    assert_eq!(d.status, DocumentStatus::Approved);
}

#[test]
fn nothing_is_due_before_its_time_nor_unpublished_nor_while_a_revision_is_under_review() {
    let p = policy(Some(60), None);
    let mut d = approved();
    assert!(
        plan_due(&d, &p, Uuid::now_v7(), t0()).is_none(),
        "nothing scheduled"
    );
    d.verify_by = Some(t0() + Duration::seconds(1));
    assert!(
        plan_due(&d, &p, Uuid::now_v7(), t0()).is_none(),
        "not due yet"
    );
    d.verify_by = Some(t0());
    let mut reviewed = d.clone();
    reviewed.status = DocumentStatus::PendingReview;
    reviewed.version = 5;
    assert!(plan_due(&reviewed, &p, Uuid::now_v7(), t0()).is_none());
    let mut unpublished = d.clone();
    unpublished.published_version = None;
    assert!(plan_due(&unpublished, &p, Uuid::now_v7(), t0()).is_none());
    let due = plan_due(&d, &p, Uuid::now_v7(), t0()).unwrap();
    let Some(ReviewChange::Open(open)) = due.review else {
        panic!()
    };
    assert_eq!(
        open.due_after_secs,
        Some(DEFAULT_REVERIFY_GRACE_SECS),
        "a week of grace by default"
    );
}

/// A revision being drafted when the published version comes due: the published version
/// is re-verified (the draft stays a draft, at its version), and expires without changing
/// the draft's status.
#[test]
fn a_revision_being_drafted_has_its_published_version_reverified() {
    let p = policy(Some(60), Some(600));
    let mut d = approved();
    d.status = DocumentStatus::Draft;
    d.version = 4;
    d.verify_by = Some(t0());
    let id = Uuid::now_v7();
    let due = plan_due(&d, &p, id, t0()).expect("due");
    let Some(ReviewChange::Open(open)) = &due.review else {
        panic!()
    };
    assert_eq!(open.document_version, 3, "the published version");
    let change = due.document.unwrap();
    assert_eq!((change.status, change.version), (DocumentStatus::Draft, 4));
    let mut r = crate::domain::test_support::review(&d, ReviewStatus::Pending);
    (r.id, r.kind, r.due_at) = (id, ReviewKind::Reverify, Some(t0()));
    d.current_review_id = Some(id);
    let lapsed = plan_lapse(&d, &r, t0()).expect("lapsed");
    let change = lapsed.document.unwrap();
    assert_eq!((change.status, change.version), (DocumentStatus::Draft, 5));
    assert_eq!(change.published, Publication::Withdraw);
    assert_eq!(lapsed.outbox.event, EventType::Expired);
}

#[test]
fn approving_it_moves_verify_by_on_without_a_new_version() {
    let (d, r, _) = opened(vec![stage("review", 1, &[])]);
    let p = vote(&d, &r, "bob", Decision::Approve(None)).unwrap();
    let change = p.document.unwrap();
    assert_eq!(change.version, 3);
    assert_eq!(change.status, DocumentStatus::Approved);
    assert_eq!(change.published, Publication::Keep);
    let next = t0() + Duration::seconds(60) + Duration::seconds(86_400);
    assert_eq!(change.verify, Verify::At(next));
    assert_eq!(p.outbox.event, EventType::Verified);
    assert_eq!(p.audit.action, "verify");
    assert_eq!(p.audit.version, 3);
}

#[test]
fn rejecting_it_expires_and_unpublishes_the_document() {
    let (d, r, _) = opened(vec![stage("review", 1, &[])]);
    let reason = RejectReason::parse("outdated since the new indexer").unwrap();
    let p = vote(&d, &r, "bob", Decision::Reject(reason)).unwrap();
    let change = p.document.unwrap();
    assert_eq!(change.status, DocumentStatus::Expired);
    assert_eq!(change.version, 4);
    assert_eq!(change.published, Publication::Withdraw);
    assert_eq!(change.verify, Verify::Clear);
    assert_eq!(p.outbox.event, EventType::Expired);
    let Some(ReviewChange::Write(w)) = p.review else {
        panic!()
    };
    assert_eq!(w.update.unwrap().status, ReviewStatus::Rejected);
}

#[test]
fn its_stages_are_voted_like_any_reviews() {
    let (d, r, _) = opened(vec![stage("peers", 2, &[])]);
    let p = vote(&d, &r, "bob", Decision::Approve(None)).unwrap();
    assert!(p.document.is_none(), "one approval of two decides nothing");
    assert_eq!(p.outbox.event, EventType::ApprovalRecorded);
    assert_eq!(
        vote(
            &d,
            &r,
            crate::domain::test_support::AUTHOR,
            Decision::Approve(None)
        ),
        Err(Refusal::SelfReview)
    );
}

#[test]
fn a_reverification_nobody_decided_lapses_at_its_deadline() {
    let (d, r, _) = opened(vec![stage("review", 1, &[])]);
    let deadline = r.due_at.unwrap();
    assert!(plan_lapse(&d, &r, deadline - Duration::milliseconds(1)).is_none());
    let p = plan_lapse(&d, &r, deadline).expect("lapsed");
    assert_eq!(p.document.as_ref().unwrap().status, DocumentStatus::Expired);
    assert_eq!(p.outbox.event, EventType::Expired);
    assert_eq!(p.audit.action, "expire");
    let mut decided = r.clone();
    decided.status = ReviewStatus::Approved;
    assert!(
        plan_lapse(&d, &decided, deadline).is_none(),
        "decided in time"
    );
    let mut publish = r;
    publish.kind = ReviewKind::Publish;
    assert!(
        plan_lapse(&d, &publish, deadline).is_none(),
        "only re-verifications lapse"
    );
}

#[test]
fn an_open_reverification_refuses_a_submit_not_an_edit_and_an_expired_document_is_revised() {
    let (d, r, _) = opened(vec![stage("review", 1, &[])]);
    let author = user(crate::domain::test_support::AUTHOR);
    let edited = plan(
        &locked(d.clone(), Some(r.clone())),
        &author,
        edit(),
        Guard::Unlocked,
    );
    let edited = edited.expect("an edit starts a revision").document.unwrap();
    assert_eq!(edited.status, DocumentStatus::Draft);
    let mut revising = d.clone();
    (revising.status, revising.version) = (DocumentStatus::Draft, 4);
    let submit = Command::Submit {
        new_review_id: Uuid::now_v7(),
    };
    let rows = Locked {
        policy: Some(policy(Some(60), None)),
        ..locked(revising, Some(r.clone()))
    };
    let refused = plan(&rows, &author, submit.clone(), Guard::Unlocked);
    assert!(
        matches!(refused, Err(Refusal::Reverifying { .. })),
        "{refused:?}"
    );
    let mut expired = d;
    expired.status = DocumentStatus::Expired;
    expired.published_version = None;
    let mut rejected = r;
    rejected.status = ReviewStatus::Rejected;
    let rows = Locked {
        policy: Some(policy(Some(60), None)),
        ..locked(expired, Some(rejected))
    };
    let p = plan(&rows, &author, edit(), Guard::Unlocked).unwrap();
    assert_eq!(p.document.unwrap().status, DocumentStatus::Expired);
    let p = plan(&rows, &author, submit, Guard::Unlocked).unwrap();
    assert_eq!(p.document.unwrap().status, DocumentStatus::PendingReview);
}
