use chrono::Utc;

use super::*;
use crate::domain::test_support::{doc, user};
use crate::domain::{Access, DocumentStatus, TokenRoles};

fn lease(holder: &str, token: &str, live: bool) -> EditLease {
    EditLease {
        holder: Some(holder.into()),
        token: live.then(|| token.into()),
        expires_at: Utc::now(),
        live,
        retry_after_secs: 42,
    }
}

#[test]
fn a_live_lease_keeps_everyone_else_out() {
    let held = lease("alice", "t1", true);
    match check_lease(Some(&held), "bob", None) {
        Err(Refusal::DocumentLeased {
            holder,
            retry_after_secs,
            ..
        }) => assert_eq!((holder.as_str(), retry_after_secs), ("alice", 42)),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        check_lease(Some(&held), "alice", None),
        Ok(()),
        "the holder"
    );
    assert_eq!(check_lease(Some(&held), "alice", Some("t1")), Ok(()));
    assert_eq!(
        check_lease(Some(&held), "bob", Some("t1")),
        Ok(()),
        "the token is the key"
    );
}

#[test]
fn a_token_whose_lease_ended_or_moved_on_is_lost() {
    let expired = lease("alice", "t1", false);
    assert_eq!(
        check_lease(Some(&expired), "alice", Some("t1")),
        Err(Refusal::LeaseLost)
    );
    assert_eq!(
        check_lease(Some(&expired), "bob", None),
        Ok(()),
        "nobody holds it"
    );
    let next = lease("bob", "t2", true);
    assert_eq!(
        check_lease(Some(&next), "alice", Some("t1")),
        Err(Refusal::LeaseLost)
    );
    assert_eq!(
        check_lease(None, "alice", Some("t1")),
        Err(Refusal::LeaseLost)
    );
    assert_eq!(check_lease(None, "alice", None), Ok(()));
}

#[test]
fn only_an_admin_of_the_space_breaks_a_lease_and_it_is_announced() {
    let mut d = doc(DocumentStatus::Draft, None);
    d.current_review_id = Some(uuid::Uuid::now_v7());
    let carol = user("carol");
    let refused = plan_lease_break(&d, (&carol).into(), "alice");
    assert!(matches!(refused, Err(Refusal::Forbidden(_))), "{refused:?}");
    let admin = Access::new(
        TokenRoles {
            admin: true,
            ..Default::default()
        },
        [],
    );
    let reader = Reader {
        id: &carol,
        access: &admin,
    };
    let plan = plan_lease_break(&d, reader, "alice").unwrap();
    assert_eq!(plan.audit.action, "break_lease");
    assert_eq!(plan.audit.version, d.version, "no new version");
    assert_eq!(plan.outbox.routing_key(), Some("document.lease_broken"));
}
