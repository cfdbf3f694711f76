//! Unit tests of every refusal, and properties of [`plan`] over every combination of rows,
//! actor, command and lock.

use chrono::Utc;
use proptest::prelude::*;
use uuid::Uuid;

use super::*;
use crate::domain::model::FencingToken;

const AUTHOR: &str = "alice";
const REVIEWER: &str = "bob";

fn user(s: &str) -> UserId {
    UserId::parse(s).unwrap()
}

fn doc(status: DocumentStatus, fence: Option<i64>) -> Document {
    Document {
        id: Uuid::now_v7(),
        title: "Runbook".into(),
        body: "Restart the indexer.".into(),
        status,
        version: 4,
        author_id: AUTHOR.into(),
        current_review_id: None,
        fence_token: fence.map(FencingToken::new),
        created_at: Utc::now(),
        updated_at: Utc::now(),
    }
}

/// A pending document with its current, pending review.
fn pending(fence: Option<i64>) -> Locked {
    let mut d = doc(DocumentStatus::PendingReview, fence);
    let r = review(&d, ReviewStatus::Pending);
    d.current_review_id = Some(r.id);
    Locked {
        document: Some(d),
        review: Some(r),
    }
}

fn review(d: &Document, status: ReviewStatus) -> Review {
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
    }
}

fn approve() -> Command {
    Command::Decide(Decision::Approve(Some(Comment::parse("fine").unwrap())))
}

fn reject() -> Command {
    Command::Decide(Decision::Reject(RejectReason::parse("needs work").unwrap()))
}

fn edit() -> Command {
    Command::Edit {
        title: Some(DocumentTitle::parse("New title").unwrap()),
        body: None,
    }
}

fn outer(f: i64) -> Guard {
    Guard::Outer(FencingToken::new(f))
}

fn submit() -> Command {
    Command::Submit {
        new_review_id: Uuid::now_v7(),
    }
}

#[test]
fn refusals_of_who_may_act_on_what() {
    let reviewer = user(REVIEWER);
    let author = user(AUTHOR);
    // Not found: no document, or no review to decide.
    let none = Locked::default();
    assert_eq!(
        plan(&none, &reviewer, approve(), Guard::RowLockOnly),
        Err(Refusal::NotFound)
    );
    let no_review = Locked {
        review: None,
        ..pending(None)
    };
    assert_eq!(
        plan(&no_review, &reviewer, approve(), Guard::RowLockOnly),
        Err(Refusal::NotFound)
    );
    // Forbidden: only the author edits and submits.
    let draft = Locked {
        document: Some(doc(DocumentStatus::Draft, None)),
        review: None,
    };
    assert_eq!(
        plan(&draft, &reviewer, edit(), Guard::Unlocked),
        Err(Refusal::Forbidden("only the author may edit a document"))
    );
    assert_eq!(
        plan(&draft, &reviewer, submit(), Guard::RowLockOnly),
        Err(Refusal::Forbidden("only the author may submit a document"))
    );
    // Self-review, even before the review's state is judged.
    assert_eq!(
        plan(&pending(None), &author, reject(), Guard::RowLockOnly),
        Err(Refusal::SelfReview)
    );
}

#[test]
fn refusals_of_state_and_lock() {
    let reviewer = user(REVIEWER);
    let author = user(AUTHOR);
    // Invalid state: edit or submit while pending, decide a draft.
    let p = pending(None);
    assert!(matches!(
        plan(&p, &author, edit(), Guard::Unlocked),
        Err(Refusal::InvalidState(_))
    ));
    assert!(matches!(
        plan(&p, &author, submit(), Guard::RowLockOnly),
        Err(Refusal::InvalidState(_))
    ));
    let mut d = p.clone();
    d.document.as_mut().unwrap().status = DocumentStatus::Draft;
    assert!(matches!(
        plan(&d, &reviewer, approve(), Guard::RowLockOnly),
        Err(Refusal::InvalidState(_))
    ));
    // The review was decided already.
    let mut decided = pending(None);
    decided.review.as_mut().unwrap().status = ReviewStatus::Approved;
    assert_eq!(
        plan(&decided, &reviewer, reject(), Guard::RowLockOnly),
        Err(Refusal::ReviewNotPending(ReviewStatus::Approved))
    );
    // A pending review that is not the document's current one.
    let mut stray = pending(None);
    stray.document.as_mut().unwrap().current_review_id = Some(Uuid::now_v7());
    assert_eq!(
        plan(&stray, &reviewer, approve(), Guard::RowLockOnly),
        Err(Refusal::NotCurrentReview)
    );
    // A stale fence is judged first, before four-eyes.
    assert_eq!(
        plan(&pending(Some(10)), &author, approve(), outer(9)),
        Err(Refusal::StaleFence)
    );
    let rejected = Locked {
        document: Some(doc(DocumentStatus::Rejected, Some(10))),
        review: None,
    };
    assert_eq!(
        plan(&rejected, &author, submit(), outer(9)),
        Err(Refusal::StaleFence)
    );
}

#[test]
fn an_approval_writes_the_whole_transition() {
    let locked = pending(Some(7));
    let d = locked.document.clone().unwrap();
    let r = locked.review.clone().unwrap();
    let p = plan(&locked, &user(REVIEWER), approve(), outer(9)).unwrap();
    assert_eq!(p.document.status, DocumentStatus::Approved);
    assert_eq!(p.document.version, 5);
    assert_eq!(p.document.fence_token, Some(FencingToken::new(9)));
    assert_eq!(p.document.current_review_id, Some(r.id));
    assert_eq!(
        p.review,
        Some(ReviewChange::Decide(DecideReview {
            id: r.id,
            status: ReviewStatus::Approved,
            decided_by: REVIEWER.into(),
            comment: Some("fine".into()),
            reason: None,
            fence_token: Some(FencingToken::new(9)),
        }))
    );
    assert_eq!(p.audit.action, "approve");
    assert_eq!(p.audit.from_status, Some(DocumentStatus::PendingReview));
    assert_eq!(p.audit.lock_mode, "redis");
    assert_eq!(p.outbox.event, EventType::Approved);
    assert_eq!(
        p.outbox.data,
        EventData::Approved {
            title: d.title,
            comment: Some("fine".into())
        }
    );
}

#[test]
fn an_empty_comment_is_no_comment_and_a_lower_fence_keeps_the_higher() {
    let mut locked = pending(Some(20));
    locked.document.as_mut().unwrap().fence_token = None;
    let empty = Command::Decide(Decision::Approve(Some(Comment::parse("").unwrap())));
    let p = plan(&locked, &user(REVIEWER), empty, Guard::RowLockOnly).unwrap();
    assert!(matches!(
        p.review,
        Some(ReviewChange::Decide(DecideReview { comment: None, .. }))
    ));
    assert_eq!(p.document.fence_token, None);
    assert_eq!(p.audit.lock_mode, "row_lock_only");
    let p = plan(&pending(Some(20)), &user(REVIEWER), reject(), outer(20)).unwrap();
    assert_eq!(
        p.document.fence_token,
        Some(FencingToken::new(20)),
        "an equal token is not stale"
    );
}

fn any_doc_status() -> impl Strategy<Value = DocumentStatus> {
    prop_oneof![
        Just(DocumentStatus::Draft),
        Just(DocumentStatus::PendingReview),
        Just(DocumentStatus::Approved),
        Just(DocumentStatus::Rejected),
    ]
}

fn any_review_status() -> impl Strategy<Value = ReviewStatus> {
    prop_oneof![
        Just(ReviewStatus::Pending),
        Just(ReviewStatus::Approved),
        Just(ReviewStatus::Rejected),
    ]
}

fn any_command() -> impl Strategy<Value = Command> {
    prop_oneof![
        Just(edit()),
        Just(Command::Submit {
            new_review_id: Uuid::nil()
        }),
        Just(approve()),
        Just(reject()),
    ]
}

fn any_guard() -> impl Strategy<Value = Guard> {
    prop_oneof![
        Just(Guard::Unlocked),
        Just(Guard::RowLockOnly),
        (0i64..20).prop_map(outer),
    ]
}

prop_compose! {
    fn any_rows()(
        doc_status in any_doc_status(),
        review_status in any_review_status(),
        current in any::<bool>(),
        stored_fence in proptest::option::of(0i64..20),
        has_doc in prop::bool::weighted(0.9),
        has_review in prop::bool::weighted(0.9),
    ) -> Locked {
        let mut d = doc(doc_status, stored_fence);
        let r = review(&d, review_status);
        if current { d.current_review_id = Some(r.id); }
        Locked { document: has_doc.then_some(d), review: has_review.then_some(r) }
    }
}

proptest! {
    /// A plan always moves along the state machine, bumps the version by one, never lowers
    /// the fence, and writes an audit row and an outbox entry that agree with it.
    #[test]
    fn plans_agree_with_the_state_machine(
        locked in any_rows(), is_author in any::<bool>(), cmd in any_command(), guard in any_guard()
    ) {
        let actor = user(if is_author { AUTHOR } else { REVIEWER });
        let action = match &cmd {
            Command::Edit { .. } => Action::Edit,
            Command::Submit { .. } => Action::Submit,
            Command::Decide(d) => d.action(),
        };
        let Ok(p) = plan(&locked, &actor, cmd, guard) else { return Ok(()); };
        let d = locked.document.as_ref().unwrap();
        prop_assert_eq!(Ok(p.document.status), d.status.apply(action));
        prop_assert_eq!(p.document.version, d.version + 1);
        prop_assert_eq!(p.audit.version, p.document.version);
        prop_assert_eq!(p.audit.to_status, p.document.status);
        prop_assert_eq!(p.audit.from_status, Some(d.status));
        prop_assert!(p.document.fence_token >= d.fence_token);
        prop_assert_eq!(p.audit.action, action.as_str());
        let expected = match action {
            Action::Edit => EventType::Updated,
            Action::Submit => EventType::Submitted,
            Action::Approve => EventType::Approved,
            Action::Reject => EventType::Rejected,
        };
        prop_assert_eq!(p.outbox.event, expected);
        // Four-eyes: the author never decides; only the author edits and submits.
        prop_assert_eq!(is_author, !matches!(action, Action::Approve | Action::Reject));
    }

    /// Whatever is refused is refused for the first reason in the documented order.
    #[test]
    fn refusals_follow_the_documented_order(
        locked in any_rows(), is_author in any::<bool>(), cmd in any_command(), guard in any_guard()
    ) {
        let actor = user(if is_author { AUTHOR } else { REVIEWER });
        let deciding = matches!(cmd, Command::Decide(_));
        let Err(refusal) = plan(&locked, &actor, cmd, guard) else { return Ok(()); };
        let Some(d) = locked.document.as_ref() else {
            prop_assert_eq!(refusal, Refusal::NotFound);
            return Ok(());
        };
        let stale = matches!((d.fence_token, guard.fence()), (Some(s), Some(m)) if m < s);
        if deciding {
            if locked.review.is_none() {
                prop_assert_eq!(refusal, Refusal::NotFound);
            } else if stale {
                prop_assert_eq!(refusal, Refusal::StaleFence);
            } else if is_author {
                prop_assert_eq!(refusal, Refusal::SelfReview);
            }
        } else if !is_author {
            prop_assert!(matches!(refusal, Refusal::Forbidden(_)), "{:?}", refusal);
        }
    }
}
