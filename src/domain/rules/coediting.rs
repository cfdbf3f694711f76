//! Editing together: who edits a document of a space, its contributors, four eyes over them,
//! and the `If-Match` a write may carry.

use uuid::Uuid;

use super::*;
use crate::domain::test_support::{
    approved, archive, doc, edit, locked, pending_review, user, AUTHOR,
};
use crate::domain::{Access, Comment, Conditions, IfMatch, TokenRoles};

fn submit() -> Command {
    Command::Submit {
        new_review_id: Uuid::now_v7(),
    }
}

fn approve() -> Command {
    Command::Decide {
        decision: Decision::Approve(Some(Comment::parse("fine").unwrap())),
        groups: vec![],
    }
}

/// A draft submitted before (its review withdrawn), at version 4.
fn withdrawn() -> Document {
    let mut d = doc(DocumentStatus::Draft, None);
    d.current_review_id = Some(Uuid::now_v7());
    d
}

#[test]
fn once_submitted_every_author_of_the_space_edits_submits_and_withdraws() {
    let carol = user("carol");
    let p = plan(&locked(withdrawn(), None), &carol, edit(), Guard::Unlocked).unwrap();
    let change = p.document.unwrap();
    assert_eq!(change.contributors, Some(vec!["carol".to_string()]));
    let mut again = withdrawn();
    again.contributors = vec!["carol".into(), AUTHOR.into()];
    let p = plan(&locked(again, None), &carol, edit(), Guard::Unlocked).unwrap();
    let listed = p.document.unwrap().contributors;
    assert_eq!(
        listed,
        Some(vec!["carol".to_string(), AUTHOR.to_string()]),
        "each once"
    );
    let rows = Locked {
        policy: Some(crate::domain::Policy {
            name: "default".into(),
            version: 1,
            stages: vec![crate::domain::Stage::default_stage()],
            due_after_secs: None,
            claim_ttl_secs: 1800,
            reverify_after_secs: None,
            reverify_grace_secs: None,
            updated_at: chrono::Utc::now(),
        }),
        ..locked(withdrawn(), None)
    };
    assert!(plan(&rows, &carol, submit(), Guard::RowLockOnly).is_ok());
    let (d, r) = pending_review(vec![crate::domain::Stage::default_stage()]);
    assert!(plan(
        &locked(d, Some(r)),
        &carol,
        Command::Withdraw,
        Guard::RowLockOnly
    )
    .is_ok());
    // An archive stays its author's or an admin's.
    let refused = plan(
        &locked(withdrawn(), None),
        &carol,
        archive(None),
        Guard::RowLockOnly,
    );
    assert!(matches!(refused, Err(Refusal::Forbidden(_))), "{refused:?}");
}

#[test]
fn a_draft_never_submitted_stays_its_authors() {
    let draft = locked(doc(DocumentStatus::Draft, None), None);
    let carol = user("carol");
    assert_eq!(
        plan(&draft, &carol, edit(), Guard::Unlocked),
        Err(Refusal::NotFound)
    );
    // An admin reads it, but edits and submits nothing of it.
    let admin_access = Access::new(
        TokenRoles {
            author: true,
            admin: true,
            ..Default::default()
        },
        [],
    );
    let admin = Reader {
        id: &carol,
        access: &admin_access,
    };
    let refused = plan(&draft, admin, edit(), Guard::Unlocked);
    assert!(matches!(refused, Err(Refusal::Forbidden(_))), "{refused:?}");
    let refused = plan(&draft, admin, submit(), Guard::RowLockOnly);
    assert!(matches!(refused, Err(Refusal::Forbidden(_))), "{refused:?}");
    let p = plan(&draft, &user(AUTHOR), edit(), Guard::Unlocked).unwrap();
    assert_eq!(
        p.document.unwrap().contributors,
        Some(vec![AUTHOR.to_string()])
    );
}

#[test]
fn a_contributor_of_the_version_under_review_may_not_vote_and_an_approval_starts_anew() {
    let (mut d, r) = pending_review(vec![crate::domain::Stage::default_stage()]);
    d.contributors = vec!["carol".into()];
    let rows = locked(d.clone(), Some(r.clone()));
    assert_eq!(
        plan(&rows, &user("carol"), approve(), Guard::RowLockOnly),
        Err(Refusal::SelfReview)
    );
    let p = plan(&rows, &user("dave"), approve(), Guard::RowLockOnly).unwrap();
    assert_eq!(p.document.unwrap().contributors, Some(vec![]));
    // A rejection leaves the list: the next version's contributors add to it.
    let reject = Command::Decide {
        decision: Decision::Reject(crate::domain::RejectReason::parse("no").unwrap()),
        groups: vec![],
    };
    let p = plan(&rows, &user("dave"), reject, Guard::RowLockOnly).unwrap();
    assert_eq!(p.document.unwrap().contributors, None);
}

fn cond(if_match: Option<&IfMatch>) -> Conditions<'_> {
    Conditions {
        if_match,
        lease_token: None,
    }
}

fn at(versions: &[i64]) -> Option<IfMatch> {
    Some(IfMatch::Versions(versions.to_vec()))
}

#[test]
fn if_match_passes_the_current_version_only_and_names_it() {
    let rows = locked(withdrawn(), None);
    let me = user(AUTHOR);
    let conditional = |m: Option<IfMatch>, cmd| {
        plan_conditional(&rows, &me, cmd, Guard::Unlocked, cond(m.as_ref()))
    };
    assert!(conditional(at(&[4]), edit()).is_ok());
    assert!(conditional(at(&[3, 4]), edit()).is_ok());
    assert!(conditional(Some(IfMatch::Any), edit()).is_ok());
    let current = Refusal::VersionMismatch {
        current: 4,
        status: DocumentStatus::Draft,
    };
    assert_eq!(conditional(at(&[3]), edit()), Err(current.clone()));
    assert_eq!(conditional(at(&[]), edit()), Err(current.clone()));
    assert_eq!(conditional(at(&[3]), archive(None)), Err(current));
    assert!(current_message_names_the_version());
}

fn current_message_names_the_version() -> bool {
    let e = Refusal::VersionMismatch {
        current: 7,
        status: DocumentStatus::Approved,
    };
    e.to_string().contains("version 7")
}

#[test]
fn if_match_is_judged_after_who_may_act_and_before_the_state() {
    let me = user(AUTHOR);
    let stale = at(&[1]);
    // A stale version of a pending document: 412 before the 409 of its state.
    let (d, r) = pending_review(vec![crate::domain::Stage::default_stage()]);
    let pending = locked(d, Some(r));
    let refused = plan_conditional(&pending, &me, edit(), Guard::Unlocked, cond(stale.as_ref()));
    assert!(
        matches!(refused, Err(Refusal::VersionMismatch { .. })),
        "{refused:?}"
    );
    // One who may not archive learns that, not the version.
    let carol = user("carol");
    let rows = locked(approved(), None);
    let refused = plan_conditional(
        &rows,
        &carol,
        archive(None),
        Guard::RowLockOnly,
        cond(stale.as_ref()),
    );
    assert!(matches!(refused, Err(Refusal::Forbidden(_))), "{refused:?}");
    // A vote carries no If-Match: it is not judged.
    let (d, r) = pending_review(vec![crate::domain::Stage::default_stage()]);
    let rows = locked(d, Some(r));
    let admin = Access::new(
        TokenRoles {
            reviewer: true,
            ..Default::default()
        },
        [],
    );
    let reader = Reader {
        id: &carol,
        access: &admin,
    };
    assert!(plan_conditional(
        &rows,
        reader,
        approve(),
        Guard::RowLockOnly,
        cond(stale.as_ref())
    )
    .is_ok());
}
