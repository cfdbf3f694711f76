//! Unit tests of the archive rule and of revisions.

use super::*;
use crate::domain::model::{FencingToken, LockScope, Reader};
use crate::domain::plan::{Command, Decision, Publication};
use crate::domain::rules::plan;
use crate::domain::state::DocumentStatus;
use crate::domain::test_support::{approved, archive, edit, locked, review, user, AUTHOR};
use crate::domain::Access;
use crate::domain::{Comment, EventData, EventType};

#[test]
fn an_edit_of_an_approved_document_starts_a_revision_and_keeps_it_published() {
    let author = user(AUTHOR);
    let p = plan(&locked(approved(), None), &author, edit(), Guard::Unlocked).unwrap();
    let change = p.document.unwrap();
    assert_eq!(change.status, DocumentStatus::Draft);
    assert_eq!(change.version, 4);
    assert_eq!(change.published, Publication::Keep);
}

#[test]
fn the_approval_of_a_revision_publishes_it_and_names_the_version_it_replaced() {
    let mut d = approved();
    d.status = DocumentStatus::PendingReview;
    d.version = 5;
    let r = review(&d, ReviewStatus::Pending);
    d.current_review_id = Some(r.id);
    let approve = Command::Decide {
        decision: Decision::Approve(Some(Comment::parse("ok").unwrap())),
        groups: vec![],
    };
    let p = plan(
        &locked(d, Some(r)),
        &user("bob"),
        approve,
        Guard::RowLockOnly,
    )
    .unwrap();
    let change = p.document.unwrap();
    assert_eq!(
        (change.status, change.version),
        (DocumentStatus::Approved, 6)
    );
    assert_eq!(change.published, Publication::Publish);
    match p.outbox.data {
        EventData::Approved {
            replaced_version, ..
        } => assert_eq!(replaced_version, Some(3)),
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_archive_withdraws_the_pending_review_and_unpublishes() {
    let mut d = approved();
    d.status = DocumentStatus::PendingReview;
    d.version = 5;
    let r = review(&d, ReviewStatus::Pending);
    d.current_review_id = Some(r.id);
    let p = plan(
        &locked(d, Some(r.clone())),
        &user(AUTHOR),
        archive(Some(5)),
        Guard::RowLockOnly,
    )
    .unwrap();
    let change = p.document.unwrap();
    assert_eq!(
        (change.status, change.version),
        (DocumentStatus::Archived, 6)
    );
    assert_eq!(change.published, Publication::Withdraw);
    match p.review {
        Some(crate::domain::plan::ReviewChange::Write(w)) => {
            assert_eq!(w.id, r.id);
            assert_eq!(w.update.unwrap().status, ReviewStatus::Withdrawn);
            assert!(w.end_claims);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(p.outbox.event, EventType::Archived);
    match p.outbox.data {
        EventData::Archived {
            withdrawn_review_id,
            reason,
            ..
        } => {
            assert_eq!(withdrawn_review_id, Some(r.id));
            assert_eq!(reason.as_deref(), Some("superseded"));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_archive_is_refused_once_archived_at_another_version_or_by_another_author() {
    let author = user(AUTHOR);
    let moved = plan(
        &locked(approved(), None),
        &author,
        archive(Some(2)),
        Guard::Unlocked,
    );
    assert!(
        matches!(
            moved,
            Err(Refusal::VersionMoved {
                expected: 2,
                actual: 3,
                ..
            })
        ),
        "{moved:?}"
    );
    let mut gone = approved();
    gone.status = DocumentStatus::Archived;
    let again = plan(&locked(gone, None), &author, archive(None), Guard::Unlocked);
    assert!(matches!(again, Err(Refusal::InvalidState(_))), "{again:?}");
    let other = plan(
        &locked(approved(), None),
        &user("carol"),
        archive(None),
        Guard::Unlocked,
    );
    assert!(matches!(other, Err(Refusal::Forbidden(_))), "{other:?}");
    let admin = Reader {
        id: &user("root"),
        access: &Access::platform_admin(),
    };
    assert!(plan(
        &locked(approved(), None),
        admin,
        archive(None),
        Guard::Unlocked
    )
    .is_ok());
    // The holder of a stale token of the document's own lock is told so first.
    let mut fenced = approved();
    fenced.fence_token = Some(FencingToken::new(9));
    let stale = Guard::Outer(LockScope::Document, FencingToken::new(8));
    let lost = plan(&locked(fenced, None), &author, archive(None), stale);
    assert_eq!(lost.unwrap_err(), Refusal::StaleFence);
}
