//! Unit tests of the lifecycle rules: revisions, archive, comments and private drafts.

use uuid::Uuid;

use super::*;
use crate::domain::model::{Document, FencingToken, LockScope, Reader};
use crate::domain::plan::{Command, Decision, Locked, Publication};
use crate::domain::rules::plan;
use crate::domain::state::DocumentStatus;
use crate::domain::test_support::{doc, review, user, AUTHOR};
use crate::domain::{Comment, DocumentTitle, EventData, EventType};

/// An approved document published at its version 3, with its decided review.
fn approved() -> Document {
    let mut d = doc(DocumentStatus::Approved, None);
    d.version = 3;
    d.current_review_id = Some(Uuid::now_v7());
    d.published_version = Some(3);
    d.published_title = Some(d.title.clone());
    d.published_body = Some(d.body.clone());
    d
}

fn locked(d: Document, r: Option<Review>) -> Locked {
    Locked {
        document: Some(d),
        review: r,
        ..Locked::default()
    }
}

fn archive(expected_version: Option<i64>) -> Command {
    Command::Archive {
        reason: Some(ArchiveReason::parse("superseded").unwrap()),
        expected_version,
    }
}

fn edit() -> Command {
    Command::Edit {
        title: Some(DocumentTitle::parse("Runbook, revised").unwrap()),
        body: None,
        policy: None,
    }
}

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
        admin: true,
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

#[test]
fn a_draft_never_submitted_does_not_exist_for_anyone_but_its_author_and_admins() {
    let draft = doc(DocumentStatus::Draft, None);
    for (who, admin) in [("carol", false), ("bob", false)] {
        let reader = Reader {
            id: &user(who),
            admin,
        };
        for command in [edit(), archive(None)] {
            let r = plan(
                &locked(draft.clone(), None),
                reader,
                command,
                Guard::Unlocked,
            );
            assert_eq!(r.unwrap_err(), Refusal::NotFound, "{who}");
        }
        let c = plan_comment(
            Some(&draft),
            reader,
            Uuid::now_v7(),
            CommentBody::parse("hi").unwrap(),
            None,
        );
        assert_eq!(c.unwrap_err(), Refusal::NotFound);
    }
    // An admin sees it: another author's edit is forbidden, not unknown.
    let admin = Reader {
        id: &user("root"),
        admin: true,
    };
    let r = plan(&locked(draft.clone(), None), admin, edit(), Guard::Unlocked);
    assert!(matches!(r, Err(Refusal::Forbidden(_))), "{r:?}");
    assert!(plan(&locked(draft, None), &user(AUTHOR), edit(), Guard::Unlocked).is_ok());
}

#[test]
fn comments_point_at_a_review_of_their_document_and_not_at_an_archived_one() {
    let d = approved();
    let bob = user("bob");
    let body = || CommentBody::parse("Step 3 is out of date.").unwrap();
    let mine = d.current_review_id.unwrap();
    let ok = plan_comment(
        Some(&d),
        (&bob).into(),
        Uuid::now_v7(),
        body(),
        Some((mine, Some(d.id))),
    )
    .unwrap();
    assert_eq!(ok.comment.review_id, Some(mine));
    assert_eq!(
        ok.audit.version, d.version,
        "a comment leaves the version as it is"
    );
    assert_eq!(ok.outbox.event, EventType::Commented);
    let elsewhere = Uuid::now_v7();
    let foreign = plan_comment(
        Some(&d),
        (&bob).into(),
        Uuid::now_v7(),
        body(),
        Some((elsewhere, Some(Uuid::now_v7()))),
    );
    assert_eq!(
        foreign.unwrap_err(),
        Refusal::ReviewOfAnotherDocument(elsewhere)
    );
    let unknown = plan_comment(
        Some(&d),
        (&bob).into(),
        Uuid::now_v7(),
        body(),
        Some((elsewhere, None)),
    );
    assert_eq!(
        unknown.unwrap_err(),
        Refusal::ReviewOfAnotherDocument(elsewhere)
    );
    let mut gone = d.clone();
    gone.status = DocumentStatus::Archived;
    let closed = plan_comment(Some(&gone), (&bob).into(), Uuid::now_v7(), body(), None);
    assert!(
        matches!(closed, Err(Refusal::InvalidState(_))),
        "{closed:?}"
    );
}
