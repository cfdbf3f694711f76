//! Unit tests of [`plan_vote`] in stages and of the claim rules; the properties over random
//! policies and operations are in `votes_props.rs`.

use chrono::{DateTime, Duration, Utc};

use super::*;
use crate::domain::claims::{plan_claim, plan_end_claim, plan_give_back, plan_overdue};
use crate::domain::claims::{ClaimChange, ClaimPlan};
use crate::domain::inputs::RejectReason;
use crate::domain::model::{Claim, Vote};
use crate::domain::rules::ReviewWrite;
use crate::domain::state::{DocumentStatus, ReviewStatus};
use crate::domain::test_support::{pending_review, stage, t0, user};
use crate::domain::EventType;

mod props;

fn approve() -> Decision {
    Decision::Approve(None)
}

fn reject() -> Decision {
    Decision::Reject(RejectReason::parse("needs work").unwrap())
}

/// `who` (in `groups`) votes on `r` at [`t0`] under the row lock alone.
fn vote(d: &Document, r: &Review, who: &str, groups: &[&str], decision: Decision) -> Plan {
    try_vote(d, r, who, groups, decision).unwrap()
}

fn try_vote(
    d: &Document,
    r: &Review,
    who: &str,
    groups: &[&str],
    decision: Decision,
) -> Result<Plan, Refusal> {
    let groups: Vec<String> = groups.iter().map(|g| g.to_string()).collect();
    let id = user(who);
    let voter = Voter {
        id: &id,
        groups: &groups,
    };
    plan_vote(d, r, voter, decision, Guard::RowLockOnly, t0())
}

fn cast(r: &mut Review, who: &str, stage: i32, kind: VoteKind) {
    r.votes.push(Vote {
        voter_id: who.into(),
        stage,
        kind,
        comment: None,
        at: t0(),
    });
}

fn hold(r: &mut Review, who: &str, expires_at: DateTime<Utc>) {
    r.claims.push(Claim {
        reviewer_id: who.into(),
        stage: r.stage,
        claimed_at: t0() - Duration::seconds(60),
        expires_at,
    });
}

fn write(p: &Plan) -> &ReviewWrite {
    match &p.review {
        Some(ReviewChange::Write(w)) => w,
        other => panic!("a review write: {other:?}"),
    }
}

fn secs(n: i64) -> Duration {
    Duration::seconds(n)
}

#[test]
fn the_first_of_two_approvals_is_recorded() {
    let (d, r) = pending_review(vec![stage("tech", 2, &[])]);
    let p = vote(&d, &r, "bob", &[], approve());
    assert_eq!(p.document, None, "the document stays as it is");
    assert_eq!(p.outbox.event, EventType::ApprovalRecorded);
    let EventData::ApprovalRecorded {
        approvals,
        required_approvals,
        ref approved_by,
        ..
    } = p.outbox.data
    else {
        panic!("{:?}", p.outbox.data)
    };
    assert_eq!((approvals, required_approvals), (1, 2));
    assert_eq!(approved_by, "bob");
    let w = write(&p);
    assert_eq!(w.vote.as_ref().map(|v| v.stage), Some(0));
    assert_eq!(w.update, None, "the review row stays as it is");
    assert!(!w.end_claims);
    assert_eq!(p.audit.action, "approval_recorded");
}

#[test]
fn the_second_approval_completes_the_stage() {
    let (d, mut r) = pending_review(vec![stage("tech", 2, &[]), stage("legal", 1, &[])]);
    cast(&mut r, "carol", 0, VoteKind::Approve);
    let p = vote(&d, &r, "bob", &[], approve());
    assert_eq!(p.document, None);
    assert_eq!(p.outbox.event, EventType::StageCompleted);
    assert!(matches!(
        &p.outbox.data,
        EventData::StageCompleted { stage: 0, next_stage: 1, next_stage_name, .. }
            if next_stage_name == "legal"
    ));
    let w = write(&p);
    let update = w.update.as_ref().unwrap();
    assert_eq!((update.status, update.stage), (ReviewStatus::Pending, 1));
    assert_eq!(update.decided_by, None);
    assert!(w.end_claims, "a completed stage ends its claims");
    assert_eq!(p.audit.action, "stage_completed");
}

#[test]
fn the_last_approval_of_the_last_stage_approves() {
    let (d, mut r) = pending_review(vec![stage("tech", 1, &[]), stage("legal", 2, &[])]);
    r.stage = 1;
    cast(&mut r, "carol", 0, VoteKind::Approve);
    cast(&mut r, "dave", 1, VoteKind::Approve);
    let p = vote(&d, &r, "bob", &[], approve());
    assert_eq!(
        p.document.as_ref().unwrap().status,
        DocumentStatus::Approved
    );
    assert_eq!(p.outbox.event, EventType::Approved);
    let update = write(&p).update.clone().unwrap();
    assert_eq!(update.status, ReviewStatus::Approved);
    assert_eq!(update.decided_by.as_deref(), Some("bob"));
}

#[test]
fn a_reject_vetoes_at_once() {
    let (d, mut r) = pending_review(vec![stage("tech", 3, &[]), stage("legal", 1, &[])]);
    cast(&mut r, "carol", 0, VoteKind::Approve);
    let p = vote(&d, &r, "bob", &[], reject());
    assert_eq!(
        p.document.as_ref().unwrap().status,
        DocumentStatus::Rejected
    );
    assert_eq!(p.outbox.event, EventType::Rejected);
    let w = write(&p);
    assert_eq!(w.update.as_ref().unwrap().status, ReviewStatus::Rejected);
    assert_eq!(
        w.update.as_ref().unwrap().reason.as_deref(),
        Some("needs work")
    );
    assert!(w.end_claims);
}

#[test]
fn a_person_votes_once_across_stages() {
    let (d, mut r) = pending_review(vec![stage("tech", 1, &[]), stage("legal", 2, &[])]);
    r.stage = 1;
    cast(&mut r, "bob", 0, VoteKind::Approve);
    for decision in [approve(), reject()] {
        assert_eq!(
            try_vote(&d, &r, "bob", &[], decision),
            Err(Refusal::AlreadyVoted)
        );
    }
}

#[test]
fn a_stage_one_vote_does_not_count_in_stage_two() {
    let (d, mut r) = pending_review(vec![stage("tech", 1, &[]), stage("legal", 2, &[])]);
    r.stage = 1;
    cast(&mut r, "carol", 0, VoteKind::Approve);
    let p = vote(&d, &r, "dave", &[], approve());
    assert_eq!(p.outbox.event, EventType::ApprovalRecorded);
    assert!(matches!(
        p.outbox.data,
        EventData::ApprovalRecorded {
            stage: 1,
            approvals: 1,
            required_approvals: 2,
            ..
        }
    ));
    assert_eq!(seats(&r), 2);
}

#[test]
fn only_the_stage_groups_are_eligible() {
    let (d, r) = pending_review(vec![stage("legal", 1, &["legal"])]);
    let refusal = try_vote(&d, &r, "bob", &["ops"], approve()).unwrap_err();
    assert_eq!(
        refusal,
        Refusal::NotEligible {
            stage: "legal".into(),
            groups: vec!["legal".into()]
        }
    );
    assert_eq!(
        refusal.to_string(),
        r#"only the legal group votes in stage "legal""#
    );
    // An admin is no one special here: without the group (its token has none), not eligible.
    assert!(matches!(
        try_vote(&d, &r, "root", &[], reject()),
        Err(Refusal::NotEligible { .. })
    ));
    assert!(try_vote(&d, &r, "bob", &["ops", "legal"], reject()).is_ok());
    let (d, r) = pending_review(vec![stage("sign-off", 1, &["legal", "security"])]);
    let refusal = try_vote(&d, &r, "bob", &[], approve()).unwrap_err();
    assert_eq!(
        refusal.to_string(),
        r#"only the legal and security groups vote in stage "sign-off""#
    );
}

#[test]
fn every_seat_held_by_others_refuses_an_approval_not_a_reject() {
    let (d, mut r) = pending_review(vec![stage("tech", 3, &[])]);
    cast(&mut r, "erin", 0, VoteKind::Approve);
    hold(&mut r, "carol", t0() + secs(600));
    hold(&mut r, "dave", t0() + secs(300));
    let refusal = try_vote(&d, &r, "bob", &[], approve()).unwrap_err();
    assert_eq!(
        refusal,
        Refusal::ReviewClaimed {
            holders: vec!["dave".into(), "carol".into()],
            until: t0() + secs(300),
            retry_after_secs: 300,
        },
        "the holders, earliest expiry first"
    );
    assert_eq!(
        refusal.to_string(),
        "dave and carol hold the 2 free seats of this stage; \
         the first is free at 2026-12-01T09:05:00Z at the latest"
    );
    assert!(
        try_vote(&d, &r, "bob", &[], reject()).is_ok(),
        "a reject needs no seat"
    );
    assert!(
        try_vote(&d, &r, "carol", &[], approve()).is_ok(),
        "a holder approves"
    );
}

#[test]
fn the_only_seat_names_its_holder_and_retries_after_at_least_a_second() {
    let (d, mut r) = pending_review(vec![stage("tech", 1, &[])]);
    hold(&mut r, "ann", t0() + Duration::milliseconds(200));
    let refusal = try_vote(&d, &r, "bob", &[], approve()).unwrap_err();
    let Refusal::ReviewClaimed {
        retry_after_secs, ..
    } = refusal
    else {
        panic!("{refusal:?}")
    };
    assert_eq!(retry_after_secs, 1);
    assert_eq!(
        refusal.to_string(),
        "ann holds the only free seat of this stage; \
         the first is free at 2026-12-01T09:00:00Z at the latest"
    );
}

#[test]
fn an_expired_claim_holds_nothing() {
    let (d, mut r) = pending_review(vec![stage("tech", 1, &[])]);
    hold(&mut r, "ann", t0());
    let p = vote(&d, &r, "bob", &[], approve());
    assert_eq!(p.outbox.event, EventType::Approved);
    // A claim from the stage before holds no seat of this one.
    let (d, mut r) = pending_review(vec![stage("tech", 1, &[]), stage("legal", 1, &[])]);
    hold(&mut r, "ann", t0() + secs(600));
    r.stage = 1;
    cast(&mut r, "carol", 0, VoteKind::Approve);
    assert!(try_vote(&d, &r, "bob", &[], approve()).is_ok());
}

fn claim(d: &Document, r: &Review, who: &str, now: DateTime<Utc>) -> Result<ClaimPlan, Refusal> {
    let id = user(who);
    let voter = Voter {
        id: &id,
        groups: &[],
    };
    plan_claim(d, r, voter, now)
}

#[test]
fn a_claim_takes_a_seat_and_a_second_renews_it() {
    let (d, mut r) = pending_review(vec![stage("tech", 2, &[])]);
    let p = claim(&d, &r, "bob", t0()).unwrap();
    let expected = Claim {
        reviewer_id: "bob".into(),
        stage: 0,
        claimed_at: t0(),
        expires_at: t0() + secs(1800),
    };
    assert_eq!(p.change, ClaimChange::Take(expected));
    assert_eq!(p.audit.unwrap().action, "claim");
    hold(&mut r, "bob", t0() + secs(10));
    let p = claim(&d, &r, "bob", t0()).unwrap();
    assert_eq!(p.audit.unwrap().action, "claim_renewed");
    let later = claim(&d, &r, "bob", t0() + secs(10)).unwrap();
    assert_eq!(
        later.audit.unwrap().action,
        "claim",
        "its claim had expired"
    );
    // One seat is left: carol takes it, and then dave finds none.
    hold(&mut r, "carol", t0() + secs(900));
    assert!(matches!(
        claim(&d, &r, "dave", t0()),
        Err(Refusal::ReviewClaimed { holders, .. }) if holders == ["bob", "carol"]
    ));
    cast(&mut r, "erin", 0, VoteKind::Approve);
    assert_eq!(claim(&d, &r, "erin", t0()), Err(Refusal::AlreadyVoted));
}

#[test]
fn giving_back_and_ending_claims() {
    let (d, mut r) = pending_review(vec![stage("tech", 2, &[])]);
    let none = plan_give_back(&d, &r, &user("bob"), t0());
    assert_eq!(none.change, ClaimChange::Nothing);
    assert_eq!(none.audit, None);
    assert_eq!(
        plan_end_claim(&d, &r, "carol", t0()),
        Err(Refusal::NoClaim("carol".into()))
    );
    hold(&mut r, "bob", t0() + secs(60));
    let back = plan_give_back(&d, &r, &user("bob"), t0());
    assert_eq!(
        back.change,
        ClaimChange::End {
            reviewer_id: "bob".into()
        }
    );
    assert_eq!(back.audit.unwrap().action, "claim_given_back");
    let ended = plan_end_claim(&d, &r, "bob", t0()).unwrap();
    assert_eq!(ended.audit.unwrap().action, "claim_ended_by_admin");
    let expired = plan_give_back(&d, &r, &user("bob"), t0() + secs(60));
    assert_eq!(
        expired.change,
        ClaimChange::Nothing,
        "an expired claim is not held"
    );
}

#[test]
fn only_a_pending_current_due_review_is_overdue() {
    let (d, mut r) = pending_review(vec![stage("tech", 1, &[])]);
    assert_eq!(plan_overdue(&d, &r, t0()), None, "no due date");
    r.due_at = Some(t0() + secs(1));
    assert_eq!(plan_overdue(&d, &r, t0()), None, "not due yet");
    let (audit, entry) = plan_overdue(&d, &r, t0() + secs(1)).unwrap();
    assert_eq!(audit.action, "overdue");
    assert_eq!(entry.event, EventType::Overdue);
    assert!(matches!(
        entry.data,
        EventData::Overdue { ref due_at, .. } if due_at == "2026-12-01T09:00:01.000Z"
    ));
    let mut stray = d.clone();
    stray.current_review_id = None;
    assert_eq!(
        plan_overdue(&stray, &r, t0() + secs(1)),
        None,
        "not current"
    );
    for status in [
        ReviewStatus::Approved,
        ReviewStatus::Rejected,
        ReviewStatus::Withdrawn,
    ] {
        let decided = Review {
            status,
            ..r.clone()
        };
        assert_eq!(
            plan_overdue(&d, &decided, t0() + secs(1)),
            None,
            "{status:?}"
        );
    }
}
