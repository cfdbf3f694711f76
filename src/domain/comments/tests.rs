//! Unit tests of the comment rule and of private drafts.

use uuid::Uuid;

use super::*;
use crate::domain::model::Reader;
use crate::domain::rules::plan;
use crate::domain::state::DocumentStatus;
use crate::domain::test_support::{approved, archive, doc, edit, locked, user, AUTHOR};
use crate::domain::Access;
use crate::domain::EventType;

#[test]
fn a_draft_never_submitted_does_not_exist_for_anyone_but_its_author_and_admins() {
    let draft = doc(DocumentStatus::Draft, None);
    for who in ["carol", "bob"] {
        let id = user(who);
        let reader = Reader::from(&id);
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
        access: &Access::platform_admin(),
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

#[test]
fn a_draft_never_submitted_publishes_nothing_its_comments_and_archive_only_move_the_projection() {
    let draft = doc(DocumentStatus::Draft, None);
    let author = user(AUTHOR);
    let body = || CommentBody::parse("Note to self").unwrap();
    let private = plan_comment(Some(&draft), (&author).into(), Uuid::now_v7(), body(), None);
    let private = private.unwrap().outbox;
    assert_eq!(private.event, EventType::Commented);
    assert_eq!(private.routing_key(), None, "audited, never published");
    let archived = plan(
        &locked(draft.clone(), None),
        &author,
        archive(None),
        Guard::Unlocked,
    )
    .unwrap();
    assert_eq!(archived.outbox.event, EventType::Archived);
    assert_eq!(archived.outbox.routing_key(), None);
    assert_eq!(archived.audit.action, "archive", "still audited");
    // Once submitted (even withdrawn since), the same changes are published again.
    let mut once = draft;
    once.current_review_id = Some(Uuid::now_v7());
    let public = plan_comment(Some(&once), (&author).into(), Uuid::now_v7(), body(), None);
    assert_eq!(
        public.unwrap().outbox.routing_key(),
        Some("document.commented")
    );
    let archived = plan(&locked(once, None), &author, archive(None), Guard::Unlocked);
    let key = archived.unwrap().outbox.routing_key();
    assert_eq!(key, Some("document.archived"));
}
