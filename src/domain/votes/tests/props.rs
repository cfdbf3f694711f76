//! Properties of votes and claims: random policies (1 to 4 stages of 1 to 5 approvals, some
//! restricted to a group) and random operations (votes, claims, give-backs, admin ends,
//! clock advances, a withdrawal) by six reviewers with random groups and the author. Each
//! plan is applied to the review's rows as the store writes them, and a small model keeps
//! its own account of the votes (who, in which stage) to judge each plan against.

use proptest::prelude::*;

use super::*;
use crate::domain::policy::Stage;
use crate::domain::rules::{plan, Command, Locked};
use crate::domain::test_support::AUTHOR;
use crate::domain::EventType;

const GROUPS: [&str; 2] = ["legal", "ops"];
const CLAIM_TTL_SECS: i32 = 600;

#[derive(Debug, Clone)]
enum Op {
    /// Person `who` (the last one is the author) votes.
    Vote {
        who: usize,
        approve: bool,
    },
    Claim {
        who: usize,
    },
    GiveBack {
        who: usize,
    },
    /// An admin ends `who`'s claim.
    EndClaim {
        who: usize,
    },
    Advance {
        secs: i64,
    },
    Withdraw,
}

fn any_policy() -> impl Strategy<Value = Vec<Stage>> {
    let one = (
        1u8..=5,
        prop::option::weighted(0.4, prop::sample::select(&GROUPS[..])),
    );
    prop::collection::vec(one, 1..=4).prop_map(|stages| {
        let named = stages.into_iter().enumerate();
        named
            .map(|(i, (n, g))| stage(&format!("s{i}"), n, g.as_slice()))
            .collect()
    })
}

fn any_people() -> impl Strategy<Value = Vec<Vec<String>>> {
    let groups = prop::sample::subsequence(GROUPS.map(String::from).to_vec(), 0..=2);
    prop::collection::vec(groups, 6).prop_map(|mut people| {
        people.push(vec![]); // the author
        people
    })
}

fn any_op() -> impl Strategy<Value = Op> {
    let who = 0usize..7;
    prop_oneof![
        8 => (who.clone(), prop::bool::weighted(0.9))
            .prop_map(|(who, approve)| Op::Vote { who, approve }),
        4 => who.clone().prop_map(|who| Op::Claim { who }),
        1 => who.clone().prop_map(|who| Op::GiveBack { who }),
        1 => who.prop_map(|who| Op::EndClaim { who }),
        2 => (1i64..900).prop_map(|secs| Op::Advance { secs }),
        1 => Just(Op::Withdraw),
    ]
}

/// The rows of one review as the store holds them, and the model's own account.
struct Model {
    doc: Document,
    review: Review,
    /// Each person's groups; person `i` is `r{i}`, the last is the author.
    people: Vec<Vec<String>>,
    now: DateTime<Utc>,
    /// The stage the model says is current, and every vote as (who, stage, approve).
    stage: usize,
    votes: Vec<(String, usize, bool)>,
    approved_events: usize,
}

impl Model {
    fn new(stages: Vec<Stage>, people: Vec<Vec<String>>) -> Self {
        let (doc, mut review) = pending_review(stages);
        review.claim_ttl_secs = CLAIM_TTL_SECS;
        let (now, stage, votes) = (t0(), 0, vec![]);
        Self {
            doc,
            review,
            people,
            now,
            stage,
            votes,
            approved_events: 0,
        }
    }

    fn name(&self, who: usize) -> String {
        if who + 1 == self.people.len() {
            AUTHOR.to_string()
        } else {
            format!("r{who}")
        }
    }

    fn required(&self, stage: usize) -> usize {
        self.review.stages[stage].required_approvals as usize
    }

    /// Approvals the model counts in `stage`.
    fn approvals(&self, stage: usize) -> usize {
        self.votes.iter().filter(|v| v.1 == stage && v.2).count()
    }

    fn live_claim(&self, who: &str) -> bool {
        self.review.claims.iter().any(|c| {
            c.reviewer_id == who && c.stage as usize == self.stage && c.expires_at > self.now
        })
    }

    /// Whether `who` may vote (or claim) now, by the model: pending, not the author, no vote
    /// yet, in a group of the stage.
    fn may_vote(&self, who: usize) -> bool {
        let name = self.name(who);
        let groups = &self.review.stages[self.stage].eligible_groups;
        self.review.status == ReviewStatus::Pending
            && name != AUTHOR
            && !self.votes.iter().any(|v| v.0 == name)
            && (groups.is_empty() || groups.iter().any(|g| self.people[who].contains(g)))
    }

    /// Whether a seat is free for `who`: it holds one, or others hold fewer than the stage
    /// still needs.
    fn seat_for(&self, who: &str) -> bool {
        let others = self.review.claims.iter().filter(|c| {
            c.reviewer_id != who && c.stage as usize == self.stage && c.expires_at > self.now
        });
        let needed = self.required(self.stage) - self.approvals(self.stage);
        self.live_claim(who) || others.count() < needed
    }

    /// The rows after `p`, as the store writes them.
    fn apply(&mut self, p: &Plan) {
        if let Some(d) = &p.document {
            self.doc.status = d.status;
            self.doc.version = d.version;
            self.doc.current_review_id = d.current_review_id;
        }
        let Some(ReviewChange::Write(w)) = &p.review else {
            panic!("a vote or withdrawal writes the review: {:?}", p.review)
        };
        if let Some(v) = &w.vote {
            cast(&mut self.review, &v.voter_id, v.stage, v.kind);
            self.review.claims.retain(|c| c.reviewer_id != v.voter_id);
        }
        if let Some(u) = &w.update {
            self.review.status = u.status;
            self.review.stage = u.stage;
        }
        if w.end_claims {
            self.review.claims.clear();
        }
    }

    fn end_claim(&mut self, change: ClaimChange) {
        if let ClaimChange::End { reviewer_id } = change {
            self.review.claims.retain(|c| c.reviewer_id != reviewer_id);
        }
    }

    fn run(&mut self, op: &Op) -> Result<(), TestCaseError> {
        match *op {
            Op::Vote { who, approve } => self.vote(who, approve)?,
            Op::Claim { who } => self.claim(who)?,
            Op::GiveBack { who } => {
                let name = self.name(who);
                let p = plan_give_back(&self.doc, &self.review, &user(&name), self.now);
                prop_assert_eq!(p.change != ClaimChange::Nothing, self.live_claim(&name));
                self.end_claim(p.change);
            }
            Op::EndClaim { who } => {
                let name = self.name(who);
                let p = plan_end_claim(&self.doc, &self.review, &name, self.now);
                prop_assert_eq!(p.is_ok(), self.live_claim(&name));
                if let Ok(p) = p {
                    self.end_claim(p.change);
                }
            }
            Op::Advance { secs } => self.now += Duration::seconds(secs),
            Op::Withdraw => {
                let locked = Locked {
                    document: Some(self.doc.clone()),
                    review: Some(self.review.clone()),
                    policy: None,
                    lease: None,
                    now: self.now,
                };
                let p = plan(
                    &locked,
                    &user(AUTHOR),
                    Command::Withdraw,
                    Guard::RowLockOnly,
                );
                prop_assert_eq!(p.is_ok(), self.review.status == ReviewStatus::Pending);
                if let Ok(p) = p {
                    self.apply(&p);
                }
            }
        }
        self.check_rows()
    }

    fn claim(&mut self, who: usize) -> Result<(), TestCaseError> {
        let name = self.name(who);
        let id = user(&name);
        let voter = Voter {
            id: &id,
            groups: &self.people[who],
        };
        let p = plan_claim(&self.doc, &self.review, voter, self.now);
        let expected = self.may_vote(who) && self.seat_for(&name);
        prop_assert_eq!(p.is_ok(), expected, "claim by {}: {:?}", name, p);
        if let Ok(ClaimPlan {
            change: ClaimChange::Take(c),
            ..
        }) = p
        {
            prop_assert_eq!(c.stage as usize, self.stage);
            self.review.claims.retain(|c| c.reviewer_id != name);
            self.review.claims.push(c);
        }
        Ok(())
    }

    /// A vote, judged by the model before its plan is applied.
    fn vote(&mut self, who: usize, approve: bool) -> Result<(), TestCaseError> {
        let name = self.name(who);
        let id = user(&name);
        let voter = Voter {
            id: &id,
            groups: &self.people[who],
        };
        let decision = if approve { super::approve() } else { reject() };
        let p = plan_vote(
            &self.doc,
            &self.review,
            voter,
            decision,
            Guard::RowLockOnly,
            self.now,
        );
        // Never through while every seat is held by live claims of others (a reject needs none).
        let expected = self.may_vote(who) && (!approve || self.seat_for(&name));
        prop_assert_eq!(p.is_ok(), expected, "vote by {}: {:?}", name, p);
        let Ok(p) = p else { return Ok(()) };
        let stage = self.stage;
        let count = self.approvals(stage) + 1;
        let last = stage + 1 == self.review.stages.len();
        let event = match () {
            _ if !approve => EventType::Rejected,
            _ if count < self.required(stage) => EventType::ApprovalRecorded,
            _ if last => EventType::Approved,
            _ => EventType::StageCompleted,
        };
        prop_assert_eq!(p.outbox.event, event, "{} in stage {}", name, stage);
        if let EventData::ApprovalRecorded { approvals, .. } = p.outbox.data {
            prop_assert_eq!(approvals as usize, count, "only this stage's votes count");
        }
        let planned_stage = write(&p).vote.as_ref().map(|v| v.stage as usize);
        prop_assert_eq!(planned_stage, Some(stage));
        self.votes.push((name, stage, approve));
        if event == EventType::Approved {
            self.approved_events += 1;
            for s in 0..self.review.stages.len() {
                prop_assert!(self.approvals(s) >= self.required(s), "stage {} short", s);
            }
        }
        if event == EventType::StageCompleted {
            self.stage += 1;
        }
        self.apply(&p);
        prop_assert_eq!(self.review.stage as usize, self.stage);
        Ok(())
    }

    /// What must hold of the rows after every operation.
    fn check_rows(&self) -> Result<(), TestCaseError> {
        let r = &self.review;
        if r.status == ReviewStatus::Approved || self.doc.status == DocumentStatus::Approved {
            prop_assert_eq!(
                (r.status, self.doc.status),
                (ReviewStatus::Approved, DocumentStatus::Approved)
            );
            for (i, s) in r.stages.iter().enumerate() {
                let n = r.approvals_in(i as i32);
                prop_assert!(
                    n >= s.required_approvals as usize,
                    "APPROVED with {} in stage {}",
                    n,
                    i
                );
            }
        }
        let mut voters: Vec<_> = r.votes.iter().map(|v| v.voter_id.as_str()).collect();
        voters.sort_unstable();
        voters.dedup();
        prop_assert_eq!(voters.len(), r.votes.len(), "someone voted twice");
        prop_assert!(self.approved_events <= 1, "document.approved planned twice");
        if r.status == ReviewStatus::Pending {
            let held = live_claims(r, self.now).len();
            prop_assert!(held <= seats(r), "{} claims on {} seats", held, seats(r));
        }
        Ok(())
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// However votes, claims, expiries and a withdrawal interleave, every plan is what the
    /// model expects, and the review is approved only with every stage's approvals, once.
    #[test]
    fn votes_and_claims_keep_the_policy(
        stages in any_policy(),
        people in any_people(),
        ops in prop::collection::vec(any_op(), 0..60),
    ) {
        let mut model = Model::new(stages, people);
        for op in &ops {
            model.run(op)?;
        }
    }
}
