use chrono::{Duration, TimeZone};

use super::*;
use crate::domain::{Claim, Stage, Vote};

fn review(stages: Vec<Stage>, votes: Vec<Vote>, claims: Vec<Claim>) -> Review {
    let at = Utc.with_ymd_and_hms(2026, 12, 6, 13, 0, 0).unwrap();
    Review {
        id: Uuid::nil(),
        document_id: Uuid::nil(),
        status: ReviewStatus::Pending,
        document_version: 1,
        submitted_by: "alice".into(),
        submitted_at: at,
        decided_by: None,
        decided_at: None,
        comment: None,
        reason: None,
        fence_token: None,
        policy: "legal".into(),
        policy_version: 1,
        stage: 0,
        due_at: None,
        kind: Default::default(),
        reverify_after_secs: None,
        claim_ttl_secs: 1800,
        stages,
        votes,
        claims,
    }
}

fn stage(name: &str, n: u8, groups: &[&str]) -> Stage {
    Stage {
        name: name.into(),
        required_approvals: n,
        eligible_groups: groups.iter().map(|g| g.to_string()).collect(),
    }
}

fn claim(who: &str, until: DateTime<Utc>) -> Claim {
    Claim {
        reviewer_id: who.into(),
        stage: 0,
        claimed_at: until - Duration::minutes(30),
        expires_at: until,
    }
}

#[test]
fn a_held_seat_names_its_holder_and_when_it_is_free() {
    let now = Utc.with_ymd_and_hms(2026, 12, 6, 13, 40, 0).unwrap();
    let until = Utc.with_ymd_and_hms(2026, 12, 6, 14, 5, 30).unwrap();
    let one = review(
        vec![stage("review", 1, &[])],
        vec![],
        vec![claim("ann", until)],
    );
    assert_eq!(
        sentence(ErrorCode::ReviewClaimed, &one, "bob", now).as_deref(),
        Some("ann holds the only seat until 14:05 UTC.")
    );
    let later = until + Duration::minutes(10);
    let two = review(
        vec![stage("review", 2, &[])],
        vec![],
        vec![claim("cy", later), claim("ann", until)],
    );
    assert_eq!(
        sentence(ErrorCode::ReviewClaimed, &two, "bob", now).as_deref(),
        Some("ann and cy hold all 2 seats; the first is free at 14:05 UTC.")
    );
    let expired = review(
        vec![stage("review", 1, &[])],
        vec![],
        vec![claim("ann", now)],
    );
    assert_eq!(
        sentence(ErrorCode::ReviewClaimed, &expired, "bob", now),
        None
    );
}

#[test]
fn a_second_vote_and_a_stage_of_other_groups_read_as_sentences() {
    let now = Utc::now();
    let vote = Vote {
        voter_id: "bob".into(),
        stage: 0,
        kind: VoteKind::Approve,
        comment: None,
        at: now,
    };
    let r = review(vec![stage("legal", 2, &["legal"])], vec![vote], vec![]);
    assert_eq!(
        sentence(ErrorCode::AlreadyVoted, &r, "bob", now).as_deref(),
        Some("You already approved this review.")
    );
    assert_eq!(
        sentence(ErrorCode::NotEligible, &r, "dan", now).as_deref(),
        Some("Only the legal group votes in this stage.")
    );
    let r = review(
        vec![stage("sign-off", 1, &["legal", "finance"])],
        vec![],
        vec![],
    );
    assert_eq!(
        sentence(ErrorCode::NotEligible, &r, "dan", now).as_deref(),
        Some("Only the legal and finance groups vote in this stage.")
    );
    assert_eq!(sentence(ErrorCode::LockNotAcquired, &r, "dan", now), None);
}
