//! The combined write (a vote's or a withdrawal's rows in one statement, what the service
//! runs) leaves the rows that the stepwise writes leave (one statement per row, as the
//! service wrote a vote before it: `support::stepwise`, written outside the service, which
//! the benchmark's floor of the old statements runs too): the same vote through each, on
//! twin reviews.

use std::time::Duration;

use serde_json::{json, Value};
use uuid::Uuid;

use crate::support::app::{spawn_app, TestApp};
use crate::support::stepwise;
use kh_review::domain::audit::AuditKey;
use kh_review::domain::{Access, Decision, Guard, RejectReason, TokenRoles, UserId};
use kh_review::store::{PgStore, WriteContext, DEV_AUDIT_KEY};

/// What a write left, with what differs by nature between twins (ids, times, hashes,
/// request ids) left out.
async fn rows_of(app: &TestApp, doc: &str, review: &str) -> Value {
    let q = |sql: String| {
        let pg = app.pg.clone();
        async move {
            let v: Option<Value> = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
                .fetch_one(&pg)
                .await
                .unwrap();
            v.unwrap_or(Value::Null)
        }
    };
    let document = q(format!(
        "SELECT to_jsonb(d) - 'id' - 'created_at' - 'updated_at' - 'audit_head' - 'current_review_id' \
                            - 'fence_token' \
           || jsonb_build_object('changed', d.updated_at > d.created_at, \
                                 'fence_of_review', d.fence_token IS NOT DISTINCT FROM \
                                     (SELECT fence_token FROM reviews WHERE id = '{review}'), \
                                 'head', d.audit_head IS NOT NULL, \
                                 'points_at_review', d.current_review_id::text = '{review}') \
         FROM documents d WHERE id = '{doc}'"
    ))
    .await;
    let review_row = q(format!(
        "SELECT to_jsonb(r) - 'id' - 'document_id' - 'submitted_at' - 'decided_at' - 'due_at' \
                            - 'queue_seq' - 'fence_token' \
           || jsonb_build_object('decided', r.decided_at IS NOT NULL) \
         FROM reviews r WHERE id = '{review}'"
    ))
    .await;
    let votes = q(format!(
        "SELECT jsonb_agg(jsonb_build_object('voter', voter_id, 'stage', stage, 'vote', vote, \
                                             'comment', comment, 'fence', fence_token) ORDER BY at) \
         FROM review_votes WHERE review_id = '{review}'"
    ))
    .await;
    let audit = q(format!(
        "SELECT jsonb_agg(jsonb_build_object('action', action, 'actor', actor_id, 'from', from_status, \
                                             'to', to_status, 'version', document_version, \
                                             'lock', lock_mode, 'seq', seq, 'hash', hash IS NOT NULL) \
                          ORDER BY seq) \
         FROM audit_log WHERE document_id = '{doc}'"
    ))
    .await;
    let events = q(format!(
        "SELECT jsonb_agg(jsonb_build_object('type', event_type, 'key', routing_key, \
                                             'version', document_version, \
                                             'data', payload -> 'data', 'actor', payload -> 'actor_id', \
                                             'at_is_updated_at', (payload ->> 'occurred_at')::timestamptz \
                                                 = (SELECT updated_at FROM documents WHERE id = '{doc}')) \
                          ORDER BY id) \
         FROM outbox WHERE document_id = '{doc}' AND event_type NOT IN ('document.created', 'document.submitted')"
    ))
    .await;
    json!({"document": document, "review": review_row, "votes": votes, "audit": audit, "events": events})
}

/// How a vote is written: by the service's store (the combined write), or by the stepwise
/// reference.
#[derive(Clone, Copy)]
enum Writes {
    Combined,
    Stepwise,
}

/// Runs `decision` by `voter` on `review`, written as `writes` says, committed; the audit
/// row linked with the key the app links with (the development key).
async fn vote(app: &TestApp, writes: Writes, review: &str, voter: &str, decision: Decision) {
    let actor = UserId::parse(voter).unwrap();
    let request_id = Uuid::now_v7().to_string();
    let reviewer = Access::new(
        TokenRoles {
            reviewer: true,
            ..Default::default()
        },
        [],
    );
    let ctx = WriteContext {
        actor: &actor,
        access: &reviewer,
        request_id: &request_id,
        guard: Guard::RowLockOnly,
        own_outbox_for: None, // the app's dispatcher delivers them
        conditions: Default::default(),
    };
    let review = Uuid::parse_str(review).unwrap();
    match writes {
        Writes::Combined => {
            let store = PgStore::new(app.pg.clone(), Duration::from_secs(10));
            let uncommitted = store
                .write_vote(review, decision, Vec::new(), &ctx)
                .await
                .unwrap();
            uncommitted.commit().await.unwrap();
        }
        Writes::Stepwise => {
            let key = AuditKey::new(DEV_AUDIT_KEY.as_bytes());
            let (doc, owned) = stepwise::vote(&app.pg, &key, review, decision, &ctx)
                .await
                .unwrap();
            assert!(owned.is_none(), "{doc:?}: no outbox row was asked for");
        }
    }
}

/// A voter and what they decide.
type Votes<'a> = &'a [(&'a str, fn() -> Decision)];

/// The same votes on twin reviews under `policy`, one through each kind of write; the rows
/// they leave must be the same, and each document's audit chain must verify.
async fn twins_agree(app: &TestApp, policy: &str, votes: Votes<'_>) {
    let stepwise = app.pending_under(policy).await;
    let combined = app.pending_under(policy).await;
    for (voter, decision) in votes {
        vote(app, Writes::Stepwise, &stepwise.1, voter, decision()).await;
        vote(app, Writes::Combined, &combined.1, voter, decision()).await;
        let a = rows_of(app, &stepwise.0, &stepwise.1).await;
        let b = rows_of(app, &combined.0, &combined.1).await;
        assert_eq!(a, b, "after {voter}'s vote under {policy}");
    }
    let admin = app.admin();
    for (doc, _) in [&stepwise, &combined] {
        let r = app
            .get(
                &format!("/api/v1/admin/audit/verify?document_id={doc}"),
                &admin,
            )
            .await;
        let status = r.status();
        let body: Value = r.json().await.unwrap();
        assert_eq!(status, reqwest::StatusCode::OK, "{body}");
        assert!(body.get("broken_at").is_none(), "{body}");
        assert!(body["checked"].as_i64() >= Some(3), "{body}");
    }
}

fn approve() -> Decision {
    Decision::Approve(None)
}

fn reject() -> Decision {
    Decision::Reject(RejectReason::parse("needs a source").unwrap())
}

#[tokio::test]
async fn the_combined_write_leaves_the_rows_of_the_stepwise_writes() {
    let app = spawn_app().await;
    twins_agree(&app, "default", &[("rita", approve)]).await;
    twins_agree(&app, "default", &[("rita", reject)]).await;
    app.n_of_m("two", 2).await;
    // A vote that only records, then the one that decides.
    twins_agree(&app, "two", &[("rita", approve), ("ravi", approve)]).await;
    twins_agree(&app, "two", &[("rita", approve), ("ravi", reject)]).await;
    app.finish().await;
}
