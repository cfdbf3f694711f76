//! Unit tests of every refusal, and properties of [`plan`] over every combination of rows,
//! actor, command and lock.

use chrono::Utc;
use proptest::prelude::*;
use uuid::Uuid;

use super::*;
use crate::domain::model::{FencingToken, LockScope};
use crate::domain::policy::Policy;
use crate::domain::test_support::{any_doc_status, any_review_status, doc, review, user, AUTHOR};
use crate::domain::{model::VoteKind, EventType};
use crate::domain::{Comment, RejectReason, ReviewStatus};

fn policy() -> Policy {
    Policy {
        name: "default".into(),
        version: 1,
        stages: vec![crate::domain::Stage::default_stage()],
        due_after_secs: None,
        claim_ttl_secs: 1800,
        reverify_after_secs: None,
        reverify_grace_secs: None,
        updated_at: Utc::now(),
    }
}

const REVIEWER: &str = "bob";

/// A pending document with its current, pending review.
fn pending(fence: Option<i64>) -> Locked {
    let mut d = doc(DocumentStatus::PendingReview, fence);
    let r = review(&d, ReviewStatus::Pending);
    d.current_review_id = Some(r.id);
    Locked {
        document: Some(d),
        review: Some(r),
        policy: Some(policy()),
        ..Locked::default()
    }
}

fn decide(decision: Decision) -> Command {
    Command::Decide {
        decision,
        groups: vec![],
    }
}

fn approve() -> Command {
    decide(Decision::Approve(Some(Comment::parse("fine").unwrap())))
}

fn reject() -> Command {
    decide(Decision::Reject(RejectReason::parse("needs work").unwrap()))
}

fn edit() -> Command {
    Command::Edit {
        title: Some(DocumentTitle::parse("New title").unwrap()),
        body: None,
        policy: None,
    }
}

/// The review's own lock (a vote in a one-approval stage).
fn outer(f: i64) -> Guard {
    Guard::Outer(LockScope::Review, FencingToken::new(f))
}

/// The document's own lock (submit, withdraw).
fn doc_lock(f: i64) -> Guard {
    Guard::Outer(LockScope::Document, FencingToken::new(f))
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
    // Forbidden (a draft never submitted, to an admin): `coediting.rs`.
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
    // A stale token of the vote's own lock is judged first, before four-eyes; a token of
    // another lock is never compared with it.
    let mut stale = pending(None);
    stale.review.as_mut().unwrap().fence_token = Some(FencingToken::new(10));
    assert_eq!(
        plan(&stale, &author, approve(), outer(9)),
        Err(Refusal::StaleFence)
    );
    assert_eq!(
        plan(&pending(Some(10)), &user(REVIEWER), approve(), outer(9)).map(|_| ()),
        Ok(()),
        "the document's submit token is another lock's"
    );
    let rejected = Locked {
        document: Some(doc(DocumentStatus::Rejected, Some(10))),
        policy: Some(policy()),
        ..Locked::default()
    };
    assert_eq!(
        plan(&rejected, &author, submit(), doc_lock(9)),
        Err(Refusal::StaleFence)
    );
}

#[test]
fn an_approval_writes_the_whole_transition() {
    let locked = pending(Some(7));
    let d = locked.document.clone().unwrap();
    let r = locked.review.clone().unwrap();
    let p = plan(&locked, &user(REVIEWER), approve(), outer(9)).unwrap();
    let doc = p.document.clone().unwrap();
    assert_eq!(doc.status, DocumentStatus::Approved);
    assert_eq!(doc.version, 5);
    assert_eq!(
        doc.fence_token,
        Some(FencingToken::new(7)),
        "the review lock's token is kept on the review, not the document"
    );
    assert_eq!(doc.current_review_id, Some(r.id));
    let Some(ReviewChange::Write(write)) = p.review else {
        panic!("a review write: {:?}", p.review)
    };
    assert_eq!(write.id, r.id);
    assert!(write.end_claims);
    let vote = write.vote.unwrap();
    assert_eq!(
        (vote.voter_id.as_str(), vote.kind),
        (REVIEWER, VoteKind::Approve)
    );
    assert_eq!(vote.comment.as_deref(), Some("fine"));
    let update = write.update.unwrap();
    assert_eq!(update.status, ReviewStatus::Approved);
    assert_eq!(update.decided_by.as_deref(), Some(REVIEWER));
    assert_eq!(update.fence_token, Some(FencingToken::new(9)));
    assert_eq!(p.audit.action, "approve");
    assert_eq!(p.audit.from_status, Some(DocumentStatus::PendingReview));
    assert_eq!(p.audit.lock_mode, "redis");
    assert_eq!(p.outbox.event, EventType::Approved);
    assert_eq!(
        p.outbox.data,
        EventData::Approved {
            title: d.title,
            comment: Some("fine".into()),
            replaced_version: None
        }
    );
}

#[test]
fn an_empty_comment_is_no_comment_and_a_lower_fence_keeps_the_higher() {
    let locked = pending(None);
    let empty = decide(Decision::Approve(Some(Comment::parse("").unwrap())));
    let p = plan(&locked, &user(REVIEWER), empty, Guard::RowLockOnly).unwrap();
    let Some(ReviewChange::Write(write)) = &p.review else {
        panic!("a review write")
    };
    assert_eq!(write.vote.as_ref().unwrap().comment, None);
    assert_eq!(write.update.as_ref().unwrap().comment, None);
    assert_eq!(p.audit.lock_mode, "row_lock_only");
    let mut held = pending(None);
    held.review.as_mut().unwrap().fence_token = Some(FencingToken::new(20));
    let p = plan(&held, &user(REVIEWER), reject(), outer(20)).unwrap();
    let Some(ReviewChange::Write(write)) = &p.review else {
        panic!("a review write")
    };
    assert_eq!(
        write.update.as_ref().unwrap().fence_token,
        Some(FencingToken::new(20)),
        "an equal token is not stale"
    );
}

fn any_command() -> impl Strategy<Value = Command> {
    prop_oneof![
        Just(edit()),
        Just(Command::Submit {
            new_review_id: Uuid::nil()
        }),
        Just(approve()),
        Just(reject()),
        Just(Command::Withdraw),
        Just(Command::Archive {
            reason: None,
            expected_version: None
        }),
    ]
}

fn any_guard() -> impl Strategy<Value = Guard> {
    prop_oneof![
        Just(Guard::Unlocked),
        Just(Guard::RowLockOnly),
        (0i64..20).prop_map(outer),
        (0i64..20).prop_map(doc_lock),
    ]
}

prop_compose! {
    fn any_rows()(
        doc_status in any_doc_status(),
        review_status in any_review_status(),
        current in any::<bool>(),
        submitted in prop::bool::weighted(0.8),
        stored_fence in proptest::option::of(0i64..20),
        review_fence in proptest::option::of(0i64..20),
        has_doc in prop::bool::weighted(0.9),
        has_review in prop::bool::weighted(0.9),
    ) -> Locked {
        let mut d = doc(doc_status, stored_fence);
        let mut r = review(&d, review_status);
        r.fence_token = review_fence.map(FencingToken::new);
        // Not current: an earlier review is (or, never submitted, none).
        d.current_review_id = match (current, submitted) {
            (true, _) => Some(r.id),
            (false, true) => Some(Uuid::now_v7()),
            (false, false) => None,
        };
        Locked {
            document: has_doc.then_some(d),
            review: has_review.then_some(r),
            policy: Some(policy()),
            ..Locked::default()
        }
    }
}

proptest! {
    /// A plan always moves along the state machine, bumps the version by one, never lowers
    /// the fence of the document's own lock, and writes an audit row and an outbox entry
    /// that agree with it. (Under the default policy's one stage, every approval decides.)
    #[test]
    fn plans_agree_with_the_state_machine(
        locked in any_rows(), is_author in any::<bool>(), cmd in any_command(), guard in any_guard()
    ) {
        let actor = user(if is_author { AUTHOR } else { REVIEWER });
        let action = match &cmd {
            Command::Edit { .. } => Action::Edit,
            Command::Submit { .. } => Action::Submit,
            Command::Decide { decision, .. } => decision.action(),
            Command::Withdraw => Action::Withdraw,
            Command::Archive { .. } => Action::Archive,
        };
        let Ok(p) = plan(&locked, &actor, cmd, guard) else { return Ok(()); };
        let d = locked.document.as_ref().unwrap();
        let doc = p.document.clone().expect("every change of the default policy moves the document");
        prop_assert_eq!(Ok(doc.status), d.status.apply(action));
        prop_assert_eq!(doc.version, d.version + 1);
        prop_assert_eq!(p.audit.version, doc.version);
        prop_assert_eq!(p.audit.to_status, doc.status);
        prop_assert_eq!(p.audit.from_status, Some(d.status));
        prop_assert!(doc.fence_token >= d.fence_token);
        prop_assert_eq!(p.audit.action, action.as_str());
        let expected = match action {
            Action::Edit => EventType::Updated,
            Action::Submit => EventType::Submitted,
            Action::Approve => EventType::Approved,
            Action::Reject => EventType::Rejected,
            Action::Withdraw => EventType::Withdrawn,
            Action::Archive => EventType::Archived,
            Action::Comment => EventType::Commented,
            Action::Expire => EventType::Expired,
        };
        prop_assert_eq!(p.outbox.event, expected);
        // Four-eyes: the author never decides; only the author archives (no admin here), and
        // edits, submits and withdraws a document before its first submit (co-editing after).
        let coedit = d.ever_submitted() && matches!(action, Action::Edit | Action::Submit | Action::Withdraw);
        prop_assert_eq!(is_author || coedit, !matches!(action, Action::Approve | Action::Reject));
    }

    /// Whatever is refused is refused for the first reason in the documented order, and a
    /// stale token is only ever one of the same lock. A vote on a review that is not there
    /// is `NotFound` before anything else is judged; a withdrawal is judged on its document.
    #[test]
    fn refusals_follow_the_documented_order(
        locked in any_rows(), is_author in any::<bool>(), cmd in any_command(), guard in any_guard()
    ) {
        let actor = user(if is_author { AUTHOR } else { REVIEWER });
        let (deciding, withdrawing) = (matches!(cmd, Command::Decide { .. }), cmd == Command::Withdraw);
        let archiving = matches!(cmd, Command::Archive { .. });
        let Err(refusal) = plan(&locked, &actor, cmd, guard) else { return Ok(()); }; // A draft never submitted: not found but by its author.
        if locked.document.as_ref().is_some_and(|d| d.current_review_id.is_none() && !is_author) {
            prop_assert_eq!(refusal, Refusal::NotFound);
            return Ok(());
        }
        let (Some(d), Some(r)) = (locked.document.as_ref(), locked.review.as_ref()) else {
            if locked.document.is_none() || deciding {
                prop_assert_eq!(refusal, Refusal::NotFound);
            } else if withdrawing && is_author {
                // A draft (never submitted, or withdrawn) is an invalid state to its author.
                let pending = locked.document.as_ref().map(|d| d.status) == Some(DocumentStatus::PendingReview);
                prop_assert!(matches!(refusal, Refusal::InvalidState(_) | Refusal::StaleFence) || (pending && refusal == Refusal::NotFound), "{:?}", refusal);
            } else {
                prop_assert!(matches!(refusal, Refusal::Forbidden(_) | Refusal::InvalidState(_) | Refusal::StaleFence | Refusal::NotFound));
            }
            return Ok(());
        };
        if deciding {
            prop_assert_eq!(refusal, first_vote_refusal(d, r, is_author, guard));
        } else if !is_author && archiving {
            prop_assert!(matches!(refusal, Refusal::Forbidden(_)), "{:?}", refusal);
        } else if refusal == Refusal::StaleFence {
            let mine = guard.fence_of(LockScope::Document);
            prop_assert!(matches!((d.fence_token, mine), (Some(s), Some(m)) if m < s));
        }
    }
}

/// The refusal of a vote on `r` (no votes, no claims, one open stage), by the documented
/// order: a stale token of the review's own lock, self-review, then the state (review not
/// pending, document not pending, not the current review).
fn first_vote_refusal(d: &Document, r: &Review, is_author: bool, guard: Guard) -> Refusal {
    let mine = guard.fence_of(LockScope::Review);
    if matches!((r.fence_token, mine), (Some(s), Some(m)) if m < s) {
        Refusal::StaleFence
    } else if is_author {
        Refusal::SelfReview
    } else if r.status != ReviewStatus::Pending {
        Refusal::ReviewNotPending(r.status)
    } else if let Err(e) = d.status.apply(Action::Approve) {
        Refusal::InvalidState(e)
    } else {
        assert_ne!(
            d.current_review_id,
            Some(r.id),
            "nothing else refuses this vote"
        );
        Refusal::NotCurrentReview
    }
}
